package metrics_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/metrics"
)

// BenchmarkBacklogCollect measures one scrape (the backlog query and the
// exposition) over a backlog of 10k, 100k and 1M due routes spread over
// three channels, beside 500k published routes, after VACUUM ANALYZE (as
// autovacuum leaves a queue table), so routes_due_idx is scanned index-only
// and the finished rows cost nothing.
func BenchmarkBacklogCollect(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			pool := pgtemp.NewPool(b)
			ctx := context.Background()
			// Test-only SQL: a backlog of n pending routes under one record.
			_, err := pool.Exec(ctx, `
				INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
					payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at,
					idempotency_expires_at)
				VALUES ('n1', 't', 'p', 'users', '{}', 'k', 'fp', now(), now(), now(), now())`)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `
				INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
					max_attempts, next_attempt_at, priority, created_at, updated_at)
				SELECT 'n1', 'r' || g, (ARRAY['email', 'sms', 'webhook'])[1 + g % 3], 'u', 'pending', 0,
					now() - (g % 600) * interval '1 second', (g % 2)::smallint, now(), now()
				FROM generate_series(1, $1::int) AS g`, n)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `
				INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
					max_attempts, next_attempt_at, published_at, created_at, updated_at)
				SELECT 'n1', 'p' || g, (ARRAY['email', 'sms', 'webhook'])[1 + g % 3], 'u', 'published', 0,
					NULL, now(), now(), now()
				FROM generate_series(1, 500000) AS g`)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `VACUUM ANALYZE herald.routes`)
			require.NoError(b, err)

			c := metrics.NewBacklogCollector(pool, nil)
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			b.ResetTimer()
			for b.Loop() {
				fams, err := reg.Gather()
				if err != nil || len(fams) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
