package operator_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/schema"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

type testBundle struct {
	pool *pgxpool.Pool
	op   *operator.Operator
	q    *store.Queries
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtemp.NewPool(t)
	op, err := operator.New(pool, nil)
	require.NoError(t, err)
	return &testBundle{pool: pool, op: op, q: store.New()}
}

// routeStatus returns the status of one route.
func (b *testBundle) routeStatus(t *testing.T, ref operator.RouteRef) store.HeraldRoute {
	t.Helper()
	routes, err := b.q.RouteListByNotification(context.Background(), b.pool, ref.NotificationID)
	require.NoError(t, err)
	for _, r := range routes {
		if r.RouteID == ref.RouteID {
			return r
		}
	}
	require.FailNow(t, "no route", "%s", ref)
	return store.HeraldRoute{}
}

// pending returns how many routes are scheduling candidates, per channel.
func (b *testBundle) pending(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := b.q.RouteBacklogByStatus(context.Background(), b.pool, nil)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Channel] += r.Routes
	}
	return out
}

func TestConfig_RejectsNegativeBatchSize(t *testing.T) {
	t.Parallel()
	_, err := operator.New(nil, &operator.Config{BatchSize: -1})
	require.ErrorContains(t, err, "BatchSize")
}

func TestParseRouteRef_ReadsNotificationOrRoute(t *testing.T) {
	t.Parallel()
	ref, err := operator.ParseRouteRef("ntf_1/email:0")
	require.NoError(t, err)
	require.Equal(t, operator.RouteRef{NotificationID: "ntf_1", RouteID: "email:0"}, ref)
	ref, err = operator.ParseRouteRef("ntf_1")
	require.NoError(t, err)
	require.Equal(t, operator.RouteRef{NotificationID: "ntf_1"}, ref)
	_, err = operator.ParseRouteRef("/x")
	require.ErrorIs(t, err, operator.ErrBadRouteRef)
}

func TestDeadLetters_FilterAndPageNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	email := operatortest.Seed(t, b.pool, operatortest.Spec{N: 7, Channel: "email", Dead: true})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Channel: "sms", Producer: "billing", Dead: true, Classification: "exhausted"})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 4, Channel: "email"}) // alive: never listed

	all, err := b.op.DeadLetters(ctx, operator.Filter{}, 100, "")
	require.NoError(t, err)
	require.Len(t, all.DeadLetters, 10)
	require.Empty(t, all.Next)
	for i := 1; i < len(all.DeadLetters); i++ {
		require.False(t, all.DeadLetters[i].DeadLetteredAt.After(all.DeadLetters[i-1].DeadLetteredAt), "newest first")
	}

	// Pages of 3 walk the same rows in the same order, each once.
	var walked []operator.DeadLetter
	after := ""
	for {
		page, err := b.op.DeadLetters(ctx, operator.Filter{}, 3, after)
		require.NoError(t, err)
		walked = append(walked, page.DeadLetters...)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	require.Equal(t, all.DeadLetters, walked)

	sms, err := b.op.DeadLetters(ctx, operator.Filter{Channel: "sms", Producer: "billing", Classification: "exhausted"}, 0, "")
	require.NoError(t, err)
	require.Len(t, sms.DeadLetters, 3)
	require.Equal(t, "billing", sms.DeadLetters[0].Producer)
	require.Equal(t, "rejected by test", sms.DeadLetters[0].Message)
	require.Equal(t, 3, sms.DeadLetters[0].Attempts)

	none, err := b.op.DeadLetters(ctx, operator.Filter{Since: time.Now().Add(time.Hour)}, 0, "")
	require.NoError(t, err)
	require.Empty(t, none.DeadLetters)

	byID, err := b.op.DeadLetters(ctx, operator.Filter{IDs: []operator.RouteRef{{NotificationID: email[2].NotificationID}}}, 0, "")
	require.NoError(t, err)
	require.Len(t, byID.DeadLetters, 1)
	require.Equal(t, email[2].NotificationID, byID.DeadLetters[0].NotificationID)

	_, err = b.op.DeadLetters(ctx, operator.Filter{}, 0, "garbage!")
	require.ErrorIs(t, err, operator.ErrBadCursor)
}

func TestDeadLetter_ShowsRouteOrNotification(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refs := operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Dead: true})

	got, err := b.op.DeadLetter(ctx, refs[0])
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, refs[0].RouteID, got[0].RouteID)
	require.Equal(t, "fix the address, then replay", got[0].RecoveryHint)

	got, err = b.op.DeadLetter(ctx, operator.RouteRef{NotificationID: refs[1].NotificationID})
	require.NoError(t, err)
	require.Len(t, got, 1)

	_, err = b.op.DeadLetter(ctx, operator.RouteRef{NotificationID: "ntf_nope"})
	require.ErrorIs(t, err, operator.ErrNotFound)
}

func TestReplay_MovesBackWithFreshBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refs := operatortest.Seed(t, b.pool, operatortest.Spec{N: 5, Dead: true})

	res, err := b.op.Replay(ctx, operator.Filter{IDs: refs[:2]}, operator.ReplayOpts{Actor: "alice", Reason: "address fixed"})
	require.NoError(t, err)
	require.Equal(t, 2, res.Moved)
	require.Equal(t, int64(2), res.Matched)

	r := b.routeStatus(t, refs[0])
	require.Equal(t, "pending", r.Status)
	require.Equal(t, int32(0), r.AttemptCount)
	require.NotNil(t, r.NextAttemptAt)
	require.NotNil(t, r.DeadLetteredAt, "when it last died is kept for the timeline")
	require.Equal(t, "rejected by test", r.LastErrorMessage, "the last error is kept for the timeline")
	require.Equal(t, "dead_letter", b.routeStatus(t, refs[2]).Status)
	_, err = b.op.DeadLetter(ctx, refs[0])
	require.ErrorIs(t, err, operator.ErrNotFound)

	prog, err := b.op.Progress(ctx, res.ReplayID)
	require.NoError(t, err)
	require.Equal(t, int64(2), prog.Moved)

	// The timeline shows the replay, by whom and why.
	st, err := b.op.Status(ctx, refs[0].NotificationID)
	require.NoError(t, err)
	var events []string
	for _, e := range st.Timeline {
		events = append(events, e.Event)
		if e.Event == operator.ActionReplay {
			require.Regexp(t, `^by alice \(login \w+\): address fixed$`, e.Detail, "the actor named, and the login the database recorded")
			require.Equal(t, refs[0].RouteID, e.RouteID)
		}
	}
	require.Equal(t, []string{"accepted", "routed", "dead_lettered", operator.ActionReplay, "next_attempt"}, events)

	// Idempotent: replaying the same ids again moves nothing, and says so.
	again, err := b.op.Replay(ctx, operator.Filter{IDs: refs[:2]}, operator.ReplayOpts{Actor: "alice"})
	require.NoError(t, err)
	require.Zero(t, again.Moved)
	prog, err = b.op.Progress(ctx, again.ReplayID)
	require.NoError(t, err)
	require.Equal(t, int64(1), prog.Batches, "an empty replay leaves one audit row")
	require.Zero(t, prog.Moved)

	_, err = b.op.Replay(ctx, operator.Filter{}, operator.ReplayOpts{})
	require.ErrorIs(t, err, operator.ErrNoActor)
}

func TestReplay_DryRunMovesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 4, Channel: "sms", Dead: true})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "email", Dead: true})

	res, err := b.op.Replay(ctx, operator.Filter{Channel: "sms"}, operator.ReplayOpts{Actor: "bob", DryRun: true, SampleSize: 3})
	require.NoError(t, err)
	require.True(t, res.DryRun)
	require.Equal(t, int64(4), res.Matched)
	require.Zero(t, res.Moved)
	require.Len(t, res.Sample, 3)
	n, err := b.op.CountDeadLetters(ctx, operator.Filter{})
	require.NoError(t, err)
	require.Equal(t, int64(6), n)
	require.Empty(t, b.pending(t))
}

func TestReplay_LeavesLaterDeaths(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Dead: true})
	// The request's cut is the last of these deaths; the next ones die
	// once the database's clock has passed it.
	var cut time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT max(created_at) FROM herald.dead_letters`).Scan(&cut))
	require.Eventually(t, func() bool {
		var passed bool
		err := b.pool.QueryRow(ctx, `SELECT now() > $1::timestamptz`, cut).Scan(&passed)
		return err == nil && passed
	}, 5*time.Second, time.Millisecond, "the clock passes the cut")
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Dead: true})

	res, err := b.op.Replay(ctx, operator.Filter{Until: cut}, operator.ReplayOpts{Actor: "carol"})
	require.NoError(t, err)
	require.Equal(t, 3, res.Moved)
	n, err := b.op.CountDeadLetters(ctx, operator.Filter{})
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
}

// TestReplay_ConcurrentRunsMoveOnce is the issue's
// acceptance test: 10,000 dead letters replayed by filter by two replays at
// once; each route moves exactly once and the audit rows add up.
func TestReplay_ConcurrentRunsMoveOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 10_000
	operatortest.Seed(t, b.pool, operatortest.Spec{N: n, Channel: "webhook", Producer: "shop", Dead: true})
	// Other dead letters the filter must not touch.
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 50, Channel: "webhook", Producer: "billing", Dead: true})

	op, err := operator.New(b.pool, &operator.Config{BatchSize: 500})
	require.NoError(t, err)
	f := operator.Filter{Channel: "webhook", Producer: "shop"}
	var wg sync.WaitGroup
	results := make([]*operator.ReplayResult, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = op.Replay(ctx, f, operator.ReplayOpts{Actor: "ops", Reason: "provider fixed"})
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, n, results[0].Moved+results[1].Moved)

	var audited int64
	for _, r := range results {
		prog, err := b.op.Progress(ctx, r.ReplayID)
		require.NoError(t, err)
		require.Equal(t, int64(r.Moved), prog.Moved)
		audited += prog.Moved
	}
	require.Equal(t, int64(n), audited, "the audit rows say 10,000 moved")
	require.Equal(t, map[string]int64{"webhook": n}, b.pending(t))
	left, err := b.op.CountDeadLetters(ctx, operator.Filter{})
	require.NoError(t, err)
	require.Equal(t, int64(50), left)
}

func TestReplayJob_ResumesAfterRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refs := operatortest.Seed(t, b.pool, operatortest.Spec{N: 300, Channel: "sms", Dead: true})

	q, err := b.op.EnqueueReplay(ctx, operator.Filter{Channel: "sms"}, operator.ReplayOpts{Actor: "dave", Reason: "bulk"})
	require.NoError(t, err)
	require.Equal(t, int64(300), q.Matched)
	require.NotZero(t, q.JobID)

	// A first attempt that died after moving 100 routes: what it moved is
	// recorded under the job's replay id, and no longer matches the filter.
	first, err := b.op.Replay(ctx, operator.Filter{IDs: refs[:100], Until: q.Filter.Until},
		operator.ReplayOpts{Actor: "dave", ReplayID: q.ReplayID})
	require.NoError(t, err)
	require.Equal(t, 100, first.Moved)

	// The worker, started now as after a restart, finishes the replay.
	workers := river.NewWorkers()
	require.NoError(t, operator.AddWorkers(workers, b.pool, &operator.Config{BatchSize: 64}))
	rc, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{
		Schema:  schema.Name,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers: workers,
	})
	require.NoError(t, err)
	done, cancel := rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	require.NoError(t, rc.Start(ctx))
	t.Cleanup(func() { _ = rc.Stop(context.Background()) })
	select {
	case ev := <-done:
		require.Equal(t, rivertype.JobStateCompleted, ev.Job.State)
		require.Equal(t, q.JobID, ev.Job.ID)
		var meta struct{ Output operator.ReplayProgress }
		require.NoError(t, json.Unmarshal(ev.Job.Metadata, &meta))
		require.Equal(t, int64(300), meta.Output.Moved)
		require.Equal(t, q.ReplayID, meta.Output.ReplayID)
	case <-time.After(30 * time.Second):
		require.FailNow(t, "replay job did not finish")
	}
	prog, err := b.op.Progress(ctx, q.ReplayID)
	require.NoError(t, err)
	require.Equal(t, int64(300), prog.Moved)
	require.Equal(t, map[string]int64{"sms": 300}, b.pending(t))
}

func TestReplayOrQueue_QueuesAboveThreshold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Dead: true})
	opts := operator.ReplayOpts{Actor: "tester", Reason: "test"}

	dry := opts
	dry.DryRun = true
	out, err := b.op.ReplayOrQueue(ctx, operator.Filter{}, dry, true, 0)
	require.NoError(t, err)
	require.Nil(t, out.Queued, "a dry run is never queued")
	require.Equal(t, int64(3), out.Matched)

	out, err = b.op.ReplayOrQueue(ctx, operator.Filter{}, opts, false, 2)
	require.NoError(t, err)
	require.Nil(t, out.ReplayResult)
	require.Equal(t, int64(3), out.Queued.Matched, "more than the threshold match")
	js, err := json.Marshal(out)
	require.NoError(t, err)
	require.Regexp(t, `^\{"queued":\{"replay_id":"rpl_`, string(js), "the queued replay alone")

	out, err = b.op.ReplayOrQueue(ctx, operator.Filter{}, opts, false, 3)
	require.NoError(t, err)
	require.Nil(t, out.Queued)
	require.Equal(t, 3, out.Moved, "at the threshold: replayed at once")
	js, err = json.Marshal(out)
	require.NoError(t, err)
	want, err := json.Marshal(out.ReplayResult)
	require.NoError(t, err)
	require.Equal(t, string(want), string(js), "the result's own fields, byte for byte")
}
