package dispatch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// BenchmarkPickupLatencyIdle measures, on an idle dispatcher, the time from
// a producer's submit (the client's own accept statement, which sends the
// herald_routes hint) to the start of the route's delivery. The poll
// fallback is set to a minute, so only the NOTIFY path can explain a fast
// pick-up. Reported: p50, p90 and p99 in milliseconds.
func BenchmarkPickupLatencyIdle(b *testing.B) {
	pool := pgtemp.NewPool(b)
	started := make(chan time.Time, 1)
	d, err := New(pool, &Config{
		Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.DelivererFunc(
			func(context.Context, *channel.Message) channel.Outcome {
				started <- time.Now()
				return channel.Outcome{Class: channel.Delivered}
			})}},
		PollInterval: time.Minute,
	})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(300 * time.Millisecond) // LISTEN is up, first idle sleep begun

	hint := channel.SMS
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		in := &intake.Intent{
			NotificationType: "otp.sent", Producer: "bench", IdempotencyKey: fmt.Sprintf("k%d", i),
			Audience: intake.Audience{SMS: []string{"+33612345678"}}, Channels: []string{channel.SMS},
			Content: intake.Content{SMS: &intake.SMSContent{Body: "code 123456"}},
		}
		v, err := intake.Validate(in, intake.Limits{}, time.Now())
		require.NoError(b, err)
		t0 := time.Now()
		_, err = accept.Accept(ctx, pool, []*intake.Validated{v}, accept.Params{Notify: &hint})
		require.NoError(b, err)
		lat = append(lat, (<-started).Sub(t0))
		b.StopTimer()
		time.Sleep(20 * time.Millisecond) // completion written; idle again
		b.StartTimer()
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(.50), "p50-ms")
	b.ReportMetric(pct(.90), "p90-ms")
	b.ReportMetric(pct(.99), "p99-ms")
}

// BenchmarkDispatchThroughputDiscard measures routes/s through claim,
// (no-op) delivery and complete: a backlog of routes is inserted, then a
// dispatcher with channel.Discard drains it. Run with -benchtime=1x; the
// backlog size is fixed so the figure does not depend on b.N.
func BenchmarkDispatchThroughputDiscard(b *testing.B) {
	const backlog = 50_000
	for _, batch := range []int{100, 500, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				tb := &testBundle{pool: pgtemp.NewPool(b), q: store.New()}
				specs := make([]routeSpec, 5000)
				for i := range specs {
					specs[i] = routeSpec{channel: channel.SMS, ref: "+33612345678", priority: int16(i % 2)}
				}
				for range backlog / len(specs) {
					tb.insert(b, specs...)
				}
				_, err := tb.pool.Exec(context.Background(), "VACUUM ANALYZE herald.routes") // bench setup only
				require.NoError(b, err)
				d, err := New(tb.pool, &Config{
					Channels:  map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard, Concurrency: 2 * batch}},
					BatchSize: batch,
				})
				require.NoError(b, err)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				b.StartTimer()
				start := time.Now()
				go func() { done <- d.Run(ctx) }()
				for {
					var left int
					// Bench-only progress probe.
					require.NoError(b, tb.pool.QueryRow(context.Background(),
						"SELECT count(*) FROM herald.routes WHERE next_attempt_at IS NOT NULL").Scan(&left))
					if left == 0 {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				elapsed := time.Since(start)
				b.StopTimer()
				cancel()
				require.NoError(b, <-done)
				b.ReportMetric(backlog/elapsed.Seconds(), "routes/s")
				b.StartTimer()
			}
		})
	}
}
