package accept

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/template"
)

// ErrNotFound is returned by Load when no notification has the id, or
// none the reading login may see.
var ErrNotFound = errors.New("notification not found")

// NotFound maps pgx.ErrNoRows, and the no_data_found that herald's
// functions raise for an id the caller may not see, to ErrNotFound, and
// returns any other error as it is: the one place that does.
func NotFound(err error) error {
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pgErr) && pgErr.Code == pgerrcode.NoDataFound {
		return ErrNotFound
	}
	return err
}

// Loaded is a notification as Load read it.
type Loaded struct {
	// Notification is the record and its routes, sorted by id.
	Notification heraldtype.Notification
	// Payload is the stored payload (records.payload_json) as it is: the
	// content in canonical JSON, or a templated notification's template
	// and data.
	Payload json.RawMessage
}

// Load reads notification id through db (a pool, a connection or the
// caller's transaction, whose row-level security decides what it may
// see) with every route: the one read that every door showing a
// notification uses. It returns ErrNotFound if there is no such
// notification (or the login may not see it). Route.Providers is never
// nil.
func Load(ctx context.Context, db store.DBTX, id string) (*Loaded, error) {
	q := store.New()
	rec, err := q.RecordGet(ctx, db, id)
	if err != nil {
		return nil, fmt.Errorf("get notification: %w", NotFound(err))
	}
	routes, err := q.RouteListByNotification(ctx, db, id)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	out := &Loaded{Payload: json.RawMessage(rec.PayloadJson)}
	n := &out.Notification
	*n = heraldtype.Notification{
		ID:                   rec.NotificationID,
		Type:                 rec.NotificationType,
		Producer:             rec.Producer,
		IdempotencyKey:       rec.IdempotencyKey,
		AudienceKind:         rec.AudienceKind,
		UserIDs:              []string{},
		Channels:             rec.Channels,
		Priority:             heraldtype.PriorityOf(rec.Priority),
		RequestID:            rec.RequestID,
		TraceID:              rec.TraceID,
		OccurredAt:           rec.OccurredAt,
		AcceptedAt:           rec.AcceptedAt,
		SendAt:               rec.SendAt,
		ExpiresAt:            rec.ExpiresAt,
		IdempotencyExpiresAt: rec.IdempotencyExpiresAt,
		Routes:               make([]heraldtype.Route, len(routes)),
		Campaign:             deref(rec.Campaign),
	}
	if err := json.Unmarshal(rec.RecipientUserIds, &n.UserIDs); err != nil {
		return nil, fmt.Errorf("decode recipient user ids: %w", err)
	}
	if n.Metadata, err = intake.DecodeMetadata(rec.Metadata); err != nil {
		return nil, fmt.Errorf("decode metadata: %w", err)
	}
	if err := json.Unmarshal(out.Payload, &n.Content); err != nil {
		return nil, fmt.Errorf("decode content: %w", err)
	}
	var templated struct {
		Template *heraldtype.TemplateRef `json:"template"`
		Data     json.RawMessage         `json:"data"`
	}
	if err := json.Unmarshal(out.Payload, &templated); err == nil && templated.Template != nil {
		n.Template = templated.Template
		if n.Data, err = template.DecodeData(templated.Data); err != nil {
			return nil, fmt.Errorf("decode template data: %w", err)
		}
	}
	for i, r := range routes {
		n.Routes[i] = heraldtype.Route{
			ID:                r.RouteID,
			Channel:           heraldtype.Channel(r.Channel),
			RecipientRef:      r.RecipientRef,
			Status:            heraldtype.RouteStatus(r.Status),
			Attempts:          int(r.AttemptCount),
			MaxAttempts:       int(r.MaxAttempts),
			NextAttemptAt:     r.DueAt(),
			LastErrorClass:    r.LastErrorClassification,
			LastError:         r.LastErrorMessage,
			LastErrorAt:       r.LastErrorAt,
			SMSEncoding:       r.SmsEncoding,
			SMSSegments:       int(r.SmsSegments),
			ProviderMessageID: r.ProviderMessageID,
			Providers:         r.Providers,
			DeliveryStatus:    deref(r.DeliveryStatus),
			DeliveryStatusAt:  r.DeliveryStatusAt,
			DeliveryError:     r.DeliveryError,
			CreatedAt:         r.CreatedAt,
			UpdatedAt:         r.UpdatedAt,
			PublishedAt:       r.PublishedAt,
			DeadLetteredAt:    r.DeadLetteredAt,
			SkippedAt:         r.SkippedAt,
			CanceledAt:        r.CanceledAt,
			ExpiresAt:         r.ExpiresAt,
		}
		if n.Routes[i].Providers == nil {
			n.Routes[i].Providers = []string{}
		}
	}
	return out, nil
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
