package dispatch

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
)

// userRefPrefix marks a recipient_ref resolved through herald.recipients.
const userRefPrefix = "user:"

// resolve turns claimed rows into jobs: the effective attempt budget, the
// channel's content, and the address from the recipient directory for
// "user:<id>" routes (one lookup for the whole batch).
func (l *channelLoop) resolve(ctx context.Context, claimed []store.RouteClaimDueRow) ([]job, error) {
	return l.resolveIn(ctx, l.d.pool, claimed)
}

// resolveIn is resolve on db: the pool, or claimRouted's transaction.
func (l *channelLoop) resolveIn(ctx context.Context, db store.DBTX, claimed []store.RouteClaimDueRow) ([]job, error) {
	// A user id is looked up in its notification's producer's directory,
	// then in the shared one: user "42" of one producer is not another's.
	var lookup store.RecipientGetManyParams
	for _, r := range claimed {
		if id, ok := strings.CutPrefix(r.RecipientRef, userRefPrefix); ok {
			lookup.Producers = append(lookup.Producers, r.Producer)
			lookup.UserIds = append(lookup.UserIds, id)
		}
	}
	type userKey struct{ producer, id string }
	users := map[userKey]store.RecipientGetManyRow{}
	if len(lookup.UserIds) > 0 {
		rows, err := l.d.q.RecipientGetMany(ctx, db, lookup)
		if err != nil {
			return nil, fmt.Errorf("look up recipients: %w", err)
		}
		for _, u := range rows {
			users[userKey{u.Producer, u.UserID}] = u
		}
	}
	jobs := make([]job, len(claimed))
	for i, r := range claimed {
		j := &jobs[i]
		j.row = r
		j.maxAtt = r.MaxAttempts
		if j.maxAtt <= 0 {
			j.maxAtt = int32(l.cfg.MaxAttempts)
		}
		switch {
		case r.Expired:
			j.outcome = l.settle(j, "dead_letter", ClassExpired, "the intent expired before the route could be delivered",
				"nothing to do unless the notification still matters: then submit a new intent with a later expires_at")
			continue
		case r.AttemptCount > j.maxAtt:
			j.outcome = l.settle(j, "dead_letter", ClassAttemptsExhausted,
				fmt.Sprintf("claimed %d times without a completed attempt (budget %d): its dispatchers stopped before finishing", r.AttemptCount, j.maxAtt),
				"check why herald serve processes died or stalled on this route (logs, OOM kills), then replay it with `herald dead-letters replay`")
			continue
		}
		address := r.RecipientRef
		if id, ok := strings.CutPrefix(r.RecipientRef, userRefPrefix); ok {
			u, found := users[userKey{r.Producer, id}]
			if !found {
				j.outcome = l.settle(j, "skipped", ClassUnknownRecipient, "user is not in the recipient directory", "")
				continue
			}
			j.locale = u.Locale
			for _, ch := range u.OptedOut {
				if ch == l.name {
					j.outcome = l.settle(j, "skipped", ClassOptedOut, "user opted out of "+l.name, "")
					break
				}
			}
			if j.outcome != nil {
				continue
			}
			switch l.name {
			case channel.Email:
				address = u.Email
			case channel.SMS:
				address = u.Phone
			case channel.Webhook:
				address = u.WebhookUrl
			default:
				address = ""
			}
			if address == "" {
				no := channel.NoAddress(l.name)
				j.outcome = l.settle(j, "skipped", no.Classification, no.Message, "")
				continue
			}
		}
		if l.name == channel.Email {
			j.email = address
		}
		body := contentFor(r.PayloadJson, l.name)
		if body == nil && isTemplated(r.PayloadJson) {
			// Only a templated notification pays for rendering: an intent
			// with content has its channel's entry, found above.
			var err error
			if body, err = l.render(ctx, db, j); err != nil {
				return nil, err
			}
			if j.outcome != nil {
				continue
			}
		}
		j.msg = channel.Message{
			NotificationID:   r.NotificationID,
			RouteID:          r.RouteID,
			NotificationType: r.NotificationType,
			Attempt:          int(r.AttemptCount),
			Address:          address,
			Locale:           j.locale,
			Content:          body,
			TraceID:          r.TraceID,
			RequestID:        r.RequestID,
			AcceptedAt:       r.AcceptedAt,
		}
	}
	return jobs, nil
}
