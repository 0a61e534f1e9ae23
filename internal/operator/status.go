package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Record is a notification as `herald status` shows it. The payload is left
// out (it may hold personal data); PayloadBytes says how large it is.
type Record struct {
	NotificationID       string     `json:"notification_id"`
	NotificationType     string     `json:"type"`
	Producer             string     `json:"producer"`
	AudienceKind         string     `json:"audience_kind"`
	IdempotencyKey       string     `json:"idempotency_key"`
	Channels             []string   `json:"channels"`
	Priority             int        `json:"priority"`
	RequestID            string     `json:"request_id,omitempty"`
	TraceID              string     `json:"trace_id,omitempty"`
	PayloadBytes         int        `json:"payload_bytes"`
	OccurredAt           time.Time  `json:"occurred_at"`
	AcceptedAt           time.Time  `json:"accepted_at"`
	SendAt               *time.Time `json:"send_at,omitempty"`
	ExpiresAt            *time.Time `json:"expires_at,omitempty"`
	IdempotencyExpiresAt time.Time  `json:"idempotency_expires_at"`
	// Campaign is the producer's campaign the intent joined; "" for none.
	Campaign string `json:"campaign,omitempty"`
}

// Route is one route of a notification as `herald status` shows it.
type Route struct {
	RouteID           string     `json:"route_id"`
	Channel           string     `json:"channel"`
	RecipientRef      string     `json:"recipient_ref"`
	Status            string     `json:"status"`
	Attempts          int        `json:"attempts"`
	MaxAttempts       int        `json:"max_attempts"`
	NextAttemptAt     *time.Time `json:"next_attempt_at,omitempty"`
	LastError         string     `json:"last_error,omitempty"`
	LastErrorClass    string     `json:"last_error_classification,omitempty"`
	LastErrorAt       *time.Time `json:"last_error_at,omitempty"`
	ProviderMessageID string     `json:"provider_message_id,omitempty"`
	// Providers are the providers that took its attempts, in order; empty
	// on a channel without providers.
	Providers []string `json:"providers"`
	// DeliveryStatus is the receipt's verdict after publication
	// (delivered, undelivered, expired, unknown); '' while none came.
	DeliveryStatus   string     `json:"delivery_status,omitempty"`
	DeliveryStatusAt *time.Time `json:"delivery_status_at,omitempty"`
	DeliveryError    string     `json:"delivery_error,omitempty"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

// Event is one line of a notification's timeline (herald.notification_timeline).
type Event struct {
	At      time.Time `json:"at"`
	RouteID string    `json:"route_id,omitempty"`
	Channel string    `json:"channel,omitempty"`
	Event   string    `json:"event"`
	Attempt int       `json:"attempt,omitempty"`
	Detail  string    `json:"detail,omitempty"`
}

// Callback is one status callback herald created about a route of the
// notification (the receipts guide, "Status callbacks"): a notification of its own, to
// the producer, whose route's status says whether the producer was told.
type Callback struct {
	// RouteID and Channel are the route the callback is about.
	RouteID string `json:"route_id"`
	Channel string `json:"channel"`
	// Event is what happened to it: published, delivered, undelivered,
	// dead_lettered, skipped, canceled or expired.
	Event string `json:"event"`
	// CallbackID and CallbackRouteID are the callback's own notification
	// and route (`herald status CALLBACK_ID`, `dead-letters replay`).
	CallbackID      string `json:"callback_id"`
	CallbackRouteID string `json:"callback_route_id"`
	URL             string `json:"url"`
	// Status is the callback route's: published (the producer was told),
	// failed (not yet: retrying), dead_letter (herald gave up), or pending
	// and claimed (not tried yet, in flight).
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	MaxAttempts   int        `json:"max_attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	// LastError and LastErrorClass are the callback's last failure, if any.
	LastError      string    `json:"last_error,omitempty"`
	LastErrorClass string    `json:"last_error_classification,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Status is everything known about one notification: its record, its
// routes, the status callbacks herald created about them (empty when none
// was: its producer watches none of its routes, or nothing has happened
// yet), and its timeline in order.
type Status struct {
	Record    Record     `json:"record"`
	Routes    []Route    `json:"routes"`
	Callbacks []Callback `json:"callbacks"`
	Timeline  []Event    `json:"timeline"`
}

// Status returns the notification's record, routes and timeline. It returns
// ErrNotFound when no notification has the id (retention may have deleted
// it).
func (o *Operator) Status(ctx context.Context, notificationID string) (*Status, error) {
	rec, err := o.q.RecordGet(ctx, o.pool, notificationID)
	if err != nil {
		return nil, fmt.Errorf("notification %s: %w", notificationID, notFound(err, "read record"))
	}
	routes, err := o.q.RouteListByNotification(ctx, o.pool, notificationID)
	if err != nil {
		return nil, fmt.Errorf("routes of %s: %w", notificationID, err)
	}
	callbacks, err := o.q.RecordCallbackList(ctx, o.pool, notificationID)
	if err != nil {
		return nil, fmt.Errorf("callbacks of %s: %w", notificationID, err)
	}
	events, err := o.q.RecordTimeline(ctx, o.pool, notificationID)
	if err != nil {
		return nil, fmt.Errorf("timeline of %s: %w", notificationID, err)
	}
	st := &Status{
		Record:    record(rec),
		Routes:    make([]Route, len(routes)),
		Callbacks: make([]Callback, len(callbacks)),
		Timeline:  make([]Event, len(events)),
	}
	for i, r := range routes {
		st.Routes[i] = route(r)
	}
	for i, c := range callbacks {
		st.Callbacks[i] = Callback{
			RouteID: c.RouteID, Channel: c.Channel, Event: c.Event,
			CallbackID: c.CallbackID, CallbackRouteID: c.CallbackRouteID, URL: c.Url,
			Status: c.Status, Attempts: int(c.Attempts), MaxAttempts: int(c.MaxAttempts), NextAttemptAt: c.NextAttemptAt,
			LastError: c.ErrorMessage, LastErrorClass: c.ErrorClassification,
			CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		}
	}
	for i, e := range events {
		st.Timeline[i] = Event{
			At: e.At, RouteID: e.RouteID, Channel: e.Channel,
			Event: e.Event, Attempt: int(e.Attempt), Detail: e.Detail,
		}
	}
	return st, nil
}

func record(r store.HeraldRecord) Record {
	rec := Record{
		NotificationID:       r.NotificationID,
		NotificationType:     r.NotificationType,
		Producer:             r.Producer,
		AudienceKind:         r.AudienceKind,
		IdempotencyKey:       r.IdempotencyKey,
		Channels:             r.Channels,
		Priority:             int(r.Priority),
		RequestID:            r.RequestID,
		TraceID:              r.TraceID,
		PayloadBytes:         len(r.PayloadJson),
		OccurredAt:           r.OccurredAt,
		AcceptedAt:           r.AcceptedAt,
		SendAt:               r.SendAt,
		ExpiresAt:            r.ExpiresAt,
		IdempotencyExpiresAt: r.IdempotencyExpiresAt,
	}
	if r.Campaign != nil {
		rec.Campaign = *r.Campaign
	}
	return rec
}

func route(r store.HeraldRoute) Route {
	rt := Route{
		RouteID:           r.RouteID,
		Channel:           r.Channel,
		RecipientRef:      r.RecipientRef,
		Status:            r.Status,
		Attempts:          int(r.AttemptCount),
		MaxAttempts:       int(r.MaxAttempts),
		NextAttemptAt:     r.DueAt(),
		LastError:         r.LastErrorMessage,
		LastErrorClass:    r.LastErrorClassification,
		LastErrorAt:       r.LastErrorAt,
		ProviderMessageID: r.ProviderMessageID,
		Providers:         append([]string{}, r.Providers...), // [] in JSON when none
		DeliveryStatusAt:  r.DeliveryStatusAt,
		DeliveryError:     r.DeliveryError,
		UpdatedAt:         r.UpdatedAt,
	}
	if r.DeliveryStatus != nil {
		rt.DeliveryStatus = *r.DeliveryStatus
	}
	return rt
}
