package accept

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

// oneRouteEntry is an intent of one webhook route, as herald bench's.
const oneRouteEntry = `{"notification_type": "order.shipped", "producer": "shop", "idempotency_key": "k",
  "audience": {"webhook": ["https://hooks.example.com/orders"]}, "channels": ["webhook"],
  "content": {"webhook": {"order": 9, "note": "` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"}}}`

// BenchmarkAcceptBatch stores batches of 1,000 new intents (one webhook
// route each, as herald bench's default workload) through a pool
// with ON CONFLICT (no Optimism) and with the plain insert (an Optimism),
// each into a database of its own, alternating batch by batch so that the
// machine's drift falls on both alike. The intents are validated outside
// the timings. It reports each one's time per intent (the statement's
// round trip, pgx's encoding included), and their ratio.
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench AcceptBatch -benchtime 30x ./internal/accept
func BenchmarkAcceptBatch(b *testing.B) {
	const batch = 1000
	ctx := context.Background()
	type side struct {
		pool     *pgxpool.Pool
		optimism *Optimism
		took     time.Duration
	}
	sides := []*side{{pool: pgtemp.NewPool(b)}, {pool: pgtemp.NewPool(b), optimism: new(Optimism)}}
	b.ResetTimer()
	for i := range b.N {
		for k, s := range sides {
			vs := make([]*intake.Validated, batch)
			for j := range vs {
				in, err := intake.DecodeRaw([]byte(oneRouteEntry), intake.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				in.IdempotencyKey = fmt.Sprintf("k%d-%d-%d", i, k, j)
				v, err := intake.Validate(in, intake.Limits{}, testNow)
				if err != nil {
					b.Fatal(err)
				}
				vs[j] = v
			}
			start := time.Now()
			if _, err := Accept(ctx, s.pool, vs, Params{Optimism: s.optimism}); err != nil {
				b.Fatal(err)
			}
			s.took += time.Since(start)
		}
	}
	b.StopTimer()
	if fresh, fellBack := sides[1].optimism.Counts(); fresh != int64(b.N) || fellBack != 0 {
		b.Fatalf("plain inserts %d, fallbacks %d; want %d and 0", fresh, fellBack, b.N)
	}
	n := float64(b.N * batch)
	b.ReportMetric(float64(sides[0].took.Microseconds())/n, "µs/intent-on-conflict")
	b.ReportMetric(float64(sides[1].took.Microseconds())/n, "µs/intent-plain")
	b.ReportMetric(float64(sides[1].took)/float64(sides[0].took), "plain/on-conflict")
}
