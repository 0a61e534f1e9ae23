package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// RecipientRoute is one route to the recipient searched for, with its
// notification's producer and type: a line of `herald find -recipient`.
type RecipientRoute struct {
	NotificationID   string `json:"notification_id"`
	RouteID          string `json:"route_id"`
	Producer         string `json:"producer"`
	NotificationType string `json:"type"`
	Channel          string `json:"channel"`
	// RecipientRef is as stored: the normalized address, or "user:<id>".
	RecipientRef   string    `json:"recipient_ref"`
	Status         string    `json:"status"`
	Attempts       int       `json:"attempts"`
	MaxAttempts    int       `json:"max_attempts"`
	DeliveryStatus string    `json:"delivery_status,omitempty"`
	AcceptedAt     time.Time `json:"accepted_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// RecipientDeadLetter is one dead letter of the recipient searched for.
type RecipientDeadLetter struct {
	NotificationID   string    `json:"notification_id"`
	RouteID          string    `json:"route_id"`
	Producer         string    `json:"producer"`
	NotificationType string    `json:"type"`
	Channel          string    `json:"channel"`
	RecipientRef     string    `json:"recipient_ref"`
	Classification   string    `json:"classification"`
	Message          string    `json:"message"`
	Provider         string    `json:"provider,omitempty"`
	DeadLetteredAt   time.Time `json:"dead_lettered_at"`
}

// RecipientSearch is what FindByRecipient found: the newest routes to the
// recipient (at most the limit asked for, newest first) and its newest
// dead letters (as many at most). Next is the cursor of older routes,
// empty when there are none; MoreDeadLetters says the recipient has more
// dead letters than those shown.
type RecipientSearch struct {
	// Query is what was searched for, as typed; Refs are the recipient
	// refs it stands for (intake.RecipientRefs), the ones looked up.
	Query           string                `json:"query"`
	Refs            []string              `json:"recipient_refs"`
	Routes          []RecipientRoute      `json:"routes"`
	Next            string                `json:"next,omitempty"`
	DeadLetters     []RecipientDeadLetter `json:"dead_letters"`
	MoreDeadLetters bool                  `json:"more_dead_letters,omitempty"`
}

// ErrBadRecipient is returned by FindByRecipient for a blank recipient.
var ErrBadRecipient = errors.New("no recipient given")

// endOfTime sorts after every route's created_at: the cursor of the
// first page.
var endOfTime = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// FindByRecipient returns the newest routes (at most limit, 0:
// DefaultPageSize, newest first, starting after the cursor after, empty
// for the newest) whose recipient is what an operator typed: a phone
// number (E.164 or as typed), an e-mail address, a webhook URL, a user id
// or a stored ref "user:<id>" (intake.RecipientRefs says what each stands
// for); and the recipient's newest dead letters (as many at most). Each
// ref is read along an index on (recipient_ref, created_at), in a
// statement planned for that ref (see RouteListByRecipient), so a page
// costs about the same however many routes the recipient has. A
// producer's login finds its own notifications only. It returns
// ErrBadCursor for a cursor it did not hand out and ErrBadRecipient for
// blank input; finding nothing is not an error.
func (o *Operator) FindByRecipient(ctx context.Context, recipient string, limit int, after string) (*RecipientSearch, error) {
	refs := intake.RecipientRefs(recipient)
	if len(refs) == 0 {
		return nil, ErrBadRecipient
	}
	c, err := decodeCursor(after)
	if err != nil {
		return nil, err
	}
	n := int(pageSize(limit))
	db := plannedEachTime{o.pool}
	var rows []store.RouteListByRecipientRow
	var dls []store.DeadLetterListByRecipientRow
	for _, ref := range refs {
		p := store.RouteListByRecipientParams{RecipientRef: ref, BeforeAt: endOfTime, Max: int32(n + 1)}
		if c != nil {
			p.BeforeAt, p.BeforeNotificationID, p.BeforeRouteID = c.At, c.ID, c.Sub
		}
		rs, err := o.q.RouteListByRecipient(ctx, db, p)
		if err != nil {
			return nil, fmt.Errorf("routes to %s: %w", ref, err)
		}
		rows = append(rows, rs...)
		ds, err := o.q.DeadLetterListByRecipient(ctx, db, store.DeadLetterListByRecipientParams{RecipientRef: ref, Max: int32(n + 1)})
		if err != nil {
			return nil, fmt.Errorf("dead letters of %s: %w", ref, err)
		}
		dls = append(dls, ds...)
	}
	// Each ref's rows are newest first; together, sorted on the same key.
	slices.SortFunc(rows, func(a, b store.RouteListByRecipientRow) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.NotificationID, a.NotificationID), cmp.Compare(b.RouteID, a.RouteID))
	})
	slices.SortFunc(dls, func(a, b store.DeadLetterListByRecipientRow) int {
		return cmp.Or(b.DeadLetteredAt.Compare(a.DeadLetteredAt), cmp.Compare(b.NotificationID, a.NotificationID), cmp.Compare(b.RouteID, a.RouteID))
	})
	out := &RecipientSearch{Query: recipient, Refs: refs, Routes: []RecipientRoute{}, DeadLetters: []RecipientDeadLetter{}}
	for i, r := range rows {
		if i == n {
			last := rows[i-1]
			out.Next = cursor{At: last.CreatedAt, ID: last.NotificationID, Sub: last.RouteID}.encode()
			break
		}
		rt := RecipientRoute{
			NotificationID: r.NotificationID, RouteID: r.RouteID, Producer: r.Producer,
			NotificationType: r.NotificationType, Channel: r.Channel, RecipientRef: r.RecipientRef,
			Status: r.Status, Attempts: int(r.AttemptCount), MaxAttempts: int(r.MaxAttempts),
			AcceptedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		}
		if r.DeliveryStatus != nil {
			rt.DeliveryStatus = *r.DeliveryStatus
		}
		out.Routes = append(out.Routes, rt)
	}
	for i, d := range dls {
		if i == n {
			out.MoreDeadLetters = true
			break
		}
		out.DeadLetters = append(out.DeadLetters, RecipientDeadLetter{
			NotificationID: d.NotificationID, RouteID: d.RouteID, Producer: d.Producer,
			NotificationType: d.NotificationType, Channel: d.Channel, RecipientRef: d.RecipientRef,
			Classification: d.Classification, Message: d.Message, Provider: d.Provider,
			DeadLetteredAt: d.DeadLetteredAt,
		})
	}
	return out, nil
}

// plannedEachTime runs each query as an unnamed statement (pgx's
// QueryExecModeCacheDescribe), which Postgres plans with its arguments
// every time, never with a generic plan of a prepared statement: a
// generic plan of RouteListByRecipient cannot tell a recipient of
// millions of routes from one of ten, and sorts them all.
type plannedEachTime struct{ store.DBTX }

func (p plannedEachTime) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return p.DBTX.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}
