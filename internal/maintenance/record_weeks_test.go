package maintenance_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/store"
)

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

// idAt is a UUIDv7-shaped id made at t, ending in suffix (hex).
func idAt(t time.Time, suffix string) string { return idPrefixAt(t) + "7000-8000-0000000000" + suffix }

// Records go with the week they were accepted in: a week
// that ended more than the retention and a week ago is retired whole,
// keeping in a kept partition the records that must stay (a route left
// anywhere: dead-lettered, in flight, or finished in a week not dropped
// yet; or an idempotency window still open), merged with the kept
// partition below while that is small; the kept records are then deleted
// one by one as their routes go. Every route keeps its record, and a kept
// record is read by its id as any other.
func TestRecordWeeks_RetiredKeepingWhatStays(t *testing.T) {
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
func TestRecordWeeks_KeptPartitionsMerge(t *testing.T) {
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
func TestRecordWeeks_TakeRowsFromDefault(t *testing.T) {
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
func TestRecordWeeks_LockedWeekWaits(t *testing.T) {
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
func TestRecordWeeks_EarlyKeepsOpenKeys(t *testing.T) {
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

// A staged retirement is brought up to date when it is swapped in: a
// merged kept row deleted since stays deleted, a record of the week that
// must stay since (a route it did not have) is kept. A swap that cannot
// have its lock leaves the week and the staged partition as they are, and
// the next swap goes on from them.
func TestRecordWeeks_StagedWeekSwappedAsIs(t *testing.T) {
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
