package herald_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// The intake benchmarks report accepted intents per second ("intents/s")
// for each door on the test PostgreSQL (fsync off: commits are cheap, so
// the figures compare the doors, not the disk). Each intent is one SMS
// route. Run them side by side with:
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench . -benchtime 3s .

// benchIntent returns a valid one-route intent with a key unique in the
// run.
func benchIntent(run string, i int) *herald.Intent {
	in := smallIntent(i)
	in.IdempotencyKey = fmt.Sprintf("%s-%d", run, i)
	return in
}

func reportIntents(b *testing.B, n int, start time.Time) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "intents/s")
}

func BenchmarkSubmit(b *testing.B) {
	ctx := context.Background()
	c, err := herald.NewClient(pgtemp.NewPool(b), nil)
	require.NoError(b, err)
	defer c.Close()
	run := fmt.Sprint(time.Now().UnixNano())
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := c.Submit(ctx, benchIntent(run, i)); err != nil {
			b.Fatal(err)
		}
	}
	reportIntents(b, b.N, start)
}

// BenchmarkSubmitParallel submits from 8 goroutines per CPU, one intent
// each time, as a busy service's request handlers would.
func BenchmarkSubmitParallel(b *testing.B) {
	ctx := context.Background()
	c, err := herald.NewClient(pgtemp.NewPool(b), nil)
	require.NoError(b, err)
	defer c.Close()
	run := fmt.Sprint(time.Now().UnixNano())
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Submit(ctx, benchIntent(run, int(next.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportIntents(b, b.N, start)
}

// BenchmarkSubmitMany submits batches of 100 and 1,000 intents; the
// campaign=yes runs put every intent of a batch in one campaign (one more
// statement per batch, herald.campaign_join, and an entry in
// records_campaign_idx per intent), for the ratio to intents without one.
func BenchmarkSubmitMany(b *testing.B) {
	for _, tc := range []struct {
		size     int
		campaign bool
	}{{100, false}, {1000, false}, {100, true}, {1000, true}} {
		size := tc.size
		name := fmt.Sprintf("batch=%d", size)
		if tc.campaign {
			name += "/campaign=yes"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c, err := herald.NewClient(pgtemp.NewPool(b), nil)
			require.NoError(b, err)
			defer c.Close()
			run := fmt.Sprint(time.Now().UnixNano())
			batches := make([][]*herald.Intent, b.N)
			for i := range batches {
				batches[i] = make([]*herald.Intent, size)
				for j := range size {
					batches[i][j] = benchIntent(run, i*size+j)
					if tc.campaign {
						batches[i][j].Campaign = "spring-" + run
					}
				}
			}
			b.ResetTimer()
			start := time.Now()
			for _, batch := range batches {
				res, err := c.SubmitMany(ctx, batch)
				if err != nil {
					b.Fatal(err)
				}
				if res[0].Err != nil {
					b.Fatal(res[0].Err)
				}
			}
			reportIntents(b, b.N*size, start)
		})
	}
}

// BenchmarkSQLIntake measures the SQL door: producers INSERT raw JSON
// entries (1,000 per statement), and the intake worker drains them
// (DrainOnce, 500 per transaction). One op is one intent; the time covers
// both the INSERTs and the drain.
func BenchmarkSQLIntake(b *testing.B) {
	ctx := context.Background()
	pool := pgtemp.NewPool(b)
	w, err := sqldoor.NewWorker(pool, nil)
	require.NoError(b, err)
	run := fmt.Sprint(time.Now().UnixNano())
	body := `{"notification_type":"otp","producer":"auth","idempotency_key":"KEY",` +
		`"channels":["sms"],"audience":{"sms":["+14155550123"]},"content":{"sms":{"body":"Your code is 123456"}}}`
	bodies := make([]string, b.N)
	for i := range bodies {
		bodies[i] = strings.Replace(body, "KEY", fmt.Sprintf("%s-%d", run, i), 1)
	}
	b.ResetTimer()
	start := time.Now()
	for chunk := range slices.Chunk(bodies, 1000) {
		if err := benchstore.New().IntakeInsertMany(ctx, pool, chunk); err != nil {
			b.Fatal(err)
		}
	}
	accepted, malformed, err := w.DrainOnce(ctx)
	if err != nil || malformed != 0 || accepted != b.N {
		b.Fatalf("drained %d accepted, %d malformed of %d: %v", accepted, malformed, b.N, err)
	}
	reportIntents(b, b.N, start)
}
