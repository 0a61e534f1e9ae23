package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetention_ReportAgreesWithSQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.RoutesPerIntent = 2
	ctx := context.Background()
	// Windows short enough, and batches small enough, that retention is
	// cut short in a few of them (on serve's pool settings, a batch of
	// 200 took a few milliseconds: all 50 fitted in one 250 ms window).
	const batch = 50
	rep, err := RunRetention(ctx, b.db, b.cfg, RetentionParams{History: 20_000, Window: 100 * time.Millisecond, BatchSize: batch})
	require.NoError(t, err)

	// 10,000 records of two routes; one record in a hundred dead-lettered,
	// both its routes with a dead letter each.
	require.Equal(t, int64(10_000), rep.HistoryRecords)
	require.Equal(t, int64(20_000), rep.HistoryRoutes)
	require.Equal(t, HistoryCount{Records: 10_000, Keys: 10_000, Routes: 20_000, Published: 19_800, DeadLetters: 200}, rep.Before)

	// What is left, counted here independently of the report's query.
	var records, keys, routes, published, deadLetters, stray int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `
		SELECT
			(SELECT count(*) FROM herald.records WHERE producer = $1),
			(SELECT count(*) FROM herald.idempotency_keys WHERE producer = $1),
			(SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id) WHERE r.producer = $1),
			(SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id)
				WHERE r.producer = $1 AND rt.status = 'published'),
			(SELECT count(*) FROM herald.dead_letters),
			(SELECT count(*) FROM herald.routes rt
				WHERE NOT EXISTS (SELECT 1 FROM herald.records r WHERE r.notification_id = rt.notification_id))`,
		historyProducer).Scan(&records, &keys, &routes, &published, &deadLetters, &stray))
	require.Equal(t, HistoryCount{Records: records, Keys: keys, Routes: routes, Published: published, DeadLetters: deadLetters}, rep.After)
	// The published history went with the weeks it finished in, and its
	// records with the weeks they were accepted in, all past retention; the dead-lettered history
	// stays, its records kept from their retired weeks. Every history
	// key's window ended long ago: the sweep took them all. No route lost
	// its record.
	require.Equal(t, HistoryCount{Records: 100, Keys: 0, Routes: 200, Published: 0, DeadLetters: 200}, rep.After)
	require.Zero(t, stray)
	// Retention deleted exactly the finished history: nothing of the live
	// workload, which is too young.
	require.Equal(t, rep.Before.Records-rep.After.Records, rep.RecordsDeleted)
	require.Equal(t, rep.Before.Routes-rep.After.Routes, rep.RoutesDeleted)
	require.Equal(t, int64(19_800), rep.RoutesDeleted)

	// Windows alternate, without retention first and last; the phases
	// are their sums.
	require.GreaterOrEqual(t, len(rep.Windows), 3)
	require.Len(t, rep.Phases, 2)
	var deleted int64
	var with float64
	for i, w := range rep.Windows {
		require.Equal(t, i%2 == 1, w.Retention, "window %d", i)
		require.Positive(t, w.Seconds)
		require.Positive(t, w.WALBytes)
		if w.Retention {
			deleted += w.RecordsDeleted
			with += w.Seconds
		} else {
			require.Zero(t, w.RecordsDeleted)
		}
	}
	require.False(t, rep.Windows[len(rep.Windows)-1].Retention)
	// The runs' own counts miss at most the batch of each run cut short
	// that committed as it was canceled.
	require.LessOrEqual(t, deleted, rep.RecordsDeleted)
	require.GreaterOrEqual(t, deleted, rep.RecordsDeleted-int64(batch*(rep.Phases[1].Windows-1)))
	require.InDelta(t, with, rep.RetentionSeconds, 1e-9)
	for _, p := range rep.Phases {
		require.Positive(t, p.Delivered, p.Phase)
		require.InDelta(t, float64(p.Delivered)/p.Seconds, p.DeliveredPerSec, 1e-6, p.Phase)
	}
	require.Equal(t, len(rep.Windows)/2, rep.Phases[1].Windows)
	require.Greater(t, rep.Phases[1].Windows, 1, "retention was never cut short")
	require.InDelta(t, float64(rep.RoutesDeleted)/rep.RetentionSeconds, rep.RoutesDeletedPerSec, 1e-6)
	require.InDelta(t, rep.RoutesDeletedPerSec/rep.Phases[0].DeliveredPerSec, rep.Headroom, 1e-9)
	require.Len(t, rep.Sizes, 4)
	for _, s := range rep.Sizes {
		require.Positive(t, s.TableBytesBefore, s.Table)
		require.Positive(t, s.IndexBytesBefore, s.Table)
	}

	var out bytes.Buffer
	require.NoError(t, WriteRetention(&out, rep))
	require.Contains(t, out.String(), "19800 routes deleted")
	t.Log("\n" + out.String())
}

func TestRetention_RefusesBadParamsFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, p := range []RetentionParams{{History: -1}, {Window: -time.Second}, {BatchSize: -1}} {
		_, err := RunRetention(ctx, b.db, b.cfg, p)
		require.Error(t, err, "%+v", p)
	}
	var n int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM herald.records`).Scan(&n))
	require.Zero(t, n)
}
