package dispatch

import (
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/channel"
)

// Classifications the dispatcher itself gives outcomes.
const (
	// ClassExpired: the intent's expires_at passed before the route could
	// be delivered; dead-lettered without an attempt.
	ClassExpired = "expired"
	// ClassAttemptsExhausted: the route was claimed more times than its
	// budget allows without any attempt completing (its dispatchers died or
	// stalled past their leases); dead-lettered without a further attempt.
	ClassAttemptsExhausted = "attempts_exhausted"
	// ClassUnknownRecipient: a "user:<id>" route whose user is not in
	// herald.recipients; skipped.
	ClassUnknownRecipient = "unknown_recipient"
	// ClassOptedOut: the user opted out of the route's channel; skipped.
	ClassOptedOut = "opted_out"
	// ClassDelivererPanic: the channel's Deliverer panicked; dead-lettered.
	ClassDelivererPanic = "deliverer_panic"
	// ClassTemplateError: a templated notification's template version is
	// gone or no longer renders (dead_letter).
	ClassTemplateError = "template_error"
)

// settle builds the completion of a route that needs no delivery.
func (l *channelLoop) settle(j *job, status, class, msg, hint string) *completion {
	outcome := channel.Skip.String()
	switch {
	case class == ClassExpired:
		outcome = ClassExpired
	case status == "dead_letter":
		outcome = channel.Permanent.String()
	}
	var lease time.Time // set by claimRouted after its claim, with the tid, when nil here
	if j.row.LeaseUntil != nil {
		lease = *j.row.LeaseUntil
	}
	return &completion{
		channel:        l.name,
		notificationID: j.row.NotificationID,
		routeID:        j.row.RouteID,
		tid:            j.row.RouteTid,
		attempt:        j.row.AttemptCount,
		leaseUntil:     lease,
		status:         status,
		classification: class,
		message:        msg,
		hint:           hint,
		maxAttempts:    j.maxAtt,
		resolvedLocale: j.locale,
		traceID:        j.row.TraceID,
		metricOutcome:  outcome,
	}
}

// outcomeToCompletion maps a classified outcome onto the route's next
// state.
func (l *channelLoop) outcomeToCompletion(j *job, out channel.Outcome) completion {
	c := completion{
		channel:        l.name,
		notificationID: j.row.NotificationID,
		routeID:        j.row.RouteID,
		tid:            j.row.RouteTid,
		attempt:        j.row.AttemptCount,
		leaseUntil:     *j.row.LeaseUntil,
		classification: out.Classification,
		message:        out.Message,
		hint:           out.RecoveryHint,
		maxAttempts:    j.maxAtt,
		resolvedEmail:  j.email,
		resolvedLocale: j.locale,
		providerID:     out.ProviderMessageID,
		acceptedAt:     j.row.AcceptedAt,
		provider:       j.providerName(),
		receiptKey:     receiptKey(j.provider, out),
		traceID:        j.row.TraceID,
		metricOutcome:  out.Class.String(),
	}
	switch out.Class {
	case channel.Delivered:
		c.status = "published"
	case channel.Skip:
		c.status = "skipped"
	case channel.Transient:
		if j.row.AttemptCount >= j.maxAtt {
			c.status = "dead_letter"
			c.message = fmt.Sprintf("gave up after %d attempts; last: %s", j.row.AttemptCount, out.Message)
			if c.hint == "" {
				c.hint = "every attempt failed transiently (" + out.Classification + "): check that the " + l.name +
					" destination or provider is reachable and healthy, then replay with `herald dead-letters replay`"
			}
			break
		}
		c.status = "failed"
		c.delay = l.cfg.Backoff.Delay(int(j.row.AttemptCount), out.RetryAfter)
		if l.failsOver(j) {
			// Another provider of the route's rule takes the next attempt
			// at once: the backoff waits only once every one has failed.
			c.delay = out.RetryAfter
		}
	default: // Permanent, and any class a channel invents
		c.status = "dead_letter"
		if c.hint == "" {
			c.hint = "the " + l.name + " channel refused this route permanently (" + out.Classification +
				"): fix the address or content, then replay with `herald dead-letters replay`"
		}
	}
	if c.classification == "" {
		c.classification = out.Class.String()
	}
	if c.message == "" {
		c.message = out.Class.String()
	}
	return c
}

// receiptKey is what the receipts matcher finds a delivered route by: its
// provider's name and the provider's message id, for a provider that
// sends receipts; empty otherwise (the route stays out of
// routes_receipt_key_idx). A message taken in parts has a key per part,
// one per line, in part order (RouteCompleteMany splits them).
func receiptKey(pr *Provider, out channel.Outcome) string {
	if pr == nil || !pr.Receipts || out.Class != channel.Delivered || out.ProviderMessageID == "" {
		return ""
	}
	if len(out.PartMessageIDs) < 2 {
		return pr.Name + " " + oneLine(out.ProviderMessageID)
	}
	var b strings.Builder
	for i, id := range out.PartMessageIDs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(pr.Name + " " + oneLine(id))
	}
	return b.String()
}

// oneLine keeps a provider's id on one line of a receipt key.
func oneLine(id string) string { return strings.ReplaceAll(id, "\n", " ") }
