package maintenance_test

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
	// An id of the week before t0's: the runs below make t0's week and
	// later ones (migration 00027), so this record is walked row by row
	// (a week's records wait for the week, TestRecordWeeks...).
	b.seed(t, seedSpec{rawID: idPrefixAt(t0.Add(-7*day)) + "6e31", window: 3 * day, statuses: []string{"published"}, changed: t0})

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
	// by accepted_at, not by id, so kept until its id is too. Seeded in a
	// database of its own where no week of its id was made yet (the runs
	// above made the weeks of their days and two ahead, migration 00027):
	// it is walked row by row.
	b = setup(t)
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

// sweepTracer records the first block of each key sweep statement a pool
// runs, and, when cancel is set, calls it as the second one starts.
type sweepTracer struct {
	mu     sync.Mutex
	from   []int64
	cancel context.CancelFunc
}

func (s *sweepTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "DELETE FROM herald.idempotency_keys") {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.from = append(s.from, data.Args[0].(int64))
		if len(s.from) == 2 && s.cancel != nil {
			s.cancel()
		}
	}
	return ctx
}

func (s *sweepTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *sweepTracer) froms() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.from)
}

// The sweep deletes the keys whose window is over and nothing else, reads
// the table a range of blocks at a time, goes on from where it stood when
// it was cut short, and starts again only KeySweepEvery after the last
// finished.
func TestSweepKeysDeletesExpiredKeysRangeByRange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t,
		seedSpec{id: "short", window: day, statuses: []string{"published"}, changed: t0},
		seedSpec{id: "long", window: 30 * day, statuses: []string{"published"}, changed: t0},
	)
	// Enough expired keys for several blocks, and some that are not.
	_, err := b.pool.Exec(ctx, `INSERT INTO herald.idempotency_keys (producer, idempotency_key, notification_id, expires_at)
		SELECT 'shop', 'bulk-' || g, 'n' || g, $1::timestamptz + CASE WHEN g % 10 = 0 THEN interval '30 days' ELSE interval '1 hour' END
		FROM generate_series(1, 600) AS g`, t0)
	require.NoError(t, err)
	var blocks int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT pg_relation_size('herald.idempotency_keys') / 8192`).Scan(&blocks))
	require.Greater(t, blocks, int64(3))

	tracer := &sweepTracer{}
	cfg := b.pool.Config().Copy()
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()
	now := t0.Add(2 * day)
	m, err := maintenance.New(pool, &maintenance.Config{
		NowFunc: func() time.Time { return now }, Metrics: b.metrics, KeySweepBlocks: 1,
	})
	require.NoError(t, err)

	// Cut short as its second range starts...
	cctx, cancel := context.WithCancel(ctx)
	tracer.mu.Lock()
	tracer.cancel = cancel
	tracer.mu.Unlock()
	_, err = m.SweepKeys(cctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []int64{0, 1}, tracer.froms())
	// ...it goes on from the second, to the table's end.
	n, err := m.SweepKeys(ctx)
	require.NoError(t, err)
	want := []int64{0}
	for b := range blocks - 1 {
		want = append(want, b+1)
	}
	want = append([]int64{0, 1}, want[1:]...)
	require.Equal(t, want, tracer.froms(), "each block in order, the one cut short again")
	left := func() []string {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT idempotency_key FROM herald.idempotency_keys
			WHERE idempotency_key NOT LIKE 'bulk-%' ORDER BY 1`)
		require.NoError(t, err)
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return keys
	}
	require.Equal(t, []string{"key-" + nid("long")}, left(), "the open window's key stays")
	require.Equal(t, 60, b.count(t, "idempotency_keys WHERE idempotency_key LIKE 'bulk-%'"))
	require.Positive(t, n)
	require.Equal(t, 2, b.count(t, "records"), "the sweep deletes keys, not records")

	// Not again until KeySweepEvery (12 hours) after it finished.
	_, err = b.pool.Exec(ctx, `INSERT INTO herald.idempotency_keys (producer, idempotency_key, notification_id, expires_at)
		VALUES ('shop', 'late', 'n-late', $1)`, t0)
	require.NoError(t, err)
	before := len(tracer.froms())
	n, err = m.SweepKeys(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Len(t, tracer.froms(), before, "no statement")
	now = now.Add(12 * time.Hour)
	n, err = m.SweepKeys(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, 2.0, testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobKeySweep, "ok")),
		"two sweeps finished; the call between them started none")
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobKeySweep, "error")))
}

// partitions lists records' partitions as kind:name, oldest range first.
func (b *testBundle) partitions(t *testing.T) []string {
	t.Helper()
	rows, err := store.New().RecordPartitionsList(context.Background(), b.pool)
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, r.Kind+":"+r.Partition)
	}
	return out
}

// partitionOf names the records partition that holds id.
func (b *testBundle) partitionOf(t *testing.T, id string) string {
	t.Helper()
	var p string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT tableoid::regclass::text FROM herald.records WHERE notification_id = $1`, id).Scan(&p))
	return strings.TrimPrefix(p, "herald.")
}

// finishRouteID is finishRoute by the notification's id.
func (b *testBundle) finishRouteID(t *testing.T, id, routeID string, at time.Time) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		UPDATE herald.routes SET status = 'published', updated_at = $3, next_attempt_at = NULL,
			published_at = $3, finished_at = $3
		WHERE notification_id = $1 AND route_id = $2`, id, routeID, at)
	require.NoError(t, err)
}

// Records go with the week they were accepted in (migration 00027): a week
// that ended more than the retention and a week ago is retired whole,
// keeping in a kept partition the records that must stay (a route left
// anywhere: dead-lettered, in flight, or finished in a week not dropped
// yet; or an idempotency window still open), merged with the kept
// partition below while that is small; the kept records are then deleted
// one by one as their routes go. Every route keeps its record, and a kept
// record is read by its id as any other.
func TestRecordWeeksAreRetiredWholeKeepingWhatMustStay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC) // a Wednesday
	weekA := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	weekB := weekA.Add(7 * day)
	young := time.Date(2027, 2, 23, 12, 0, 0, 0, time.UTC) // its week ends 1 March, after the bound (24 February)
	for _, mk := range []func(context.Context, store.DBTX) error{
		func(ctx context.Context, db store.DBTX) error {
			_, err := store.New().RouteWeeksCreate(ctx, db, store.RouteWeeksCreateParams{
				FirstDay: pgtype.Date{Time: weekA, Valid: true}, LastDay: pgtype.Date{Time: now, Valid: true}, WaitSeconds: 1})
			return err
		},
		func(ctx context.Context, db store.DBTX) error {
			_, err := store.New().RecordWeeksCreate(ctx, db, store.RecordWeeksCreateParams{
				FirstDay: pgtype.Date{Time: weekA, Valid: true}, LastDay: pgtype.Date{Time: now, Valid: true}, WaitSeconds: 1})
			return err
		},
	} {
		require.NoError(t, mk(ctx, b.pool))
	}
	id := func(at time.Time, name string) string { return idPrefixAt(at) + hex.EncodeToString([]byte(name)) }
	ids := map[string]string{
		"gone": id(weekA, "gone"), "dead": id(weekA, "dead"), "late": id(weekA, "late"),
		"pending": id(weekA, "pending"), "open": id(weekA, "open"),
		"dead2": id(weekB, "dead2"), "goneB": id(weekB, "goneB"), "young": id(young, "young"),
	}
	for name, nid := range ids {
		window := day
		if name == "open" {
			window = 2000 * day
		}
		b.seed(t, seedSpec{rawID: nid, window: window, statuses: []string{"pending"}, changed: t0})
	}
	require.Equal(t, "records_w20270201", b.partitionOf(t, ids["gone"]))
	require.Equal(t, "records_w20270208", b.partitionOf(t, ids["dead2"]))
	b.finishRouteID(t, ids["gone"], "r0", weekA.Add(time.Hour))
	b.finishRouteID(t, ids["goneB"], "r0", weekB.Add(time.Hour))
	b.finishRouteID(t, ids["open"], "r0", weekA.Add(time.Hour))
	b.finishRouteID(t, ids["young"], "r0", young.Add(time.Hour))
	b.finishRouteID(t, ids["late"], "r0", now.Add(-8*day)) // 2 March: its week ends 9 March, after the cut-off (3 March)
	b.setRouteStatusID(t, ids["dead"], "r0", "dead_letter", weekA)
	b.setRouteStatusID(t, ids["dead2"], "r0", "dead_letter", weekB)

	m := b.newMaintenance(t, now, maintenance.Config{FinishedRetention: 7 * day})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "gone and goneB")
	// The weeks of 1, 8 and 15 February retired (they ended by 24
	// February, the cut-off less a week), each one's kept records merged
	// into the next one's kept partition; young's week, which ended after
	// it, stays.
	parts := b.partitions(t)
	require.Contains(t, parts, "kept:records_k20270215")
	for _, gone := range []string{"kept:records_k20270201", "kept:records_k20270208",
		"week:records_w20270201", "week:records_w20270208", "week:records_w20270215"} {
		require.NotContains(t, parts, gone)
	}
	require.Contains(t, parts, "week:records_w20270222")
	var remaining []string
	for name, nid := range ids {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.records WHERE notification_id = $1`, nid).Scan(&n))
		if n == 1 {
			remaining = append(remaining, name)
			if name != "young" {
				require.Equal(t, "records_k20270215", b.partitionOf(t, nid), name)
			}
		}
	}
	slices.Sort(remaining)
	require.Equal(t, []string{"dead", "dead2", "late", "open", "pending", "young"}, remaining)
	require.Zero(t, b.count(t, "routes rt WHERE NOT EXISTS (SELECT 1 FROM herald.records r WHERE r.notification_id = rt.notification_id)"),
		"no route lost its record")
	rec, err := store.New().RecordGet(ctx, b.pool, ids["dead"])
	require.NoError(t, err)
	require.Equal(t, ids["dead"], rec.NotificationID)

	// Two weeks on, late's finished week has gone (it ended 9 March, a
	// week before the cut-off of 17 March): late is deleted from the kept
	// partition, row by row; the rest stay. young's week is retired: its
	// route's week went before (it ended 1 March).
	m = b.newMaintenance(t, now.Add(14*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "late and young")
	var left []string
	rows, err := b.pool.Query(ctx, `SELECT notification_id FROM herald.records WHERE notification_id = ANY ($1) ORDER BY 1`,
		[]string{ids["dead"], ids["dead2"], ids["late"], ids["open"], ids["pending"], ids["young"]})
	require.NoError(t, err)
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.ElementsMatch(t, []string{ids["dead"], ids["dead2"], ids["open"], ids["pending"]}, left)
}

// A kept partition is merged into the next week's when it is small
// (KeptMergeRows) or no more than twice what that week keeps: kept
// partitions grow geometrically, and a retirement copies a bounded number
// of rows. A week that keeps nothing and merges nothing leaves no
// partition.
func TestKeptPartitionsMergeGeometrically(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC)
	weekA := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	_, err := store.New().RecordWeeksCreate(ctx, b.pool, store.RecordWeeksCreateParams{
		FirstDay: pgtype.Date{Time: weekA, Valid: true}, LastDay: pgtype.Date{Time: now, Valid: true}, WaitSeconds: 1})
	require.NoError(t, err)
	// Dead-lettered records (kept while their dead letter is): five in
	// week A (1 February), two in week B (8 February), one in the week of
	// 15 February, none in the week of 22 February.
	var seeds []time.Time
	for range 5 {
		seeds = append(seeds, weekA)
	}
	seeds = append(seeds, weekA.Add(7*day), weekA.Add(7*day), weekA.Add(14*day))
	for i, at := range seeds {
		nid := idPrefixAt(at) + fmt.Sprintf("%04x", i)
		b.seed(t, seedSpec{rawID: nid, window: day, statuses: []string{"pending"}, changed: t0})
		b.setRouteStatusID(t, nid, "r0", "dead_letter", at)
	}
	// KeptMergeRows 1: only the geometric rule merges.
	cfg := maintenance.Config{FinishedRetention: 7 * day, KeptMergeRows: 1}
	m := b.newMaintenance(t, now, cfg)
	_, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	// A's five are more than twice B's two: apart. B's two are no more
	// than twice the one of the week of 15 February: merged into it.
	parts := b.partitions(t)
	require.Contains(t, parts, "kept:records_k20270201")
	require.NotContains(t, parts, "kept:records_k20270208", "merged into the next week's")
	require.Contains(t, parts, "kept:records_k20270215")
	require.Equal(t, 3, b.count(t, "records_k20270215"))
	require.Equal(t, 5, b.count(t, "records_k20270201"))
	require.Contains(t, parts, "week:records_w20270222", "ended less than FinishedRetention+RecordRetireGap ago")
	// A week on, the week of 22 February keeps nothing, and the three
	// below are more than twice nothing: the week goes, leaving no
	// partition, and the kept ones stay as they are.
	m = b.newMaintenance(t, now.Add(7*day), cfg)
	_, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	parts = b.partitions(t)
	require.NotContains(t, parts, "week:records_w20270222")
	require.NotContains(t, parts, "kept:records_k20270222", "nothing kept: no partition")
	require.Contains(t, parts, "kept:records_k20270201")
	require.Contains(t, parts, "kept:records_k20270215")
	require.Equal(t, 8, b.count(t, "records"))
}

// A week made after some of its records were accepted (a clock ahead of
// the others, or maintenance down for longer than the weeks made ahead)
// takes them in from records_default, so they go with their week; and the
// weeks missed while maintenance was down are made, not only the next.
func TestARecordWeekTakesInItsRowsFromTheDefaultPartition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC)
	m := b.newMaintenance(t, now, maintenance.Config{})
	_, _, _, err := m.RecordWeeks(ctx)
	require.NoError(t, err)
	require.Subset(t, b.partitions(t), []string{"week:records_w20270308", "week:records_w20270315", "week:records_w20270322"})
	// Accepted in weeks not made yet: in records_default.
	ahead := idPrefixAt(now.Add(35*day)) + "61"
	later := idPrefixAt(now.Add(49*day)) + "62"
	for _, nid := range []string{ahead, later} {
		b.seed(t, seedSpec{rawID: nid, window: day, statuses: []string{"pending"}, changed: t0})
		require.Equal(t, "records_default", b.partitionOf(t, nid))
	}
	// Maintenance back seven weeks on: the weeks from 29 March (after the
	// newest made) to two ahead are made, and each takes its rows in.
	m = b.newMaintenance(t, now.Add(49*day), maintenance.Config{})
	made, _, _, err := m.RecordWeeks(ctx)
	require.NoError(t, err)
	require.Equal(t, 7, made, "29 March to 10 May")
	require.Equal(t, "records_w20270412", b.partitionOf(t, ahead))
	require.Equal(t, "records_w20270426", b.partitionOf(t, later))
	require.Zero(t, b.count(t, "records_default"))
	require.Equal(t, 2, b.count(t, "routes"), "their routes are where they were")
}

// A week whose lock cannot be had (a transaction holds records open) is
// left to the next run, after a few tries, and nothing of it changes; the
// rest of retention goes on. Detached weeks are dropped in a transaction
// of their own: none is left behind.
func TestARecordWeekThatCannotBeLockedIsLeftToTheNextRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC)
	weekA := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	_, err := store.New().RecordWeeksCreate(ctx, b.pool, store.RecordWeeksCreateParams{
		FirstDay: pgtype.Date{Time: weekA, Valid: true}, LastDay: pgtype.Date{Time: weekA, Valid: true}, WaitSeconds: 1})
	require.NoError(t, err)
	gone := idPrefixAt(weekA) + "67"
	b.seed(t, seedSpec{rawID: gone, window: day, changed: t0}) // no route: nothing keeps it

	// A transaction that has read records holds its lock: no detach.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT count(*) FROM herald.records`)
	require.NoError(t, err)
	m := b.newMaintenance(t, now, maintenance.Config{FinishedRetention: 7 * day})
	_, _, _, err = m.RecordWeeks(ctx)
	requireSQLState(t, err, "55P03")
	require.Contains(t, b.partitions(t), "week:records_w20270201", "as it was")
	require.Equal(t, "records_w20270201", b.partitionOf(t, gone))
	// DeleteFinished says so in its log and goes on.
	_, err = m.DeleteFinished(ctx)
	require.NoError(t, err)

	require.NoError(t, tx.Rollback(ctx))
	_, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.NotContains(t, b.partitions(t), "week:records_w20270201")
	require.Zero(t, b.count(t, "records WHERE notification_id = '"+gone+"'"))
	var left int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class
		WHERE relnamespace = 'herald'::regnamespace AND relname LIKE '%\_gone'`).Scan(&left))
	require.Zero(t, left, "detached partitions dropped")
}

// A week retired within a week of its end (a caller's `before` that
// recent) is read whole for the records whose idempotency window is still
// open, a short one included: none is retired before its window ends.
func TestAWeekRetiredEarlyKeepsEveryOpenIdempotencyWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// Accepted now (this week's partition, made by the migration), one
	// with a window of an hour, one already over.
	open, over := idAt(time.Now(), "6f"), idAt(time.Now(), "70")
	for id, w := range map[string]time.Duration{open: time.Hour, over: -time.Hour} {
		_, err := b.pool.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
			payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
			VALUES ($1, 't', 'shop', 'users', '{}', $1, 'fp', now(), now(), now(), now() + $2::interval)`, id, w.String())
		require.NoError(t, err)
	}
	week := b.partitionOf(t, open)
	require.Regexp(t, `^records_w\d{8}$`, week)
	// Retire every week up to a month from now, oldest first, until this
	// one has gone.
	for b.partitionOf(t, open) == week {
		rows, err := store.New().RecordWeekStageOne(ctx, b.pool, store.RecordWeekStageOneParams{
			Before: time.Now().Add(30 * day), MergeBelow: 1000, WaitSeconds: 1})
		require.NoError(t, err)
		require.NotEmpty(t, rows)
		swapped, err := store.New().RecordWeekSwapOne(ctx, b.pool, 1)
		require.NoError(t, err)
		require.NotEmpty(t, swapped)
		_, err = store.New().PartitionsDropGone(ctx, b.pool, 1)
		require.NoError(t, err)
	}
	require.Regexp(t, `^records_k\d{8}$`, b.partitionOf(t, open), "kept: its window is open")
	require.Zero(t, b.count(t, "records WHERE notification_id = '"+over+"'"), "its window was over")
}

// idAt is a UUIDv7-shaped id made at t, ending in suffix (hex).
func idAt(t time.Time, suffix string) string { return idPrefixAt(t) + "7000-8000-0000000000" + suffix }

// A staged retirement is brought up to date when it is swapped in: a
// merged kept row deleted since stays deleted, a record of the week that
// must stay since (a route it did not have) is kept. A swap that cannot
// have its lock leaves the week and the staged partition as they are, and
// the next swap goes on from them.
func TestAStagedWeekIsSwappedInAsItIsThen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// Weeks older than the ones the migration made (from the week it ran),
	// so that they are the oldest, retired first.
	weekA := time.Date(2026, 2, 2, 12, 0, 0, 0, time.UTC)
	weekB := weekA.Add(7 * day)
	_, err := store.New().RecordWeeksCreate(ctx, b.pool, store.RecordWeeksCreateParams{
		FirstDay: pgtype.Date{Time: weekA, Valid: true}, LastDay: pgtype.Date{Time: weekB, Valid: true}, WaitSeconds: 1})
	require.NoError(t, err)
	keptA, goneA := idAt(weekA, "71"), idAt(weekA, "72")
	laterB, plainB := idAt(weekB, "73"), idAt(weekB, "74")
	for _, id := range []string{keptA, goneA} {
		b.seed(t, seedSpec{rawID: id, window: day, statuses: []string{"pending"}, changed: t0})
	}
	for _, id := range []string{laterB, plainB} {
		b.seed(t, seedSpec{rawID: id, window: day, changed: t0}) // no routes
	}
	stage := func() []store.RecordWeekStageOneRow {
		t.Helper()
		rows, err := store.New().RecordWeekStageOne(ctx, b.pool, store.RecordWeekStageOneParams{
			Before: weekB.Add(30 * day), MergeBelow: 1000, WaitSeconds: 1})
		require.NoError(t, err)
		return rows
	}
	swap := func() ([]store.RecordWeekSwapOneRow, error) {
		return store.New().RecordWeekSwapOne(ctx, b.pool, 0.1)
	}
	// Week A retired: both its records kept (each has a route).
	require.Len(t, stage(), 1)
	rows, err := swap()
	require.NoError(t, err)
	require.Equal(t, int64(2), rows[0].Kept)
	// Week B staged: nothing of it kept yet, week A's kept partition merged.
	staged := stage()
	require.Equal(t, int64(0), staged[0].Kept)
	require.Equal(t, int64(2), staged[0].Merged)
	// Since: goneA deleted (row by row retention), laterB got a route.
	_, err = b.pool.Exec(ctx, `DELETE FROM herald.routes WHERE notification_id = $1`, goneA)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `DELETE FROM herald.records WHERE notification_id = $1`, goneA)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
		max_attempts, next_attempt_at, created_at, updated_at) VALUES ($1, 'r0', 'email', 'user:u1', 'pending', 3, now(), now(), now())`, laterB)
	require.NoError(t, err)

	// A transaction holding records: the swap gives way, twice, and
	// changes nothing.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT count(*) FROM herald.records`)
	require.NoError(t, err)
	for range 2 {
		_, err = swap()
		requireSQLState(t, err, "55P03")
	}
	require.Contains(t, b.partitions(t), "week:records_w20260209")
	require.NoError(t, tx.Rollback(ctx))
	require.Len(t, stage(), 1, "staged already: the same staged partition")

	rows, err = swap()
	require.NoError(t, err)
	require.Equal(t, int64(1), rows[0].Kept, "laterB, which got a route since")
	require.Equal(t, int64(1), rows[0].Merged, "keptA: goneA was deleted since")
	for id, want := range map[string]string{keptA: "records_k20260209", laterB: "records_k20260209"} {
		require.Equal(t, want, b.partitionOf(t, id))
	}
	require.Zero(t, b.count(t, "records WHERE notification_id IN ('"+goneA+"', '"+plainB+"')"))
	n, err := store.New().PartitionsDropGone(ctx, b.pool, 1)
	require.NoError(t, err)
	require.Equal(t, int32(3), n, "week A's kept partition of before, weeks A and B")
}
