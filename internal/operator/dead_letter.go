package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// DeadLetter is one dead route: a row of herald.dead_letter_view.
// RecipientRef is as stored (a user id, or the address of a direct
// recipient).
type DeadLetter struct {
	NotificationID   string `json:"notification_id"`
	RouteID          string `json:"route_id"`
	NotificationType string `json:"type"`
	Producer         string `json:"producer"`
	RecipientRef     string `json:"recipient_ref"`
	Channel          string `json:"channel"`
	// Provider took the final attempt; "" when none did (no_route, or a
	// channel without providers).
	Provider       string    `json:"provider"`
	Attempts       int       `json:"attempts"`
	MaxAttempts    int       `json:"max_attempts"`
	Classification string    `json:"classification"`
	Message        string    `json:"message"`
	RecoveryHint   string    `json:"recovery_hint"`
	AcceptedAt     time.Time `json:"accepted_at"`
	LastFailedAt   time.Time `json:"last_failed_at"`
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
}

// DeadLetterPage is one page of dead letters, newest first. Next is the
// cursor of the following page, empty on the last one.
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
	Next        string       `json:"next,omitempty"`
}

// DeadLetters returns one page of at most limit dead letters matching f,
// newest first (limit 0: DefaultPageSize), starting after the cursor after
// (empty: from the newest). It returns ErrBadCursor for a cursor it did not
// hand out.
func (o *Operator) DeadLetters(ctx context.Context, f Filter, limit int, after string) (*DeadLetterPage, error) {
	c, err := decodeCursor(after)
	if err != nil {
		return nil, err
	}
	nids, rids := f.idArrays()
	p := store.DeadLetterListParams{
		Channel:          optText(f.Channel),
		Producer:         optText(f.Producer),
		NotificationType: optText(f.NotificationType),
		Provider:         optText(f.Provider),
		Classification:   optText(f.Classification),
		Since:            optTime(f.Since),
		Until:            optTime(f.Until),
		IdsNotification:  nids,
		IdsRoute:         rids,
		Max:              pageSize(limit),
	}
	if c != nil {
		p.AfterDeadLetteredAt = optTime(c.At)
		p.AfterNotificationID = &c.ID
		p.AfterRouteID = &c.Sub
	}
	rows, err := o.q.DeadLetterList(ctx, o.pool, p)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	page := &DeadLetterPage{DeadLetters: make([]DeadLetter, len(rows))}
	for i, r := range rows {
		page.DeadLetters[i] = deadLetter(store.DeadLetterGetRow(r))
	}
	if len(rows) == int(p.Max) {
		last := page.DeadLetters[len(rows)-1]
		page.Next = cursor{At: last.DeadLetteredAt, ID: last.NotificationID, Sub: last.RouteID}.encode()
	}
	return page, nil
}

// DeadLetter returns the dead letters of one notification, or of one of its
// routes when ref.RouteID is set. It returns ErrNotFound when there are
// none.
func (o *Operator) DeadLetter(ctx context.Context, ref RouteRef) ([]DeadLetter, error) {
	rows, err := o.q.DeadLetterGet(ctx, o.pool, store.DeadLetterGetParams{
		NotificationID: ref.NotificationID,
		RouteID:        optText(ref.RouteID),
	})
	if err != nil {
		return nil, fmt.Errorf("get dead letter %s: %w", ref, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("dead letter %s: %w", ref, ErrNotFound)
	}
	out := make([]DeadLetter, len(rows))
	for i, r := range rows {
		out[i] = deadLetter(r)
	}
	return out, nil
}

// CountDeadLetters returns how many dead letters match f.
func (o *Operator) CountDeadLetters(ctx context.Context, f Filter) (int64, error) {
	nids, rids := f.idArrays()
	n, err := o.q.DeadLetterCount(ctx, o.pool, store.DeadLetterCountParams{
		Channel:          optText(f.Channel),
		Producer:         optText(f.Producer),
		NotificationType: optText(f.NotificationType),
		Provider:         optText(f.Provider),
		Classification:   optText(f.Classification),
		Since:            optTime(f.Since),
		Until:            optTime(f.Until),
		IdsNotification:  nids,
		IdsRoute:         rids,
	})
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

func deadLetter(r store.DeadLetterGetRow) DeadLetter {
	return DeadLetter{
		NotificationID:   r.NotificationID,
		RouteID:          r.RouteID,
		NotificationType: r.NotificationType,
		Producer:         r.Producer,
		RecipientRef:     r.RecipientRef,
		Channel:          r.Channel,
		Provider:         r.Provider,
		Attempts:         int(r.Attempts),
		MaxAttempts:      int(r.MaxAttempts),
		Classification:   r.Classification,
		Message:          r.Message,
		RecoveryHint:     r.RecoveryHint,
		AcceptedAt:       r.AcceptedAt,
		LastFailedAt:     r.LastFailedAt,
		DeadLetteredAt:   r.DeadLetteredAt,
	}
}
