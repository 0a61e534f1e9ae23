package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/heraldtype"
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
	// Campaign is the producer's campaign the intent joined; omitted for
	// none.
	Campaign string `json:"campaign,omitempty"`
	// Template and Data are a templated notification's: its template, at
	// the version it was accepted with, and its data; omitted for a
	// notification with content.
	Template *heraldtype.TemplateRef `json:"template,omitempty"`
	Data     map[string]any          `json:"data,omitempty"`
	// Metadata is the intent's metadata; omitted when it carried none.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// notificationOf returns l as GET answers it.
func notificationOf(l *accept.Loaded) *Notification {
	ln := &l.Notification
	n := &Notification{
		ID: ln.ID, NotificationType: ln.Type, Producer: ln.Producer, IdempotencyKey: ln.IdempotencyKey,
		AudienceKind: ln.AudienceKind, UserIDs: ln.UserIDs, Channels: ln.Channels, Priority: string(ln.Priority),
		Content: l.Payload, RequestID: ln.RequestID, TraceID: ln.TraceID, OccurredAt: ln.OccurredAt,
		AcceptedAt: ln.AcceptedAt, SendAt: ln.SendAt, ExpiresAt: ln.ExpiresAt,
		IdempotencyExpiresAt: ln.IdempotencyExpiresAt, Routes: make([]Route, len(ln.Routes)),
		Campaign: ln.Campaign, Template: ln.Template, Data: ln.Data, Metadata: ln.Metadata,
	}
	for i, rt := range ln.Routes {
		n.Routes[i] = Route{
			ID: rt.ID, Channel: string(rt.Channel), RecipientRef: rt.RecipientRef, Status: string(rt.Status),
			Attempts: rt.Attempts, MaxAttempts: rt.MaxAttempts, Providers: rt.Providers,
			NextAttemptAt: rt.NextAttemptAt, LastErrorClass: rt.LastErrorClass, LastError: rt.LastError,
			LastErrorAt: rt.LastErrorAt, SMSEncoding: rt.SMSEncoding, SMSSegments: rt.SMSSegments,
			ProviderMessageID: rt.ProviderMessageID, DeliveryStatus: rt.DeliveryStatus,
			DeliveryStatusAt: rt.DeliveryStatusAt, DeliveryError: rt.DeliveryError, CreatedAt: rt.CreatedAt,
			UpdatedAt: rt.UpdatedAt, PublishedAt: rt.PublishedAt, DeadLetteredAt: rt.DeadLetteredAt,
			SkippedAt: rt.SkippedAt, CanceledAt: rt.CanceledAt, ExpiresAt: rt.ExpiresAt,
		}
	}
	return n
}

// notFound maps what accept.NotFound maps to accept.ErrNotFound (a row not
// found, or an id the caller may not see) to the 404 problem.
func notFound(err error, what string) error {
	if errors.Is(accept.NotFound(err), accept.ErrNotFound) {
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
		l, err := accept.Load(r.Context(), tx, id)
		if err != nil {
			return notFound(err, "notification")
		}
		n = notificationOf(l)
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}
