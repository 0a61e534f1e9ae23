package maintenance_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
)

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
func TestSweepKeys_DeletesExpiredByRange(t *testing.T) {
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
