// Package channel is the seam between the dispatcher and the systems that
// deliver notifications: one small Deliverer interface, the outcome classes
// every channel maps its errors onto, and the message a delivery carries.
// Each channel lives in a subpackage (webhook, email, sms, logch).
package channel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DefaultTimeout bounds one delivery attempt when a channel's
// configuration gives no timeout: the dispatcher's default
// (dispatch.DefaultTimeout) and what internal/config checks a channel's
// lease against.
const DefaultTimeout = 30 * time.Second

// Class is what a delivery attempt's outcome means for the route.
type Class int

const (
	// Delivered: the channel accepted the message (HTTP 2xx, SMTP 250,
	// provider accepted). The route becomes published.
	Delivered Class = iota
	// Transient: worth retrying later (timeout, connection refused, HTTP
	// 408/429/5xx, SMTP 4xx, provider throttled). The route becomes failed
	// and is retried after a backoff, or dead-lettered once attempts run out.
	Transient
	// Permanent: retrying cannot help (HTTP 4xx other than 408/429, SMTP 5xx,
	// invalid number, 410 Gone). The route is dead-lettered at once.
	Permanent
	// Skip: there is nothing to deliver to (no address, opted out). The
	// route becomes skipped.
	Skip
)

// String returns the class name used in the database and in metrics.
func (c Class) String() string {
	switch c {
	case Delivered:
		return "delivered"
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case Skip:
		return "skip"
	default:
		return "unknown"
	}
}

// Message is one route's delivery: everything a channel needs, resolved.
type Message struct {
	// NotificationID and RouteID identify the route; together they are stable
	// across retries (the webhook channel derives webhook-id from them).
	NotificationID string
	RouteID        string
	// NotificationType is the producer's type, e.g. "order.shipped".
	NotificationType string
	// Attempt is the 1-based attempt number taken at claim.
	Attempt int
	// Address is the resolved destination for this channel: an E.164 phone
	// number for sms, an e-mail address for email, an absolute URL for webhook.
	Address string
	// Locale is the recipient's locale from the directory, if known.
	Locale string
	// Content is the intent's content for this channel, as JSON: for sms
	// {"body": ...}, for email {"subject", "text", "html"}, for webhook any
	// JSON value, sent as the request body's "data".
	Content json.RawMessage
	// TraceID and RequestID continue the producer's identifiers.
	TraceID   string
	RequestID string
	// AcceptedAt is when the intent was accepted.
	AcceptedAt time.Time
}

// Outcome is a delivery attempt's result, classified.
type Outcome struct {
	Class Class
	// Classification is a short stable token saying what happened, e.g.
	// "http_503", "smtp_550", "timeout", "invalid_destination". It lands in
	// routes.last_error_classification and dead_letters.failure_classification.
	Classification string
	// Message is a human-readable description, without secrets or full
	// addresses.
	Message string
	// RecoveryHint tells an operator what to do about a permanent failure.
	RecoveryHint string
	// RetryAfter, if positive, is the earliest the channel wants a retry
	// (HTTP Retry-After, provider throttling). The dispatcher honours it.
	RetryAfter time.Duration
	// ProviderMessageID is the provider's id for an accepted delivery.
	ProviderMessageID string
	// PartMessageIDs, for a message the provider took in several parts
	// (each with an id of its own), holds every part's id in part order;
	// ProviderMessageID is the first. Receipts for any part match the
	// route. Nil for a message of one part.
	PartMessageIDs []string
	// Throttled says a Transient outcome is the provider asking herald to
	// slow down (SMPP ESME_RTHROTTLED, HTTP 429): it is counted as
	// throttling in the provider's health, not as a failure that opens
	// its circuit.
	Throttled bool
	// Unsent says a Transient outcome reached no provider at all (an SMPP
	// provider with no bind up, a driver being closed): the attempt is
	// handed back, so waiting for the provider spends none.
	Unsent bool
}

// Deliverer delivers one message through one channel. Deliver must not panic
// on bad input, must respect ctx's deadline, and must classify every error;
// it is called concurrently from many goroutines.
type Deliverer interface {
	Deliver(ctx context.Context, msg *Message) Outcome
}

// DelivererFunc adapts a function to the Deliverer interface.
type DelivererFunc func(ctx context.Context, msg *Message) Outcome

// Deliver calls f(ctx, msg).
func (f DelivererFunc) Deliver(ctx context.Context, msg *Message) Outcome { return f(ctx, msg) }

// Names of the built-in channels.
const (
	SMS     = "sms"
	Email   = "email"
	Webhook = "webhook"
	// Callback carries herald's status callbacks to producers
	// (channel/callback). Routes on it are created by the database only,
	// never by an intent.
	Callback = "callback"
)

// Channels returns the channels an intent may list, in route order:
// email, sms and webhook (never Callback). The slice is fresh; callers may
// modify it.
func Channels() []string { return []string{Email, SMS, Webhook} }

// MaxConcurrency bounds a channel's deliveries in flight.
const MaxConcurrency = 10000

// CheckPolicy checks a channel's delivery policy: the settings serve's
// configuration file gives each channel. Its errors name them as that file
// does, so a file and a Go caller are held to the same rules with the
// same words.
func CheckPolicy(concurrency, maxAttempts int, timeout, lease, backoffBase, backoffCap time.Duration) error {
	switch {
	case concurrency < 0 || concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency: must be between 1 and %d", MaxConcurrency)
	case maxAttempts < 0:
		return errors.New("max_attempts: must be at least 1")
	case timeout < 0:
		return errors.New("timeout: must not be negative")
	case lease < 0:
		return errors.New("lease: must not be negative")
	case lease > 0 && lease <= cmp.Or(timeout, DefaultTimeout):
		return fmt.Errorf("lease: %s must exceed timeout %s", lease, cmp.Or(timeout, DefaultTimeout))
	case backoffBase < 0 || backoffCap < 0:
		return errors.New("backoff: durations must not be negative")
	case backoffCap > 0 && backoffCap < backoffBase:
		return errors.New("backoff.cap: must not be below backoff.base")
	}
	return nil
}
