// Package campaign reads and cancels campaigns: a producer's intents
// grouped under one campaign id (heraldtype.Intent.Campaign), which
// package accept joins to their campaign when it stores them (migration
// 00020). Get and List read a campaign's progress from
// herald.campaign_progress_view; Cancel cancels every route of a campaign
// that has not gone out, batch after batch, each batch a short transaction
// of its own (herald.campaign_cancel_batch), audited, safe against
// dispatchers delivering the campaign at the same time, and resumable: a
// cancel interrupted anywhere is finished by running it again.
//
// The Go client at the module root and `herald campaigns` both call it.
// What a caller may see and cancel is the database's decision (row-level
// security and the batch function's check): a producer its own campaigns,
// an operator every one.
package campaign

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/store"
)

// ErrNotFound is returned by Get and Cancel for a campaign that does not
// exist or that the caller may not see.
var ErrNotFound = errors.New("campaign not found")

// DefaultBatchSize is how many of a campaign's notifications one cancel
// batch covers when CancelOpts.BatchSize is zero: large enough that a
// million-route campaign takes a few hundred batches, small enough that
// each batch is a transaction of tens of milliseconds.
const DefaultBatchSize = 5000

// DefaultInFlightPause is how long Cancel waits before the next batch when
// a batch canceled nothing and found only routes in flight (a dispatcher
// delivering them): their completion, not the cancel, moves them next.
const DefaultInFlightPause = 100 * time.Millisecond

// Get returns the campaign's progress, or ErrNotFound.
func Get(ctx context.Context, db store.DBTX, producer, campaign string) (*heraldtype.Campaign, error) {
	row, err := store.New().CampaignGet(ctx, db, store.CampaignGetParams{Producer: producer, Campaign: campaign})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get campaign: %w", err)
	}
	c := fromRow(row)
	return &c, nil
}

// List returns up to limit campaigns the caller may see, newest first, of
// producer only unless it is "". A limit of zero or less means 100.
func List(ctx context.Context, db store.DBTX, producer string, limit int) ([]heraldtype.Campaign, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := store.New().CampaignList(ctx, db, store.CampaignListParams{Producer: producer, MaxRows: int32(min(limit, 1<<30))})
	if err != nil {
		return nil, fmt.Errorf("list campaigns: %w", err)
	}
	out := make([]heraldtype.Campaign, 0, len(rows))
	for _, r := range rows {
		out = append(out, fromRow(r))
	}
	return out, nil
}

// fromRow converts a row of campaign_progress_view.
func fromRow(r store.HeraldCampaignProgressView) heraldtype.Campaign {
	c := heraldtype.Campaign{
		Producer: r.Producer, Campaign: r.Campaign, State: heraldtype.CampaignState(r.State),
		CreatedAt: r.CreatedAt, Notifications: r.Notifications, Routes: r.Routes, Pending: r.Pending,
		Published: r.Published, Delivered: r.Delivered, Dead: r.Dead, Canceled: r.Canceled, Skipped: r.Skipped,
		CanceledBy: deref(r.CanceledBy), CancelReason: deref(r.CancelReason),
	}
	if r.SendAt != nil {
		c.SendAt = *r.SendAt
	}
	if r.CancelRequestedAt != nil {
		c.CancelRequestedAt = *r.CancelRequestedAt
	}
	if r.CanceledAt != nil {
		c.CanceledAt = *r.CanceledAt
	}
	return c
}

// CancelOpts configures Cancel.
type CancelOpts struct {
	// Actor names who cancels, for the audit rows. Required.
	Actor string
	// Reason says why, for the audit rows.
	Reason string
	// BatchSize is how many of the campaign's notifications one batch
	// covers; zero means DefaultBatchSize.
	BatchSize int
	// InFlightPause is how long to wait when only routes in flight are
	// left; zero means DefaultInFlightPause.
	InFlightPause time.Duration
	// NowFunc, if set, gives the time each batch writes (tests); nil means
	// the database's clock.
	NowFunc func() time.Time
	// BatchFunc, if set, is called after each batch with what it did.
	BatchFunc func(Batch)
}

// Batch is what one batch of a cancel did.
type Batch struct {
	// Canceled is the routes it canceled; InFlight the routes it left to
	// the dispatchers delivering them (a later sweep cancels those that
	// come back failed); Done whether the cancel is over.
	Canceled, InFlight int64
	Done               bool
}

// CancelResult is what Cancel did.
type CancelResult struct {
	// Canceled is the routes this call canceled (a resumed cancel counts
	// only its own); Batches how many batches it ran.
	Canceled int64
	Batches  int
	// Done reports that the cancel is over: every route of the campaign is
	// final. False only with an error (Cancel stopped early).
	Done bool
}

// Cancel cancels every route of the campaign that has not gone out, batch
// after batch through db, which must not be a transaction (a pool, or a
// connection outside one): each batch is then a short transaction of its
// own, so no lock is held between batches and other campaigns' deliveries
// never wait for it. The first batch records the cancel's request: from
// then on no intent joins the campaign (accept refuses it with
// campaign_canceled). A route a dispatcher is delivering is left to finish
// (it ends published, or failed and then canceled by a later sweep), so a
// route is either delivered or canceled, never both.
//
// It returns ErrNotFound for a campaign that does not exist or that the
// caller may not cancel. An accept that joined the campaign holds its row
// until it commits, in its producer's transaction; a cancel waits for it
// about 5 s at most, then fails with an error that names the sessions
// holding it (login, pid, lock). When ctx ends, or a batch fails, it returns what
// it did so far with the error; the cancel is resumable: calling Cancel
// again goes on where it stopped. Canceling a canceled campaign changes
// nothing.
func Cancel(ctx context.Context, db store.DBTX, producer, campaign string, opts CancelOpts) (*CancelResult, error) {
	if opts.Actor == "" {
		return nil, errors.New("cancel campaign: an actor is required")
	}
	batch := cmp.Or(opts.BatchSize, DefaultBatchSize)
	if batch < 1 {
		return nil, fmt.Errorf("cancel campaign: BatchSize %d must be at least 1", opts.BatchSize)
	}
	pause := cmp.Or(opts.InFlightPause, DefaultInFlightPause)
	res := &CancelResult{}
	locked := 0 // batches in a row that gave up on the campaign's row lock
	for {
		p := store.CampaignCancelBatchParams{
			Producer: producer, Campaign: campaign, Actor: opts.Actor, Reason: opts.Reason, BatchSize: int32(batch),
		}
		if opts.NowFunc != nil {
			now := opts.NowFunc()
			p.Now = &now
		}
		row, err := store.New().CampaignCancelBatch(ctx, db, p)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.LockNotAvailable {
			// The campaign's row is held by accepts that joined it (in their
			// producers' own transactions): each batch waits for it a
			// bounded time (its lock_timeout), tried lockTries times.
			if locked++; locked < lockTries {
				continue
			}
			holders, herr := store.New().LockHolders(ctx, db, []string{"herald.campaigns"})
			if herr != nil {
				holders = "holders unknown: " + herr.Error()
			}
			return res, fmt.Errorf("cancel campaign %s: its row stayed locked for %d tries: %s: %w", campaign, locked, holders, err)
		}
		if err != nil {
			if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.NoDataFound {
				return res, ErrNotFound
			}
			return res, fmt.Errorf("cancel campaign %s: batch %d: %w", campaign, res.Batches+1, err)
		}
		locked = 0
		res.Batches++
		res.Canceled += row.Canceled
		if opts.BatchFunc != nil {
			opts.BatchFunc(Batch{Canceled: row.Canceled, InFlight: row.InFlight, Done: row.Done})
		}
		if row.Done {
			res.Done = true
			return res, nil
		}
		if row.Canceled == 0 && row.InFlight > 0 {
			select {
			case <-ctx.Done():
				return res, fmt.Errorf("cancel campaign %s: %w", campaign, ctx.Err())
			case <-time.After(pause):
			}
		}
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("cancel campaign %s: %w", campaign, err)
		}
	}
}

// lockTries is how many batches in a row Cancel lets give up on the
// campaign's row lock (each waits for it 1 s, campaign_cancel_batch's
// lock_timeout) before it fails naming who holds it.
const lockTries = 5

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
