package herald

import (
	"time"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// Receipt is what Submit returns for an accepted intent.
type Receipt struct {
	// NotificationID is the notification's id, a UUIDv7 in text form. For a
	// duplicate it is the original notification's id.
	NotificationID string
	// Duplicate reports that the (producer, idempotency key) was accepted
	// before with the same request: nothing new was stored, and the other
	// fields describe the original notification.
	Duplicate bool
	// AcceptedAt is when the notification was accepted.
	AcceptedAt time.Time
	// RouteIDs are the ids of its routes, one per (channel, recipient),
	// sorted by channel and recipient; their count is the fan-out.
	RouteIDs []string

	// Held reports that a review rule of the content blocklist matched the
	// intent: it is not refused, but not accepted either. The client hands
	// it to the engine through the SQL intake; the engine checks it again
	// and keeps it in herald.held_intents until an operator releases it
	// (it is then accepted through the SQL door, its idempotency key
	// intact) or rejects it (recorded in malformed_intents as
	// content_blocked). NotificationID, AcceptedAt and RouteIDs are empty
	// then.
	Held bool
	// HeldID is the held entry's id (herald.held_intents.id) when known:
	// 0 from Submit and SubmitTx, since the engine holds the intent after
	// the submit returns (or commits).
	HeldID int64
	// HeldRule names the rule that matched.
	HeldRule string
}

// SubmitResult is SubmitMany's result for one intent: a Receipt, or the
// reason it was refused (a *ValidationError or a *ConflictError).
type SubmitResult struct {
	// Receipt is set when the intent was accepted or was a duplicate.
	Receipt *Receipt
	// Err is set when the intent was refused; Receipt is nil then.
	Err error
}

// Notification is an accepted intent with the state of each of its routes,
// as Client.Get returns it: its ID, Type, Producer, IdempotencyKey,
// AudienceKind, UserIDs, Channels, Priority, Content (or Template and
// Data), RequestID, TraceID, times, Campaign, Metadata and Routes; `go doc
// github.com/heraldhq/herald/internal/heraldtype.Notification` gives each
// field.
type Notification = heraldtype.Notification

// Route is one (channel, recipient) delivery of a notification: its
// state, attempts, last error, providers and delivery status; its method
// Provider returns the provider that took its last attempt.
type Route = heraldtype.Route

// CancelResult is what Client.Cancel did.
type CancelResult struct {
	// NotificationID is the canceled notification.
	NotificationID string
	// Canceled are the routes Cancel moved to canceled: those not yet in a
	// terminal state. Empty if every route was terminal already.
	Canceled []CanceledRoute
}

// CanceledRoute is one route Cancel canceled.
type CanceledRoute struct {
	// RouteID is the route's id.
	RouteID string
	// Channel is the route's delivery channel.
	Channel Channel
}

// Recipient is one user's entry in the recipient directory, which routes
// addressed to a user id resolve through at delivery time: its UserID
// (required), Email, Phone, WebhookURL, Locale and the channels, by name,
// it OptedOut of. Empty addresses mean the user has none for that channel
// (the route is skipped). Client.UpsertRecipient states the rules each
// field is validated with.
type Recipient = heraldtype.Recipient

// CancelOpts are Client.Cancel's optional arguments.
type CancelOpts struct {
	// Actor is who cancels, for the audit log; "" means Config.Actor.
	Actor string
	// Reason is why, for the audit log.
	Reason string
}
