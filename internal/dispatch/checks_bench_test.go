package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store"
)

// routeChecks are the CHECK constraints migration 00006 put on records and
// routes: every insert of a route and every update of it (the claim, the
// completion) evaluates them.
var routeChecks = []string{
	"records DROP CONSTRAINT records_priority_check",
	"records DROP CONSTRAINT records_audience_kind_check",
	"records DROP CONSTRAINT records_channels_check",
	"records DROP CONSTRAINT records_recipient_user_ids_check",
	"records DROP CONSTRAINT records_producer_check",
	"routes DROP CONSTRAINT routes_priority_check",
	"routes DROP CONSTRAINT routes_channel_check",
	"routes DROP CONSTRAINT routes_attempts_check",
	"routes DROP CONSTRAINT routes_sms_check",
}

// BenchmarkRouteChecksCost measures what the invariants' CHECK constraints
// cost a route's life: accept (the client's insert statement) and the
// dispatcher's claim and complete, with the constraints and on a database
// where they were dropped. Each iteration runs both, alternating which goes
// first, so the machine's noise hits both alike; it reports each side's
// rates and the ratios with/without. Run with -benchtime=Nx (N of 4 or more).
func BenchmarkRouteChecksCost(b *testing.B) {
	const backlog = 30_000
	var acceptOn, acceptOff, drainOn, drainOff time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		for _, on := range []bool{i%2 == 0, i%2 != 0} {
			accept, drain := routeLife(b, backlog, on)
			if on {
				acceptOn, drainOn = acceptOn+accept, drainOn+drain
			} else {
				acceptOff, drainOff = acceptOff+accept, drainOff+drain
			}
		}
		i++
		b.StartTimer()
	}
	n := float64(backlog * i)
	b.ReportMetric(n/acceptOn.Seconds(), "accepted/s-checks")
	b.ReportMetric(n/acceptOff.Seconds(), "accepted/s-none")
	b.ReportMetric(n/drainOn.Seconds(), "delivered/s-checks")
	b.ReportMetric(n/drainOff.Seconds(), "delivered/s-none")
	b.ReportMetric(acceptOff.Seconds()/acceptOn.Seconds(), "accept-ratio")
	b.ReportMetric(drainOff.Seconds()/drainOn.Seconds(), "deliver-ratio")
}

// routeLife inserts backlog routes on a fresh database (with the checks, or
// without) and drains them with a discarding dispatcher, and returns how
// long each took.
func routeLife(b *testing.B, backlog int, checks bool) (accept, drain time.Duration) {
	tb := &testBundle{pool: pgtemp.NewPool(b), q: store.New()}
	ctx := context.Background()
	if !checks {
		for _, c := range routeChecks {
			_, err := tb.pool.Exec(ctx, "ALTER TABLE herald."+c) // bench setup only
			require.NoError(b, err)
		}
	}
	specs := make([]routeSpec, 1000)
	for i := range specs {
		specs[i] = routeSpec{channel: channel.SMS, ref: "+33612345678", priority: int16(i % 2)}
	}
	start := time.Now()
	for range backlog / len(specs) {
		tb.insert(b, specs...)
	}
	accept = time.Since(start)
	d, err := New(tb.pool, &Config{
		Channels:  map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard, Concurrency: 1000}},
		BatchSize: 500,
	})
	require.NoError(b, err)
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start = time.Now()
	go func() { done <- d.Run(dctx) }()
	for {
		var left int
		// Bench-only progress probe.
		require.NoError(b, tb.pool.QueryRow(ctx,
			"SELECT count(*) FROM herald.routes WHERE next_attempt_at IS NOT NULL").Scan(&left))
		if left == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	drain = time.Since(start)
	cancel()
	require.NoError(b, <-done)
	return accept, drain
}
