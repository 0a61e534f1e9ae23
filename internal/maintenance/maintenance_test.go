package maintenance_test

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/pgtemp"
	"github.com/heraldhq/herald/internal/store"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// t0 is when the seeded notifications were accepted: a fixed instant in the
// past, so every cut-off in these tests is computed from the injected clock.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// idPrefix is how the id of every notification accepted at t0 begins: a
// notification id is a UUIDv7, whose first 48 bits are the milliseconds it
// was made at, and retention walks records in id order up to the ids of
// its cut-off (migration 00024).
var idPrefix = idPrefixAt(t0)

// idPrefixAt is how a UUIDv7 made at t begins.
func idPrefixAt(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-", ms>>16, ms&0xffff)
}

// nid is the id these tests give the notification they call name: t0's
// UUIDv7 prefix, then the name in hex, which sorts as the name does.
func nid(name string) string { return idPrefix + hex.EncodeToString([]byte(name)) }

// name is nid's inverse.
func name(t *testing.T, id string) string {
	t.Helper()
	h, ok := strings.CutPrefix(id, idPrefix)
	require.True(t, ok, "id %q is not one of t0's", id)
	b, err := hex.DecodeString(h)
	require.NoError(t, err)
	return string(b)
}

type testBundle struct {
	pool    *pgxpool.Pool
	metrics *metrics.Metrics
	reg     *prometheus.Registry
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	return &testBundle{pool: pgtemp.NewPool(t), metrics: metrics.New(reg), reg: reg}
}

// newMaintenance returns Maintenance whose clock reads now.
func (b *testBundle) newMaintenance(t *testing.T, now time.Time, cfg maintenance.Config) *maintenance.Maintenance {
	t.Helper()
	cfg.NowFunc = func() time.Time { return now }
	cfg.Metrics = b.metrics
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := maintenance.New(b.pool, &cfg)
	require.NoError(t, err)
	return m
}

// seedSpec is one notification to seed: accepted at t0 with an idempotency
// window of window, one route per status, each last changed at changed.
type seedSpec struct {
	id       string // its name: its id is nid(id), unless rawID is set
	rawID    string
	window   time.Duration
	statuses []string
	changed  time.Time
}

// seed accepts the notifications through the intake's own insert, at t0,
// with the ids nid gives their names, and then moves their routes to the
// given statuses.
func (b *testBundle) seed(t *testing.T, specs ...seedSpec) {
	t.Helper()
	ctx := context.Background()
	for _, s := range specs {
		id := cmp.Or(s.rawID, nid(s.id))
		var p store.RecordInsertManyParams
		p.NotificationIds = []string{id}
		p.NotificationTypes = []string{"order.shipped"}
		p.Producers = []string{"shop"}
		p.AudienceKinds = []string{"users"}
		p.RecipientUserIds = [][]byte{[]byte(`["u1"]`)}
		p.PayloadJsons = []string{`{}`}
		p.IdempotencyKeys = []string{"key-" + id}
		p.RequestFingerprints = []string{"fp-" + id}
		p.RequestIds = []string{""}
		p.TraceIds = []string{""}
		p.OccurredAts = []time.Time{t0}
		p.ChannelLists = []string{"email"}
		p.Priorities = []int16{0}
		p.SendAts = []time.Time{{}}
		p.ExpiresAts = []time.Time{{}}
		p.CallbackUrls = []string{""}
		p.Now = &t0
		p.IdempotencyWindowSeconds = s.window.Seconds()
		for i := range s.statuses {
			p.RouteNotificationIds = append(p.RouteNotificationIds, id)
			p.RouteIds = append(p.RouteIds, fmt.Sprintf("r%d", i))
			p.RouteChannels = append(p.RouteChannels, "email")
			p.RouteRecipientRefs = append(p.RouteRecipientRefs, "user:u1")
			p.RouteMaxAttempts = append(p.RouteMaxAttempts, 0)
			p.RoutePriorities = append(p.RoutePriorities, 0)
			p.RouteSendAts = append(p.RouteSendAts, time.Time{})
			p.RouteExpiresAts = append(p.RouteExpiresAts, time.Time{})
			p.RouteSmsEncodings = append(p.RouteSmsEncodings, "")
			p.RouteSmsSegments = append(p.RouteSmsSegments, 0)
		}
		_, err := store.New().RecordInsertMany(ctx, b.pool, p)
		require.NoError(t, err)
		for i, st := range s.statuses {
			b.setRouteStatusID(t, id, fmt.Sprintf("r%d", i), st, s.changed)
		}
	}
}

// setRouteStatus moves one route of the notification seeded as name to
// status as the dispatcher would, with its
// last change at changed, and writes its dead letter when status is
// dead_letter. SQL in a test is the test's own helper: the dispatcher's
// queries do this for real.
func (b *testBundle) setRouteStatus(t *testing.T, name, routeID, status string, changed time.Time) {
	t.Helper()
	b.setRouteStatusID(t, nid(name), routeID, status, changed)
}

// setRouteStatusID is setRouteStatus by the notification's id.
func (b *testBundle) setRouteStatusID(t *testing.T, id, routeID, status string, changed time.Time) {
	t.Helper()
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `
		UPDATE herald.routes SET
			status = $3::text,
			updated_at = $4::timestamptz,
			next_attempt_at = CASE WHEN $3 IN ('pending', 'claimed', 'failed') THEN $4 END,
			published_at = CASE WHEN $3 = 'published' THEN $4 END,
			dead_lettered_at = CASE WHEN $3 = 'dead_letter' THEN $4 END,
			skipped_at = CASE WHEN $3 = 'skipped' THEN $4 END,
			canceled_at = CASE WHEN $3 = 'canceled' THEN $4 END
		WHERE notification_id = $1 AND route_id = $2`, id, routeID, status, changed)
	require.NoError(t, err)
	if status == "dead_letter" {
		_, err = b.pool.Exec(ctx, `
			INSERT INTO herald.dead_letters (notification_id, route_id, channel, recipient_ref,
				final_attempt_count, max_attempts, failure_classification, failure_message, created_at)
			VALUES ($1, $2, 'email', 'user:u1', 1, 5, 'permanent', '550 no such user', $3)`, id, routeID, changed)
		require.NoError(t, err)
	}
}

// remaining is the names of the notifications still stored, sorted.
func (b *testBundle) remaining(t *testing.T) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT notification_id FROM herald.records`)
	require.NoError(t, err)
	var names []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		names = append(names, name(t, id))
	}
	require.NoError(t, rows.Err())
	slices.Sort(names)
	return names
}

func (b *testBundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM herald."+table).Scan(&n))
	return n
}

const day = 24 * time.Hour

func TestDeleteFinishedDeletesOnlyFinishedRecordsPastBothWindows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	finished := t0.Add(time.Hour)
	b.seed(t,
		seedSpec{id: "published", window: day, statuses: []string{"published", "published"}, changed: finished},
		seedSpec{id: "skipped-canceled", window: day, statuses: []string{"skipped", "canceled", "published"}, changed: finished},
		seedSpec{id: "window-open", window: 30 * day, statuses: []string{"published"}, changed: finished},
		seedSpec{id: "pending", window: day, statuses: []string{"published", "pending"}, changed: finished},
		seedSpec{id: "claimed", window: day, statuses: []string{"claimed"}, changed: finished},
		seedSpec{id: "failed", window: day, statuses: []string{"failed"}, changed: finished},
		seedSpec{id: "dead", window: day, statuses: []string{"published", "dead_letter"}, changed: finished},
		seedSpec{id: "recent", window: day, statuses: []string{"published"}, changed: t0.Add(9 * day)},
	)

	// Ten days on, with a week's retention: the idempotency window of
	// "window-open" (30 days) is still open, "recent" finished two days ago.
	m := b.newMaintenance(t, t0.Add(10*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, []string{"claimed", "dead", "failed", "pending", "recent", "window-open"}, b.remaining(t))
	require.Equal(t, 1, b.count(t, "dead_letters"), "dead letters are kept without dead-letter retention")
	require.Equal(t, 8, b.count(t, "routes"), "the routes of the deleted records go with them, the rest stay")

	// Running again deletes nothing more.
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// Thirty-one days on, the window of "window-open" is over and "recent"
	// finished 22 days ago; the rest are still not finished or dead.
	m = b.newMaintenance(t, t0.Add(31*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, []string{"claimed", "dead", "failed", "pending"}, b.remaining(t))

	require.Equal(t, 3.0, testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobFinishedRetention, "ok")))
	require.Equal(t, 4.0, testutil.ToFloat64(b.metrics.MaintenanceRows.WithLabelValues(maintenance.JobFinishedRetention)))
}

func TestDeleteFinishedTakesADeadLetterLeftBehindWithItsRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t,
		seedSpec{id: "finished", window: day, statuses: []string{"dead_letter", "published"}, changed: t0},
		seedSpec{id: "dead", window: day, statuses: []string{"dead_letter"}, changed: t0},
	)
	// A route of "finished" was dead-lettered, then published, its dead
	// letter left behind (replay deletes it; an operator by hand may not).
	// No foreign key cascades from routes to dead letters any more
	// (migration 00021): retention deletes them itself.
	b.setRouteStatus(t, "finished", "r0", "published", t0)
	require.Equal(t, 2, b.count(t, "dead_letters"))

	m := b.newMaintenance(t, t0.Add(10*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"dead"}, b.remaining(t))
	require.Equal(t, 1, b.count(t, "dead_letters"), "the dead letter of the record deleted went with it, the other stays")
}

func TestDeleteFinishedNeverFreesAnIdempotencyKeyEarly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, seedSpec{id: "n1", window: 3 * day, statuses: []string{"published"}, changed: t0})

	// Retention of one second, but the key stays reserved three days.
	for _, now := range []time.Time{t0.Add(time.Hour), t0.Add(3*day - time.Second)} {
		m := b.newMaintenance(t, now, maintenance.Config{FinishedRetention: time.Second})
		n, err := m.DeleteFinished(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "deleted at %s", now)
	}
	m := b.newMaintenance(t, t0.Add(3*day), maintenance.Config{FinishedRetention: time.Second})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Zero(t, b.count(t, "routes"), "routes go with their record")
}

func TestDeleteFinishedWorksInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Seven finished notifications interleaved with five that must stay,
	// all of the same age: each batch continues where the last one ended.
	var specs []seedSpec
	var kept []string
	for i := range 12 {
		status := "published"
		if i%2 == 1 && i < 10 {
			status = "pending"
			kept = append(kept, fmt.Sprintf("n%02d", i))
		}
		specs = append(specs, seedSpec{id: fmt.Sprintf("n%02d", i), window: day, statuses: []string{status}, changed: t0})
	}
	b.seed(t, specs...)

	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{BatchSize: 2})
	n, err := m.DeleteFinished(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(7), n)
	require.Equal(t, kept, b.remaining(t))
}

func TestDeleteDeadLetteredIsOffByDefaultAndKeepsReplayedRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t,
		seedSpec{id: "dead-old", window: day, statuses: []string{"published", "dead_letter"}, changed: t0},
		seedSpec{id: "dead-new", window: day, statuses: []string{"dead_letter"}, changed: t0.Add(25 * day)},
		seedSpec{id: "replayed", window: day, statuses: []string{"dead_letter", "published"}, changed: t0},
	)
	// An operator replayed one of its routes: pending again, dead letter row
	// still there until the dispatcher finishes it.
	b.setRouteStatus(t, "replayed", "r1", "pending", t0.Add(time.Hour))

	off := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{})
	n, err := off.DeleteDeadLettered(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = off.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	on := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{DeadLetterRetention: 14 * day})
	n, err = on.DeleteDeadLettered(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"dead-new", "replayed"}, b.remaining(t))
	require.Equal(t, 2, b.count(t, "dead_letters"))
	require.Equal(t, 3, b.count(t, "routes"), "dead-old's two routes went with it")
}

func TestDeleteMalformedDeletesOnlyOldEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i, at := range []time.Time{t0, t0.Add(day), t0.Add(20 * day), t0.Add(29 * day)} {
		_, err := b.pool.Exec(ctx, `
			INSERT INTO herald.malformed_intents (stream_entry_id, failure_code, failure_message, raw_fields, recorded_at)
			VALUES ($1, 'invalid_json', 'body is not JSON', '{}', $2)`, fmt.Sprintf("intake:%d", i), at)
		require.NoError(t, err)
	}
	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{MalformedRetention: 7 * day, BatchSize: 1})
	n, err := m.DeleteMalformed(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Equal(t, 1, b.count(t, "malformed_intents"), "the one recorded a day ago is kept")
}

func TestCheckBloatReindexesDueIndexPastThreshold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, seedSpec{id: "n1", window: day, statuses: []string{"pending", "pending"}, changed: t0})
	filenode := func() uint32 {
		var n uint32
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT pg_relation_filenode('herald.routes_due_idx')::oid`).Scan(&n))
		return n
	}
	before := filenode()

	// Default thresholds: a tiny index is never rebuilt.
	rep, err := b.newMaintenance(t, time.Now(), maintenance.Config{}).CheckBloat(ctx)
	require.NoError(t, err)
	require.False(t, rep.Reindexed)
	require.Positive(t, rep.IndexBytes)
	require.Equal(t, before, filenode())

	// Thresholds at zero: rebuilt concurrently, and still valid.
	rep, err = b.newMaintenance(t, time.Now(), maintenance.Config{BloatMinBytes: -1, BloatRatio: 1e-9}).CheckBloat(ctx)
	require.NoError(t, err)
	require.True(t, rep.Reindexed)
	require.Positive(t, rep.IndexBytesAfter)
	require.NotEqual(t, before, filenode())
	var valid bool
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT indisvalid FROM pg_index WHERE indexrelid = 'herald.routes_due_idx'::regclass`).Scan(&valid))
	require.True(t, valid)
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.MaintenanceRows.WithLabelValues(maintenance.JobBloatCheck)))
}

type echoArgs struct{ Word string }

func (echoArgs) Kind() string { return "herald_test_echo" }

func TestRiverRunsPeriodicJobsAndExtraWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, seedSpec{id: "old", window: day, statuses: []string{"published"}, changed: t0})

	worked := make(chan string, 1)
	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{
		RunOnStart: true,
		Workers: func(w *river.Workers) error {
			return river.AddWorkerSafely(w, river.WorkFunc(func(_ context.Context, j *river.Job[echoArgs]) error {
				worked <- j.Args.Word
				return nil
			}))
		},
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	_, err := m.Client().Insert(ctx, echoArgs{Word: "hello"}, nil)
	require.NoError(t, err)
	select {
	case w := <-worked:
		require.Equal(t, "hello", w)
	case err := <-done:
		require.NoError(t, err)
		t.Fatal("maintenance stopped before the extra worker ran")
	case <-time.After(20 * time.Second):
		t.Fatal("the extra worker never ran")
	}

	// Elected leader, the client inserts each periodic job once at start.
	require.Eventually(t, func() bool { return len(b.remaining(t)) == 0 }, 20*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobBloatCheck, "ok")) == 1 &&
			testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobMalformedRetention, "ok")) == 1
	}, 20*time.Second, 50*time.Millisecond)
}

func TestNewRejectsNegativeSettingsNamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := maintenance.New(b.pool, &maintenance.Config{DeadLetterRetention: -time.Hour})
	require.ErrorContains(t, err, "DeadLetterRetention")
	_, err = maintenance.New(b.pool, &maintenance.Config{BatchSize: -1})
	require.ErrorContains(t, err, "BatchSize")
}

func TestCheckBloatDropsTheLeftoverOfAFailedRebuild(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, seedSpec{id: "n1", window: day, statuses: []string{"pending", "pending"}, changed: t0})
	// A concurrent build that fails leaves an invalid index, as an
	// interrupted REINDEX CONCURRENTLY leaves routes_due_idx_ccnew: here a
	// unique index on values that repeat.
	_, err := b.pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY routes_due_idx_ccnew ON herald.routes_live (channel)`)
	require.Error(t, err)
	leftovers := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_class WHERE relname LIKE 'routes_due_idx_ccnew%'`).Scan(&n))
		return n
	}
	require.Equal(t, 1, leftovers())

	rep, err := b.newMaintenance(t, time.Now(), maintenance.Config{}).CheckBloat(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"routes_due_idx_ccnew"}, rep.DroppedLeftovers)
	require.Zero(t, leftovers())
}

// A run cut short leaves where it stood to the next run, which goes on from
// there instead of reading the records that stay (dead letters) again; a run
// that finishes leaves nothing, and the next one is a whole pass from the
// oldest record.
func TestDeleteFinishedResumesARunCutShortAndStartsOverAfterAWholeRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var specs []seedSpec
	for i := range 10 {
		status := "published"
		if i < 4 {
			status = "dead_letter"
		}
		specs = append(specs, seedSpec{id: fmt.Sprintf("n%02d", i), window: day, statuses: []string{status}, changed: t0})
	}
	b.seed(t, specs...)
	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{BatchSize: 2})
	// The weeks ahead made first: making one waits for routes_live's lock.
	_, _, err := m.Weeks(ctx)
	require.NoError(t, err)

	// The second batch (n06, n07) waits on a lock held on n07's route; the
	// run is canceled there, after the first batch (n04, n05) committed.
	lock, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer lock.Rollback(ctx) // on a failure below, or closing the pool waits for it
	_, err = lock.Exec(ctx, `SELECT 1 FROM herald.routes WHERE notification_id = $1 FOR UPDATE`, nid("n07"))
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := m.DeleteFinished(rctx)
		done <- result{n, err}
	}()
	waiting := func() int {
		var n int
		// This database's backends only: pg_locks is the whole cluster's,
		// where other packages' tests wait on locks of their own (a row
		// lock's wait is on a transaction id, with no database to filter).
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return waiting() > 0 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	r := <-done
	require.Error(t, r.err)
	require.Equal(t, int64(2), r.n)
	// The cancel reaches the server on a connection of its own: the lock
	// goes only once the waiting statement has been canceled.
	require.Eventually(t, func() bool { return waiting() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, lock.Rollback(ctx))
	require.Equal(t, []string{"n00", "n01", "n02", "n03", "n06", "n07", "n08", "n09"}, b.remaining(t))

	// n01's route is replayed and published: deletable, but behind where the
	// cut-short run stood. The next run goes on from there and leaves it.
	b.setRouteStatus(t, "n01", "r0", "published", t0)
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(4), n)
	require.Equal(t, []string{"n00", "n01", "n02", "n03"}, b.remaining(t))

	// That run finished: the next is a whole pass and finds n01.
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"n00", "n02", "n03"}, b.remaining(t))
}

// A process stopped while maintenance is still starting (serve canceled as
// soon as it began) stops cleanly: no error for a shutdown. A River client
// that cannot start for another reason is still an error.
func TestRunStoppedWhileStartingIsAShutdownNotAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMaintenance(t, time.Now(), maintenance.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, m.Run(ctx))

	dead, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(dead.Close)
	broken, err := maintenance.New(dead, &maintenance.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	err = broken.Run(context.Background())
	require.ErrorContains(t, err, "start maintenance")
}

// herald.id_floor(t) is the least UUIDv7 text of t's millisecond: ids made
// in earlier milliseconds sort before it, ids of t's millisecond and later
// do not. Retention's cut-off and the callback counts rest on it.
func TestIdFloorBoundsTheIdsOfAMillisecond(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The id text of a UUIDv7 made at ms with the given 74 random bits'
	// extremes (version 7, variant 10).
	v7 := func(ms int64, low bool) string {
		if low {
			return idPrefixAt(time.UnixMilli(ms)) + "7000-8000-000000000000"
		}
		return idPrefixAt(time.UnixMilli(ms)) + "7fff-bfff-ffffffffffff"
	}
	floor := func(at time.Time) string {
		var f string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT herald.id_floor($1)`, at).Scan(&f))
		return f
	}
	at := time.Date(2026, 11, 25, 1, 2, 3, 456_789_000, time.UTC)
	ms := at.UnixMilli()
	f := floor(at)
	require.Equal(t, idPrefixAt(at)+"0000-0000-000000000000", f)
	require.Less(t, v7(ms-1, false), f, "the last id of the millisecond before")
	require.LessOrEqual(t, f, v7(ms, true), "the first id of t's millisecond")
	require.Less(t, v7(ms, false), floor(at.Add(time.Millisecond)), "t's last id, below the next millisecond's floor")
	require.Equal(t, f, floor(at.Truncate(time.Millisecond)), "the same floor for the whole millisecond")
	// Go's own UUIDv7s, made now, sort between the floors around them.
	before := time.Now()
	id := uuid.Must(uuid.NewV7()).String()
	after := time.Now()
	require.LessOrEqual(t, floor(before), id)
	require.Less(t, id, floor(after.Add(time.Millisecond)))
	// Before 1970 (Go's zero time, say) it is the least id of all.
	require.Equal(t, "00000000-0000-0000-0000-000000000000", floor(time.Time{}))
	var null *string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT herald.id_floor(NULL)`).Scan(&null))
	require.Nil(t, null)
}

// A record's id and accepted_at come from two clocks (the accepting
// process's and the database's): retention deletes a record only when both
// say it is past the cut-off, so a record whose id runs ahead of its
// acceptance or behind it is deleted late, never early.
func TestDeleteFinishedWaitsForBothTheIdAndAcceptedAt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t,
		seedSpec{id: "id-older", window: day, statuses: []string{"published"}, changed: t0},
		seedSpec{id: "plain", window: day, statuses: []string{"published"}, changed: t0},
	)
	// id-older was accepted five days after its id's time.
	_, err := b.pool.Exec(ctx, `UPDATE herald.records SET accepted_at = $2 WHERE notification_id = $1`,
		nid("id-older"), t0.Add(5*day))
	require.NoError(t, err)

	// A week's retention ten days on: the cut-off is t0 + 3 days.
	m := b.newMaintenance(t, t0.Add(10*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"id-older"}, b.remaining(t), "accepted after the cut-off, whatever its id says")

	m = b.newMaintenance(t, t0.Add(13*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Empty(t, b.remaining(t))

	// A record whose id is younger than its accepted_at: past the cut-off
	// by accepted_at, not by id, so kept until its id is too.
	ahead := idPrefixAt(t0.Add(20*day)) + hex.EncodeToString([]byte("id-younger"))
	b.seed(t, seedSpec{rawID: ahead, window: day, statuses: []string{"published"}, changed: t0})
	m = b.newMaintenance(t, t0.Add(25*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the id is after the cut-off (t0 + 18 days)")
	m = b.newMaintenance(t, t0.Add(28*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}

// finishRoute makes a route of the notification seeded as name terminal
// at `at`, as a completion does (migration 00025): finished_at set, which
// moves it to the partition of at's week.
func (b *testBundle) finishRoute(t *testing.T, name, routeID, status string, at time.Time) error {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		UPDATE herald.routes SET status = $3::text, updated_at = $4, next_attempt_at = NULL,
			published_at = CASE WHEN $3 = 'published' THEN $4::timestamptz END,
			skipped_at = CASE WHEN $3 = 'skipped' THEN $4::timestamptz END,
			finished_at = $4
		WHERE notification_id = $1 AND route_id = $2`, nid(name), routeID, status, at)
	return err
}

// weeks lists routes' finished-week partitions, by their Monday.
func (b *testBundle) weeks(t *testing.T) []string {
	t.Helper()
	rows, err := store.New().RouteWeeksList(context.Background(), b.pool)
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, r.Week)
	}
	return out
}

// Finished routes go with their week (migration 00025): maintenance makes
// the weeks two ahead, drops whole the weeks that ended more than the
// retention ago, and then deletes the records left with no route; a
// record with a route of a week not dropped yet, or a dead letter, stays.
// A route that would finish in a week with no partition is refused, and
// changes nothing.
func TestWeeksAreMadeAheadAndDroppedWholeBeforeTheirRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC) // a Wednesday
	m := b.newMaintenance(t, now, maintenance.Config{})
	made, dropped, err := m.Weeks(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, made, "the weeks from 8, 15 and 22 March")
	require.Zero(t, dropped)
	require.Subset(t, b.weeks(t), []string{"20270308", "20270315", "20270322"})
	made, _, err = m.Weeks(ctx)
	require.NoError(t, err)
	require.Zero(t, made, "made once")

	// Older weeks, as maintenance made them then.
	_, err = store.New().RouteWeeksCreate(ctx, b.pool, store.RouteWeeksCreateParams{
		FirstDay:    pgtype.Date{Time: now.Add(-30 * day), Valid: true},
		LastDay:     pgtype.Date{Time: now, Valid: true},
		WaitSeconds: 1,
	})
	require.NoError(t, err)
	b.seed(t,
		seedSpec{id: "old", window: day, statuses: []string{"pending", "pending"}, changed: t0},
		seedSpec{id: "recent", window: day, statuses: []string{"pending"}, changed: t0},
		seedSpec{id: "dead", window: day, statuses: []string{"pending", "dead_letter"}, changed: t0},
		seedSpec{id: "open", window: 2000 * day, statuses: []string{"pending"}, changed: t0},
	)
	// 18 February's week ended on 22 February, before the cut-off (3
	// March); 5 March's ends on 8 March, after it.
	require.NoError(t, b.finishRoute(t, "old", "r0", "published", now.Add(-20*day)))
	require.NoError(t, b.finishRoute(t, "old", "r1", "skipped", now.Add(-20*day)))
	require.NoError(t, b.finishRoute(t, "recent", "r0", "published", now.Add(-5*day)))
	require.NoError(t, b.finishRoute(t, "dead", "r0", "published", now.Add(-20*day)))
	require.NoError(t, b.finishRoute(t, "open", "r0", "published", now.Add(-20*day)))
	// No partition for a week past those made.
	err = b.finishRoute(t, "recent", "r0", "published", now.Add(60*day))
	requireSQLState(t, err, "23514")
	var finished time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT finished_at FROM herald.routes WHERE notification_id = $1`,
		nid("recent")).Scan(&finished))
	require.WithinDuration(t, now.Add(-5*day), finished, 0, "the refused change changed nothing")

	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "old: its routes went with their week")
	require.Equal(t, []string{"dead", "open", "recent"}, b.remaining(t))
	require.NotContains(t, b.weeks(t), "20270215")
	require.Contains(t, b.weeks(t), "20270301")
	var routes []string
	rows, err := b.pool.Query(ctx, `SELECT notification_id || '/' || route_id FROM herald.routes ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		id, r, _ := strings.Cut(s, "/")
		routes = append(routes, name(t, id)+"/"+r)
	}
	require.NoError(t, rows.Err())
	// dead's published route went with its week; its dead letter, in
	// routes_live, keeps the record. open's went too: its record waits for
	// its idempotency window.
	require.Equal(t, []string{"dead/r1", "recent/r0"}, routes)
	require.Equal(t, 1, b.count(t, "dead_letters"))
}

func requireSQLState(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, code, pgErr.Code, pgErr.Message)
}
