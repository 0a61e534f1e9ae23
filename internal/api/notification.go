package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/store"
)

// Route is one route of a notification as GET answers it. It may gain
// fields (a receipt's delivery status, say): clients ignore those they do
// not know.
type Route struct {
	ID                string     `json:"id"`
	Channel           string     `json:"channel"`
	RecipientRef      string     `json:"recipient_ref"`
	Status            string     `json:"status"`
	Attempts          int        `json:"attempts"`
	MaxAttempts       int        `json:"max_attempts"`
	Providers         []string   `json:"providers"`
	NextAttemptAt     *time.Time `json:"next_attempt_at"`
	LastErrorClass    string     `json:"last_error_class"`
	LastError         string     `json:"last_error"`
	LastErrorAt       *time.Time `json:"last_error_at"`
	SMSEncoding       string     `json:"sms_encoding"`
	SMSSegments       int        `json:"sms_segments"`
	ProviderMessageID string     `json:"provider_message_id"`
	// DeliveryStatus is the receipt's verdict after publication
	// (delivered, undelivered, expired, unknown); '' while none came.
	DeliveryStatus   string     `json:"delivery_status"`
	DeliveryStatusAt *time.Time `json:"delivery_status_at"`
	DeliveryError    string     `json:"delivery_error"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	PublishedAt      *time.Time `json:"published_at"`
	DeadLetteredAt   *time.Time `json:"dead_lettered_at"`
	SkippedAt        *time.Time `json:"skipped_at"`
	CanceledAt       *time.Time `json:"canceled_at"`
	ExpiresAt        *time.Time `json:"expires_at"`
}

// Notification is GET /v1/notifications/{id}'s answer (the Go client's
// Notification).
type Notification struct {
	ID                   string          `json:"id"`
	NotificationType     string          `json:"notification_type"`
	Producer             string          `json:"producer"`
	IdempotencyKey       string          `json:"idempotency_key"`
	AudienceKind         string          `json:"audience_kind"`
	UserIDs              []string        `json:"user_ids"`
	Channels             []string        `json:"channels"`
	Priority             string          `json:"priority"`
	Content              json.RawMessage `json:"content"`
	RequestID            string          `json:"request_id"`
	TraceID              string          `json:"trace_id"`
	OccurredAt           time.Time       `json:"occurred_at"`
	AcceptedAt           time.Time       `json:"accepted_at"`
	SendAt               *time.Time      `json:"send_at"`
	ExpiresAt            *time.Time      `json:"expires_at"`
	IdempotencyExpiresAt time.Time       `json:"idempotency_expires_at"`
	Routes               []Route         `json:"routes"`
}

// notFound maps pgx.ErrNoRows, and the no_data_found herald's functions
// raise for an id the caller may not see, to the 404 problem.
func notFound(err error, what string) error {
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pgErr) && pgErr.Code == "P0002" {
		p := *errNotFound
		p.Detail = "no such " + what
		return &p
	}
	return err
}

// get is GET /v1/notifications/{id}.
func (s *Server) get(w http.ResponseWriter, r *request) error {
	var n *Notification
	err := s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		id, err := pathText(r, "id")
		if err != nil {
			return err
		}
		q := store.New()
		rec, err := q.RecordGet(r.Context(), tx, id)
		if err != nil {
			return notFound(err, "notification")
		}
		routes, err := q.RouteListByNotification(r.Context(), tx, id)
		if err != nil {
			return err
		}
		n = &Notification{
			ID: rec.NotificationID, NotificationType: rec.NotificationType, Producer: rec.Producer,
			IdempotencyKey: rec.IdempotencyKey, AudienceKind: rec.AudienceKind, UserIDs: []string{},
			Channels: rec.Channels, Priority: string(heraldtype.PriorityOf(rec.Priority)), Content: json.RawMessage(rec.PayloadJson),
			RequestID: rec.RequestID, TraceID: rec.TraceID, OccurredAt: rec.OccurredAt, AcceptedAt: rec.AcceptedAt,
			SendAt: rec.SendAt, ExpiresAt: rec.ExpiresAt, IdempotencyExpiresAt: rec.IdempotencyExpiresAt,
			Routes: make([]Route, len(routes)),
		}
		if err := json.Unmarshal(rec.RecipientUserIds, &n.UserIDs); err != nil {
			return fmt.Errorf("decode recipient user ids: %w", err)
		}
		for i, rt := range routes {
			n.Routes[i] = Route{
				ID: rt.RouteID, Channel: rt.Channel, RecipientRef: rt.RecipientRef, Status: rt.Status,
				Attempts: int(rt.AttemptCount), MaxAttempts: int(rt.MaxAttempts), Providers: rt.Providers,
				NextAttemptAt: rt.DueAt(), LastErrorClass: rt.LastErrorClassification,
				LastError: rt.LastErrorMessage, LastErrorAt: rt.LastErrorAt, SMSEncoding: rt.SmsEncoding,
				SMSSegments: int(rt.SmsSegments), ProviderMessageID: rt.ProviderMessageID,
				DeliveryStatusAt: rt.DeliveryStatusAt, DeliveryError: rt.DeliveryError,
				CreatedAt: rt.CreatedAt, UpdatedAt: rt.UpdatedAt, PublishedAt: rt.PublishedAt,
				DeadLetteredAt: rt.DeadLetteredAt, SkippedAt: rt.SkippedAt, CanceledAt: rt.CanceledAt,
				ExpiresAt: rt.ExpiresAt,
			}
			if n.Routes[i].Providers == nil {
				n.Routes[i].Providers = []string{}
			}
			if rt.DeliveryStatus != nil {
				n.Routes[i].DeliveryStatus = *rt.DeliveryStatus
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}
