package herald

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/callback"
)

// Status callback events, the values of CallbackSubscription.Events and of
// a callback's "event" field.
const (
	// CallbackPublished: the route's channel or provider accepted it.
	CallbackPublished = callback.EventPublished
	// CallbackDelivered: a delivery receipt says it arrived.
	CallbackDelivered = callback.EventDelivered
	// CallbackUndelivered: a delivery receipt says it did not arrive.
	CallbackUndelivered = callback.EventUndelivered
	// CallbackDeadLettered: herald gave up on the route.
	CallbackDeadLettered = callback.EventDeadLettered
	// CallbackSkipped: no address, or the user opted out.
	CallbackSkipped = callback.EventSkipped
	// CallbackCanceled: the route was canceled before delivery.
	CallbackCanceled = callback.EventCanceled
	// CallbackExpired: the intent expired before delivery, or a receipt
	// says the message expired at the provider.
	CallbackExpired = callback.EventExpired
)

// CallbackSubscription is a producer's subscription to the status
// callbacks of its notifications' routes: herald POSTs one callback per
// route and event to URL (or to an intent's CallbackURL), through its own
// engine: durable, retried, dead-lettered and replayable. The receipts
// guide's "Status callbacks" section (herald help receipts) gives the payload.
type CallbackSubscription struct {
	// URL receives the callbacks: an absolute http or https URL without
	// userinfo, at most 2048 bytes. Required.
	URL string
	// Events lists the events wanted (CallbackPublished, ...); empty means
	// all.
	Events []string
	// Secret signs every callback per Standard Webhooks (webhook-id,
	// webhook-timestamp, webhook-signature): "whsec_" and the standard
	// base64 of a key of at least 16 bytes. Give Secret or BearerToken,
	// not both.
	Secret string
	// BearerToken is sent as "Authorization: Bearer <token>" instead of a
	// signature: 16 to 4096 printable ASCII characters.
	BearerToken string
}

// SetCallbackSubscription creates or replaces the connecting producer's
// callback subscription (it belongs to the database login, as its
// notifications do). Routes accepted from then on are watched; routes
// accepted before are not. It returns a *ValidationError (code
// invalid_field) naming what the database refused, and an error matching
// ErrForbidden for a login that is not a producer's.
func (c *Client) SetCallbackSubscription(ctx context.Context, s CallbackSubscription) error {
	err := callback.SetSubscription(ctx, c.pool, callback.Subscription{URL: s.URL, Events: s.Events,
		Secret: s.Secret, BearerToken: s.BearerToken})
	if err != nil {
		return fmt.Errorf("set callback subscription: %w", invalidParameter(forbidden(err)))
	}
	return nil
}

// DeleteCallbackSubscription removes the connecting producer's callback
// subscription and reports whether there was one. Callbacks created
// before are still delivered; ones that still need the subscription's
// secret to be signed are dead-lettered with a hint.
func (c *Client) DeleteCallbackSubscription(ctx context.Context) (bool, error) {
	deleted, err := callback.DeleteSubscription(ctx, c.pool)
	if err != nil {
		return false, fmt.Errorf("delete callback subscription: %w", forbidden(err))
	}
	return deleted, nil
}

// invalidParameter maps the invalid_parameter_value that herald's
// functions raise for a bad argument (and a CHECK violation) to a
// *ValidationError carrying the database's message.
func invalidParameter(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == pgerrcode.InvalidParameterValue || pgErr.Code == pgerrcode.CheckViolation) {
		return &ValidationError{Errors: []FieldError{{Code: CodeInvalidField, Message: pgErr.Message}}}
	}
	return err
}
