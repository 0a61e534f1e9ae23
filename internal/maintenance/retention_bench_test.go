package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/maintenance"
)

// BenchmarkDeleteFinished measures retention deleting 100k finished
// notifications (two published routes each) in batches of 1000, among 20k
// interleaved ones that must stay (a pending route each), all of the same
// age. Reported as notifications/s.
func BenchmarkDeleteFinished(b *testing.B) {
	const done, kept = 100_000, 20_000
	for b.Loop() {
		b.StopTimer()
		pool := pgtemp.NewPool(b)
		ctx := context.Background()
		// Test-only SQL: the dispatcher's outcome, in bulk.
		_, err := pool.Exec(ctx, `
			INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
				payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at,
				idempotency_expires_at)
			SELECT 'n' || lpad(g::text, 7, '0'), 't', 'p', 'users', '{}', 'k' || g, 'fp', $1, $1, $1, $1::timestamptz + interval '1 day'
			FROM generate_series(1, $2::int) AS g`, t0, done+kept)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `
			INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
				max_attempts, next_attempt_at, published_at, created_at, updated_at)
			SELECT 'n' || lpad(g::text, 7, '0'), r, 'email', 'u',
				CASE WHEN g % 6 = 0 AND r = 'b' THEN 'pending' ELSE 'published' END, 0,
				CASE WHEN g % 6 = 0 AND r = 'b' THEN $1::timestamptz END,
				CASE WHEN g % 6 = 0 AND r = 'b' THEN NULL ELSE $1::timestamptz END, $1, $1
			FROM generate_series(1, $2::int) AS g, (VALUES ('a'), ('b')) AS v(r)`, t0, done+kept)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `VACUUM ANALYZE herald.records, herald.routes`)
		require.NoError(b, err)
		cfg := maintenance.Config{NowFunc: func() time.Time { return t0.Add(30 * day) }}
		m, err := maintenance.New(pool, &cfg)
		require.NoError(b, err)

		b.StartTimer()
		start := time.Now()
		n, err := m.DeleteFinished(ctx)
		elapsed := time.Since(start)
		b.StopTimer()
		require.NoError(b, err)
		require.Equal(b, int64(done), n)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "notifications/s")
		b.StartTimer()
	}
}
