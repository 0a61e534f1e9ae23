package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/internal/pause"
)

// summary is what the database says about a phase's finished work.
type summary struct {
	routes, published, attempts int64
	p50, p95, p99               float64 // seconds
	lastTerminal                time.Time
	// receipts are the receipts mode's figures, nil without.
	receipts *ReceiptFigures
	// spans is the spans the engine exported; nil with tracing off.
	spans *int64
}

// subject is one engine under measurement: herald or River.
type subject interface {
	name() string
	settings() string
	// start starts the engine's workers.
	start(ctx context.Context) error
	// submit submits intents [from, to) as one batch.
	submit(ctx context.Context, from, to int) error
	// submitIdle submits probe i on its own.
	submitIdle(ctx context.Context, i int) error
	// open returns the number of routes (jobs) not terminal yet.
	open(ctx context.Context) (int64, error)
	// summarize reads the measured routes' figures.
	summarize(ctx context.Context) (summary, error)
	// peakRSS returns the engine processes' peak RSS, before stop.
	peakRSS() []int64
	// stop stops the workers and closes every connection of the phase.
	stop() error
	// owns reports whether a table belongs to this engine's cost.
	owns(table string) bool
}

// runPhase measures one engine: the workload, then idle pick-up probes,
// with the Postgres counters read around both.
func runPhase(ctx context.Context, db *Database, cfg *Config, s subject, sk *sink) (Row, error) {
	row := Row{Engine: s.name(), Settings: s.settings(), Intents: cfg.Intents}
	log := cfg.Logger.With("engine", s.name())
	ResetPeakRSS()
	if err := s.start(ctx); err != nil {
		return row, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = s.stop()
		}
	}()

	if err := db.checkpoint(ctx); err != nil {
		return row, err
	}
	// The WAL the phase writes is kept until its index entries are counted.
	wal := db.wal
	if wal != nil {
		release, err := wal.reserve(ctx)
		if err != nil {
			return row, err
		}
		defer release()
	}
	before, err := takeSnapshot(ctx, db.Pool)
	if err != nil {
		return row, err
	}
	cpuBefore, err := readCPU(ctx, db.Pool)
	if err != nil {
		return row, err
	}
	sk.attempts.Store(0)
	sk.delivered.Store(0)
	sk.requests.Store(0)
	sk.rejected.Store(0)

	log.Info("bench: workload", "intents", cfg.Intents, "routes", cfg.Intents*cfg.RoutesPerIntent)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	next := make(chan int)
	g.Go(func() error {
		defer close(next)
		for from := 0; from < cfg.Intents; from += cfg.Batch {
			select {
			case next <- from:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for range cfg.Producers {
		g.Go(func() error {
			for from := range next {
				if err := s.submit(gctx, from, min(from+cfg.Batch, cfg.Intents)); err != nil {
					return fmt.Errorf("submit batch at %d: %w", from, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return row, err
	}
	row.AcceptSeconds = time.Since(start).Seconds()
	meanwhile := sk.delivered.Load()
	row.DeliveredWhileAccepting = &meanwhile
	log.Info("bench: accepted", "seconds", row.AcceptSeconds, "delivered_meanwhile", meanwhile)

	if err := waitDone(ctx, s, sk, int64(cfg.Intents*cfg.RoutesPerIntent)); err != nil {
		return row, err
	}
	if sk.delivered.Load() == 0 {
		// Every route is done and the channel saw none: they bypassed it
		// (serve's discard driver), so the split is unknown.
		row.DeliveredWhileAccepting = nil
	}
	// The idle probes run after the workload, on the engine idle again and
	// on tables the size of a real deployment's: run first, on freshly
	// emptied tables, they made herald's prepared statements cache generic
	// plans for a one-page routes table (a sequential scan per completion)
	// until autovacuum's ANALYZE, which a short run never reaches. Their
	// few rows are in the Postgres figures (50 of 100,000 by default).
	if cfg.IdleSamples > 0 {
		log.Info("bench: idle pick-up probes", "samples", cfg.IdleSamples)
		lat, err := idleProbes(ctx, s, sk, cfg.IdleSamples)
		if err != nil {
			return row, err
		}
		row.IdleP50ms, row.IdleP95ms = ms(percentile(lat, 0.50)), ms(percentile(lat, 0.95))
		if err := waitDone(ctx, s, sk, 0); err != nil {
			return row, err
		}
	}
	if cfg.httpDelivery() {
		req, rej := sk.requests.Load(), sk.rejected.Load()
		row.HTTPRequests, row.HTTPRejected = &req, &rej
		if rej > 0 {
			log.Warn("bench: the sink rejected requests", "rejected", rej, "last", *sk.rejection.Load())
		}
	}
	row.PeakRSS = s.peakRSS()
	stopped = true
	if err := s.stop(); err != nil {
		return row, err
	}
	// The phase's backends flush their table counters as they exit, which
	// a closed pool does not wait for: read them only once those backends
	// are gone, or a run on a loaded machine misses a batch's counts.
	own := 0 // the bench's connections beyond its pool: the WAL slot's
	if wal != nil {
		own = 1
	}
	if err := waitBackendsGone(ctx, db.Pool, own); err != nil {
		return row, err
	}
	cpuAfter, err := readCPU(ctx, db.Pool)
	if err != nil {
		return row, err
	}
	row.ClientCPUSeconds = (cpuAfter.self - cpuBefore.self).Seconds()
	if cpuBefore.postgresOK && cpuAfter.postgresOK {
		row.PostgresCPUSeconds = (cpuAfter.postgres - cpuBefore.postgres).Seconds()
	}
	sum, err := s.summarize(ctx)
	if err != nil {
		return row, err
	}
	after, err := takeSnapshot(ctx, db.Pool)
	if err != nil {
		return row, err
	}
	row.Cost = cost(before, after, s.owns)
	if wal != nil {
		row.Cost.Indexes, err = wal.indexCosts(ctx, &row.Cost, before.lsn, after.lsn)
		if err != nil {
			return row, fmt.Errorf("count index entries: %w", err)
		}
		var n int64
		for _, ic := range row.Cost.Indexes {
			n += ic.Tuples
		}
		row.Cost.IndexTuples = &n
	}
	if row.Cleanup, err = vacuumAfter(ctx, db.Pool, after, row.Cost.Tables); err != nil {
		return row, err
	}
	row.Routes, row.Published, row.Attempts = sum.routes, sum.published, sum.attempts
	row.Receipts = sum.receipts
	row.TraceSpans = sum.spans
	row.P50ms, row.P95ms, row.P99ms = sum.p50*1000, sum.p95*1000, sum.p99*1000
	row.EndToEndSeconds = sum.lastTerminal.Sub(start).Seconds()
	row.AcceptedPerSec = float64(cfg.Intents) / row.AcceptSeconds
	row.DeliveredPerSec = float64(sum.published) / row.EndToEndSeconds
	row.HOTUpdatesPerRoute = perRoute(&row, row.Cost.HOTUpdates())
	if row.Cost.IndexTuples != nil {
		v := perRoute(&row, *row.Cost.IndexTuples)
		row.IndexTuplesPerRoute = &v
	}
	log.Info("bench: done", "delivered_per_sec", row.DeliveredPerSec, "p50_ms", row.P50ms)
	return row, nil
}

// waitDone waits until the sink has seen at least want deliveries and the
// engine reports nothing open. It polls the database slowly until the sink
// says the work is nearly done, so polling does not load the run.
func waitDone(ctx context.Context, s subject, sk *sink, want int64) error {
	for i := 0; ; i++ {
		// Every 20th round the database is asked anyway: a channel that
		// bypasses the sink (serve's discard driver) is counted there.
		if sk.delivered.Load() >= want || i%20 == 19 {
			n, err := s.open(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if err := pause.For(ctx, 5*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if err := pause.For(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// idleProbes submits one intent at a time to the idle engine and measures
// from the submit's return to the start of its delivery.
func idleProbes(ctx context.Context, s subject, sk *sink, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for i := range n {
		// A pause between probes, so each finds the engine idle (its
		// claim loop asleep) rather than still polling from the last one.
		if err := pause.For(ctx, time.Duration(50+rand.IntN(100))*time.Millisecond); err != nil {
			return nil, err
		}
		sk.drainPicked()
		if err := s.submitIdle(ctx, i); err != nil {
			return nil, fmt.Errorf("idle probe: %w", err)
		}
		returned := time.Now()
		select {
		case at := <-sk.picked:
			lat = append(lat, max(at.Sub(returned), 0))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("idle probe %d: not picked up within 30s", i)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return lat, nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p*float64(len(s)-1) + 0.5)
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// once wraps a stop function so it runs at most once.
func once(f func() error) func() error {
	var o sync.Once
	var err error
	return func() error {
		o.Do(func() { err = f() })
		return err
	}
}

// otherBackendsSQL counts the client backends connected to this database
// (exception: a server view, nothing sqlc needs to type).
const otherBackendsSQL = `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND backend_type = 'client backend'`

// waitBackendsGone waits until no client backend is connected to the
// bench's database beyond pool's own connections and own others: a
// backend flushes its statistics before it leaves pg_stat_activity. It
// gives up quietly after backendsGoneWait (a connection of someone else's
// may stay).
func waitBackendsGone(ctx context.Context, pool *pgxpool.Pool, own int) error {
	deadline := time.Now().Add(backendsGoneWait)
	for {
		var n int64
		if err := pool.QueryRow(ctx, otherBackendsSQL).Scan(&n); err != nil {
			return fmt.Errorf("count backends: %w", err)
		}
		if n <= int64(pool.Stat().TotalConns())+int64(own) || time.Now().After(deadline) {
			return nil
		}
		if err := pause.For(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// backendsGoneWait bounds waitBackendsGone.
const backendsGoneWait = 10 * time.Second
