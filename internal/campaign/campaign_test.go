package campaign

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

type testBundle struct {
	pool *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{pool: pgtemp.NewPool(t)}
}

// intent returns an intent of producer's campaign (none if ""), key n,
// with one webhook route and, if sms, a second route by SMS.
func intent(producer, campaign string, n int, sendAt time.Time, sms bool) *intake.Intent {
	in := &intake.Intent{
		NotificationType: "sale.started",
		Producer:         producer,
		IdempotencyKey:   fmt.Sprintf("%s-%d", campaign, n),
		Audience:         intake.Audience{Webhook: []string{fmt.Sprintf("https://hooks.example.com/%d", n)}},
		Channels:         []string{"webhook"},
		Content:          intake.Content{Webhook: []byte(`{"sale":"spring"}`)},
		SendAt:           sendAt,
		Campaign:         campaign,
		Priority:         heraldtype.PriorityBulk,
	}
	if sms {
		in.Channels = append(in.Channels, "sms")
		in.Audience.SMS = []string{"+14155550123"}
		in.Content.SMS = &intake.SMSContent{Body: "Spring sale"}
	}
	return in
}

// accept validates and accepts ins through db, requiring each to pass
// validation, and returns the outcomes.
func acceptAll(t testing.TB, db store.DBTX, ins ...*intake.Intent) []accept.Outcome {
	t.Helper()
	vs := make([]*intake.Validated, len(ins))
	for i, in := range ins {
		v, err := intake.Validate(in, intake.Limits{}, time.Now())
		require.NoError(t, err)
		vs[i] = v
	}
	out, err := accept.Accept(context.Background(), db, vs, accept.Params{})
	require.NoError(t, err)
	return out
}

// submitCampaign accepts n intents of producer's campaign, in batches of
// up to 500, each with one webhook route.
func (b *testBundle) submitCampaign(t testing.TB, producer, campaign string, n int, sendAt time.Time) {
	t.Helper()
	for lo := 0; lo < n; lo += 500 {
		var ins []*intake.Intent
		for i := lo; i < min(lo+500, n); i++ {
			ins = append(ins, intent(producer, campaign, i, sendAt, false))
		}
		for _, o := range acceptAll(t, b.pool, ins...) {
			require.Nil(t, o.Refused)
			require.False(t, o.Duplicate || o.Conflict)
		}
	}
}

// statuses counts the routes of producer's campaign by status; campaign ""
// counts the routes of records without a campaign.
func (b *testBundle) statuses(t testing.TB, producer, campaign string) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT r.status, count(*)::int FROM herald.routes r JOIN herald.records rec USING (notification_id)
		WHERE rec.producer = $1 AND coalesce(rec.campaign, '') = $2 GROUP BY r.status`, producer, campaign)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(t, rows.Err())
	return out
}

func TestCampaign_SubmitManySchedulesAsOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sendAt := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Microsecond)

	b.submitCampaign(t, "shop", "spring", 3, sendAt)
	out := acceptAll(t, b.pool, intent("shop", "spring", 3, sendAt, true))
	require.Nil(t, out[0].Refused)

	c, err := Get(ctx, b.pool, "shop", "spring")
	require.NoError(t, err)
	require.Equal(t, heraldtype.CampaignScheduled, c.State)
	require.True(t, sendAt.Equal(c.SendAt), "the campaign's send_at is its intents'")
	require.Equal(t, int64(4), c.Notifications)
	require.Equal(t, int64(5), c.Routes)
	require.Equal(t, int64(5), c.Pending)
	require.Zero(t, c.Published+c.Dead+c.Canceled+c.Delivered)

	var due int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.routes r JOIN herald.records rec USING (notification_id)
		WHERE rec.campaign = 'spring' AND r.next_attempt_at = $1`, sendAt).Scan(&due))
	require.Equal(t, 5, due, "every route waits for the campaign's send_at")

	// An intent of the campaign with another schedule is refused, naming
	// the campaign's; so is one without a schedule.
	for _, other := range []time.Time{sendAt.Add(time.Hour), {}} {
		out := acceptAll(t, b.pool, intent("shop", "spring", 99, other, false))
		require.NotNil(t, out[0].Refused)
		require.Equal(t, heraldtype.CodeInvalidField, out[0].Refused.Code())
		require.Equal(t, "send_at", out[0].Refused.Errors[0].Field)
		require.Contains(t, out[0].Refused.Error(), sendAt.Format(time.RFC3339Nano))
		require.Empty(t, out[0].NotificationID)
	}
	// The same campaign id of another producer is another campaign.
	out = acceptAll(t, b.pool, intent("news", "spring", 1, time.Time{}, false))
	require.Nil(t, out[0].Refused)
	c, err = Get(ctx, b.pool, "news", "spring")
	require.NoError(t, err)
	require.Equal(t, heraldtype.CampaignSending, c.State)
	require.True(t, c.SendAt.IsZero())
	// Once every route is final it is completed; a receipt's delivered
	// status is counted beside published.
	_, err = b.pool.Exec(ctx, `UPDATE herald.routes SET status = 'published', next_attempt_at = NULL, delivery_status = 'delivered'
		WHERE notification_id IN (SELECT notification_id FROM herald.records WHERE producer = 'news')`)
	require.NoError(t, err)
	c, err = Get(ctx, b.pool, "news", "spring")
	require.NoError(t, err)
	require.Equal(t, heraldtype.CampaignCompleted, c.State)
	require.Equal(t, int64(1), c.Published)
	require.Equal(t, int64(1), c.Delivered)
	require.Zero(t, c.Pending)

	list, err := List(ctx, b.pool, "", 0)
	require.NoError(t, err)
	require.Len(t, list, 2)
	list, err = List(ctx, b.pool, "shop", 0)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "spring", list[0].Campaign)

	_, err = Get(ctx, b.pool, "shop", "autumn")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestCancel_AuditedBatchesOfUnsentRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sendAt := time.Now().Add(time.Hour)

	b.submitCampaign(t, "shop", "spring", 23, sendAt)
	b.submitCampaign(t, "shop", "autumn", 5, sendAt)
	b.submitCampaign(t, "news", "spring", 4, sendAt)
	acceptAll(t, b.pool, intent("shop", "", 1, sendAt, false))
	// One route of the campaign went out already, one is a dead letter.
	_, err := b.pool.Exec(ctx, `
		UPDATE herald.routes SET status = CASE WHEN route_id LIKE 'webhook:%' AND notification_id = (
				SELECT min(notification_id) FROM herald.records WHERE campaign = 'spring' AND producer = 'shop')
			THEN 'published' ELSE 'dead_letter' END, next_attempt_at = NULL
		WHERE notification_id IN (SELECT notification_id FROM herald.records WHERE campaign = 'spring' AND producer = 'shop'
			ORDER BY notification_id LIMIT 2)`)
	require.NoError(t, err)

	var batches []Batch
	res, err := Cancel(ctx, b.pool, "shop", "spring", CancelOpts{
		Actor: "ops@shop", Reason: "sale postponed", BatchSize: 5,
		BatchFunc: func(x Batch) { batches = append(batches, x) },
	})
	require.NoError(t, err)
	require.True(t, res.Done)
	require.Equal(t, int64(21), res.Canceled)
	require.Equal(t, 5, res.Batches, "23 records in batches of 5")
	require.Len(t, batches, 5)

	require.Equal(t, map[string]int{"canceled": 21, "published": 1, "dead_letter": 1}, b.statuses(t, "shop", "spring"))
	require.Equal(t, map[string]int{"pending": 5}, b.statuses(t, "shop", "autumn"), "another campaign is untouched")
	require.Equal(t, map[string]int{"pending": 4}, b.statuses(t, "news", "spring"), "another producer's is untouched")
	require.Equal(t, map[string]int{"pending": 1}, b.statuses(t, "shop", ""), "an intent without a campaign is untouched")

	var rows, affected int
	var actors, logins []string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), sum(affected), array_agg(DISTINCT actor), array_agg(DISTINCT login)
		FROM herald.audit_log WHERE action = 'campaign_cancel'
			AND filter = '{"producer":"shop","campaign":"spring"}' AND reason = 'sale postponed'`).
		Scan(&rows, &affected, &actors, &logins))
	require.Equal(t, 5, rows, "one audit row per batch that canceled something")
	require.Equal(t, 21, affected, "the audit rows add up to what was canceled")
	require.Equal(t, []string{"ops@shop"}, actors)
	require.NotEmpty(t, logins[0], "the database login is stamped beside the actor")

	c, err := Get(ctx, b.pool, "shop", "spring")
	require.NoError(t, err)
	require.Equal(t, heraldtype.CampaignCanceled, c.State)
	require.Equal(t, "ops@shop", c.CanceledBy)
	require.Equal(t, "sale postponed", c.CancelReason)
	require.False(t, c.CanceledAt.IsZero())
	require.Equal(t, int64(21), c.Canceled)
	require.Equal(t, int64(1), c.Published)
	require.Equal(t, int64(1), c.Dead)
	require.Zero(t, c.Pending)

	// Again: nothing changes, no audit row.
	res, err = Cancel(ctx, b.pool, "shop", "spring", CancelOpts{Actor: "ops@shop"})
	require.NoError(t, err)
	require.True(t, res.Done)
	require.Zero(t, res.Canceled)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.audit_log WHERE action = 'campaign_cancel'`).Scan(&rows))
	require.Equal(t, 5, rows)

	// Nothing joins a canceled campaign, through the Go door's Accept.
	out := acceptAll(t, b.pool, intent("shop", "spring", 500, sendAt, false), intent("shop", "autumn", 500, sendAt, false))
	require.NotNil(t, out[0].Refused)
	require.Equal(t, heraldtype.CodeCampaignCanceled, out[0].Refused.Code())
	require.Equal(t, "campaign", out[0].Refused.Errors[0].Field)
	require.Nil(t, out[1].Refused, "the other campaign's intent in the same batch is stored")
	require.NotEmpty(t, out[1].NotificationID)
	require.Equal(t, map[string]int{"canceled": 21, "published": 1, "dead_letter": 1}, b.statuses(t, "shop", "spring"))
}

func TestCancel_RefusesUnknownAndBadOptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.submitCampaign(t, "shop", "spring", 1, time.Time{})

	_, err := Cancel(ctx, b.pool, "shop", "autumn", CancelOpts{Actor: "ops"})
	require.ErrorIs(t, err, ErrNotFound)
	_, err = Cancel(ctx, b.pool, "news", "spring", CancelOpts{Actor: "ops"})
	require.ErrorIs(t, err, ErrNotFound)
	_, err = Cancel(ctx, b.pool, "shop", "spring", CancelOpts{})
	require.ErrorContains(t, err, "actor is required")
	_, err = Cancel(ctx, b.pool, "shop", "spring", CancelOpts{Actor: "ops", BatchSize: -1})
	require.ErrorContains(t, err, "BatchSize -1 must be at least 1")
	require.Equal(t, map[string]int{"pending": 1}, b.statuses(t, "shop", "spring"), "nothing was canceled")
	c, err := Get(ctx, b.pool, "shop", "spring")
	require.NoError(t, err)
	require.True(t, c.CancelRequestedAt.IsZero(), "no cancel was recorded")
}

func TestCancel_InterruptedResumesWhereStopped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.submitCampaign(t, "shop", "spring", 50, time.Now().Add(time.Hour))

	ctx, stop := context.WithCancel(context.Background())
	res, err := Cancel(ctx, b.pool, "shop", "spring", CancelOpts{Actor: "ops", BatchSize: 10,
		BatchFunc: func(Batch) { stop() }})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, res.Done)
	require.Equal(t, int64(10), res.Canceled)

	c, err := Get(context.Background(), b.pool, "shop", "spring")
	require.NoError(t, err)
	require.Equal(t, heraldtype.CampaignCanceling, c.State, "a cancel under way shows as such")
	require.Equal(t, int64(10), c.Canceled)
	require.Equal(t, int64(40), c.Pending)
	out := acceptAll(t, b.pool, intent("shop", "spring", 77, c.SendAt, false))
	require.NotNil(t, out[0].Refused, "nothing joins a campaign whose cancel was requested")

	var batches int
	res, err = Cancel(context.Background(), b.pool, "shop", "spring", CancelOpts{Actor: "ops", BatchSize: 10,
		BatchFunc: func(Batch) { batches++ }})
	require.NoError(t, err)
	require.True(t, res.Done)
	require.Equal(t, int64(40), res.Canceled)
	// 40 records left: four full batches, and a fifth that finds none
	// and finishes the sweep.
	require.Equal(t, 5, batches, "it went on from its cursor, not from the start")
	require.Equal(t, map[string]int{"canceled": 50}, b.statuses(t, "shop", "spring"))
}

// A route claimed by a dispatcher is in flight: the cancel leaves it to
// finish, and a later sweep cancels it if it comes back failed.
func TestCancel_LeavesInFlightAndSweepsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.submitCampaign(t, "shop", "spring", 12, time.Time{})

	q := store.New()
	claimed, err := q.RouteClaimDue(ctx, b.pool, store.RouteClaimDueParams{Channel: "webhook", Lane: "", Max: 2, LeaseSeconds: 60})
	require.NoError(t, err)
	require.Len(t, claimed, 2)

	// The cancel goes round again while the two are in flight: stop it
	// after its third batch that finds only them.
	var seen []Batch
	waits := 0
	cancelCtx, stop := context.WithCancel(ctx)
	defer stop()
	res, err := Cancel(cancelCtx, b.pool, "shop", "spring", CancelOpts{Actor: "ops", BatchSize: 5, InFlightPause: 10 * time.Millisecond,
		BatchFunc: func(x Batch) {
			seen = append(seen, x)
			if x.Canceled == 0 && x.InFlight > 0 {
				if waits++; waits == 3 {
					stop()
				}
			}
		}})
	require.ErrorIs(t, err, context.Canceled, "the cancel waits for the routes in flight")
	require.False(t, res.Done)
	require.Equal(t, int64(10), res.Canceled)
	require.Equal(t, map[string]int{"canceled": 10, "claimed": 2}, b.statuses(t, "shop", "spring"))
	require.Equal(t, int64(2), seen[len(seen)-1].InFlight)

	// One delivery succeeds, one fails transiently: the first stays
	// published, the second is canceled by the next sweep.
	complete := func(c store.RouteClaimDueRow, status string) {
		rows, err := q.RouteCompleteMany(ctx, b.pool, store.RouteCompleteManyParams{
			NotificationIds: []string{c.NotificationID}, RouteIds: []string{c.RouteID}, Attempts: []int32{c.AttemptCount},
			LeaseUntils: []time.Time{*c.LeaseUntil}, Statuses: []string{status}, DelaySeconds: []float64{30},
			Classifications: []string{""}, Messages: []string{""}, RecoveryHints: []string{""}, MaxAttempts: []int32{10},
			ResolvedEmails: []string{""}, ResolvedLocales: []string{""}, ProviderMessageIds: []string{""},
			Providers: []string{""}, ReceiptKeys: []string{""},
		})
		require.NoError(t, err)
		require.Len(t, rows, 1, "the completion is not fenced out: the cancel left the route alone")
	}
	complete(claimed[0], "published")
	complete(claimed[1], "failed")

	res, err = Cancel(ctx, b.pool, "shop", "spring", CancelOpts{Actor: "ops", BatchSize: 5})
	require.NoError(t, err)
	require.True(t, res.Done)
	require.Equal(t, int64(1), res.Canceled)
	require.Equal(t, map[string]int{"canceled": 11, "published": 1}, b.statuses(t, "shop", "spring"))
	var published string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM herald.routes WHERE notification_id = $1 AND route_id = $2`,
		claimed[0].NotificationID, claimed[0].RouteID).Scan(&published))
	require.Equal(t, "published", published)
}

// A claimed route whose lease ran out belongs to a dispatcher taken for
// dead: the cancel takes it, as a dispatcher would claim it again, and the
// late completion is fenced out.
func TestCancel_TakesExpiredLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.submitCampaign(t, "shop", "spring", 3, time.Time{})
	q := store.New()
	claimed, err := q.RouteClaimDue(ctx, b.pool, store.RouteClaimDueParams{Channel: "webhook", Lane: "", Max: 1, LeaseSeconds: 0.001})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	// The database's clock, the one the cancel reads, passes the lease.
	require.Eventually(t, func() bool {
		var ran bool
		err := b.pool.QueryRow(ctx, `SELECT now() > $1::timestamptz`, *claimed[0].LeaseUntil).Scan(&ran)
		return err == nil && ran
	}, 5*time.Second, time.Millisecond, "the lease runs out")

	res, err := Cancel(ctx, b.pool, "shop", "spring", CancelOpts{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, res.Done)
	require.Equal(t, int64(3), res.Canceled)
	require.Equal(t, map[string]int{"canceled": 3}, b.statuses(t, "shop", "spring"))
}

func TestCampaignCancelProc_CancelsInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.submitCampaign(t, "shop", "spring", 30, time.Now().Add(time.Hour))

	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `CALL herald.campaign_cancel('shop', 'spring', 'dba', 'by hand', 7)`)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"canceled": 30}, b.statuses(t, "shop", "spring"))
	var rows int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.audit_log WHERE action = 'campaign_cancel' AND actor = 'dba'`).Scan(&rows))
	require.Equal(t, 5, rows, "30 records in batches of 7, each committed")

	// Inside a transaction block it cannot commit between batches, and
	// says so rather than holding one long transaction.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `CALL herald.campaign_cancel('shop', 'spring', 'dba', 'by hand')`)
	require.Error(t, err)
	require.ErrorContains(t, err, "transaction termination")
}

func TestCampaignCancelProc_RefusesEmptyBatchSize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.submitCampaign(t, "shop", "spring", 1, time.Time{})
	_, err := b.pool.Exec(context.Background(), `SELECT * FROM herald.campaign_cancel_batch('shop', 'spring', 'ops', '', 0)`)
	require.ErrorContains(t, err, "batch_size must be at least 1")
	_, err = b.pool.Exec(context.Background(), `SELECT * FROM herald.campaign_cancel_batch('shop', 'spring', '', '', 10)`)
	require.ErrorContains(t, err, "must name an actor")
	require.False(t, errors.Is(err, ErrNotFound))
}
