package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

// BenchmarkDispatchTracing dispatches 2,000 routes per iteration through a
// no-op channel (claim, attempt, completion: the hot path) with tracing
// off, and on with 1% and 100% sampling (the SDK batching into a
// discarding exporter, so the export's network cost is not counted).
// Reported: routes/s.
func BenchmarkDispatchTracing(b *testing.B) {
	const routes = 2000
	for _, bc := range []struct {
		name string
		tp   func() trace.TracerProvider
	}{
		{"off", func() trace.TracerProvider { return nil }},
		{"sampled_1pct", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.TraceIDRatioBased(0.01)),
				sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		}},
		{"sampled_100pct", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
				sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pool := pgtemp.NewPool(b)
			ctx := context.Background()
			var total time.Duration
			n := 0
			for b.Loop() {
				b.StopTimer()
				vs := make([]*intake.Validated, routes)
				for i := range vs {
					n++
					in := &intake.Intent{
						NotificationType: "otp.sent", Producer: "bench", IdempotencyKey: fmt.Sprintf("k%d", n),
						TraceID:  "4bf92f3577b34da6a3ce929d0e0e4736",
						Audience: intake.Audience{SMS: []string{"+33612345678"}}, Channels: []string{channel.SMS},
						Content: intake.Content{SMS: &intake.SMSContent{Body: "code 123456"}},
					}
					v, err := intake.Validate(in, intake.Limits{}, time.Now())
					require.NoError(b, err)
					vs[i] = v
				}
				_, err := accept.Accept(ctx, pool, vs, accept.Params{})
				require.NoError(b, err)
				d, err := New(pool, &Config{
					Channels:       map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard, Concurrency: 64}},
					TracerProvider: bc.tp(),
				})
				require.NoError(b, err)
				rctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				b.StartTimer()
				t0 := time.Now()
				go func() { done <- d.Run(rctx) }()
				for {
					var left int
					require.NoError(b, pool.QueryRow(ctx,
						`SELECT count(*) FROM herald.routes WHERE status <> 'published'`).Scan(&left))
					if left == 0 {
						break
					}
					time.Sleep(2 * time.Millisecond)
				}
				total += time.Since(t0)
				b.StopTimer()
				cancel()
				require.NoError(b, <-done)
				b.StartTimer()
			}
			b.ReportMetric(float64(routes*b.N)/total.Seconds(), "routes/s")
		})
	}
}
