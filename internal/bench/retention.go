package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// Defaults of the retention mode.
const (
	// DefaultHistory is the finished history the retention mode fills, in
	// routes: issue 14's ten million.
	DefaultHistory = 10_000_000
	// DefaultBaseline is how long the retention mode measures the engine
	// without retention, before and after it runs.
	DefaultBaseline = 30 * time.Second
)

// The history's shape: accepted over 30 days that ended 8 days ago (past
// maintenance's default seven days of finished retention and the 48-hour
// idempotency window), one record in historyDeadEvery dead-lettered and
// kept, as dead letters are until an operator acts.
const (
	historyProducer  = "herald-bench-history"
	historyAge       = 38 * 24 * time.Hour
	historySpan      = 30 * 24 * time.Hour
	historyDeadEvery = 100
	// historyChunk is the records one fill statement inserts.
	historyChunk = 250_000
	// retentionWarmup is how long the engine runs before the first phase.
	retentionWarmup = 5 * time.Second
)

// RetentionPhase is the live engine's figures over one phase of the
// retention mode.
type RetentionPhase struct {
	// Phase is "before" (no retention), "retention" (maintenance's
	// finished retention running) or "after" (no retention again, while
	// autovacuum cleans up behind it).
	Phase     string  `json:"phase"`
	Seconds   float64 `json:"seconds"`
	Delivered int64   `json:"delivered"`
	// DeliveredPerSec is the live engine's routes delivered per second.
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	// Cost is what the phase cost Postgres: the engine's work, and in the
	// retention phase retention's too (WAL is the whole cluster's).
	Cost PGCost `json:"pg_cost"`
}

// HistoryCount is the history's rows at one moment, counted with SQL.
type HistoryCount struct {
	Records     int64 `json:"records"`
	Routes      int64 `json:"routes"`
	Published   int64 `json:"published"`
	DeadLetters int64 `json:"dead_letters"`
}

// RetentionSize is one table's size before retention and after the run.
type RetentionSize struct {
	Table            string `json:"table"`
	TableBytesBefore int64  `json:"table_bytes_before"`
	IndexBytesBefore int64  `json:"index_bytes_before"`
	TableBytesAfter  int64  `json:"table_bytes_after"`
	IndexBytesAfter  int64  `json:"index_bytes_after"`
}

// RetentionReport is the retention mode's result.
type RetentionReport struct {
	// HistoryRoutes and HistoryRecords are what was filled.
	HistoryRoutes   int64   `json:"history_routes"`
	HistoryRecords  int64   `json:"history_records"`
	RoutesPerIntent int     `json:"routes_per_intent"`
	FillSeconds     float64 `json:"fill_seconds"`
	// BatchSize is maintenance's retention batch size used.
	BatchSize int `json:"batch_size"`
	// Before and After are the history's rows before retention ran and
	// after the run.
	Before HistoryCount `json:"before"`
	After  HistoryCount `json:"after"`
	// RecordsDeleted is what maintenance's DeleteFinished returned;
	// RoutesDeleted is Before.Routes - After.Routes (the live workload's
	// routes are too young to be deleted).
	RecordsDeleted int64 `json:"records_deleted"`
	RoutesDeleted  int64 `json:"routes_deleted"`
	// RetentionSeconds is how long DeleteFinished ran.
	RetentionSeconds     float64 `json:"retention_seconds"`
	RoutesDeletedPerSec  float64 `json:"routes_deleted_per_sec"`
	RecordsDeletedPerSec float64 `json:"records_deleted_per_sec"`
	// RetentionWALBytes estimates the WAL retention wrote: the retention
	// phase's WAL less the engine's WAL rate before it over as long.
	RetentionWALBytes  int64            `json:"retention_wal_bytes"`
	WALPerRouteDeleted float64          `json:"wal_bytes_per_route_deleted"`
	Phases             []RetentionPhase `json:"phases"`
	Sizes              []RetentionSize  `json:"sizes"`
	// Headroom is RoutesDeletedPerSec over the engine's delivered/s
	// before retention: issue 14 asks for at least 2.
	Headroom float64 `json:"headroom"`
	// EngineCost is the share of its delivered/s the live engine lost
	// while retention ran, against before: issue 14 allows 0.10.
	EngineCost float64 `json:"engine_cost"`
	// EngineCostVsAfter is the same against the after phase.
	EngineCostVsAfter float64  `json:"engine_cost_vs_after"`
	Notes             []string `json:"notes"`
}

// RetentionParams are the retention mode's settings.
type RetentionParams struct {
	// History is the finished history filled, in routes. Defaults to
	// DefaultHistory.
	History int
	// Baseline is how long the engine is measured without retention,
	// before and after. Defaults to DefaultBaseline.
	Baseline time.Duration
	// BatchSize is maintenance's retention batch size (0: its default).
	BatchSize int
}

// RunRetention fills a finished history of p.History routes (with their
// records, past their retention), then, while the engine delivers the
// workload steadily, measures it for p.Baseline without retention, then
// while maintenance's finished retention (DeleteFinished, as the periodic
// job runs it) deletes the history, then for p.Baseline without again. It
// returns an error for a bad parameter, and the first failure of the fill,
// the engine, the producers or retention.
func RunRetention(ctx context.Context, db *Database, cfg *Config, p RetentionParams) (*RetentionReport, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	switch {
	case p.History < 0:
		return nil, fmt.Errorf("History must not be negative, not %d", p.History)
	case p.Baseline < 0:
		return nil, fmt.Errorf("Baseline must not be negative, not %s", p.Baseline)
	case p.BatchSize < 0:
		return nil, fmt.Errorf("BatchSize must not be negative, not %d", p.BatchSize)
	}
	if p.History == 0 {
		p.History = DefaultHistory
	}
	if p.Baseline == 0 {
		p.Baseline = DefaultBaseline
	}
	if p.BatchSize == 0 {
		p.BatchSize = maintenance.DefaultBatchSize
	}
	q := benchstore.New()
	rep := &RetentionReport{RoutesPerIntent: c.RoutesPerIntent, BatchSize: p.BatchSize}
	oldest := time.Now().Add(-historyAge).Truncate(time.Millisecond)
	// Everything created before this is history: the live workload's routes
	// are created now.
	historyEnd := oldest.Add(historySpan + 24*time.Hour)
	countParams := benchstore.BenchHistoryCountParams{Producer: historyProducer, CreatedBefore: historyEnd}

	records := max(int64(p.History/c.RoutesPerIntent), 1)
	secs, err := fillHistory(ctx, db, &c, records, oldest)
	if err != nil {
		return nil, err
	}
	rep.HistoryRecords, rep.HistoryRoutes, rep.FillSeconds = records, records*int64(c.RoutesPerIntent), secs
	if err := q.BenchAnalyze(ctx, db.Pool); err != nil {
		return nil, fmt.Errorf("vacuum history: %w", err)
	}
	if err := db.checkpoint(ctx); err != nil {
		return nil, err
	}
	before, err := q.BenchHistoryCount(ctx, db.Pool, countParams)
	if err != nil {
		return nil, fmt.Errorf("count history: %w", err)
	}
	rep.Before = HistoryCount(before)
	sizesBefore, err := takeSnapshot(ctx, db.Pool)
	if err != nil {
		return nil, err
	}
	c.Logger.Info("bench: history ready", "records", before.Records, "routes", before.Routes, "dead_letters", before.DeadLetters)

	// Retention's own connections, as a serve process's maintenance has.
	rpool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		return nil, fmt.Errorf("connect retention: %w", err)
	}
	defer rpool.Close()
	m, err := maintenance.New(rpool, &maintenance.Config{Logger: c.Logger, BatchSize: p.BatchSize})
	if err != nil {
		return nil, err
	}

	sk := newSink(c.Latency, c.FailShare)
	id := fmt.Sprintf("retention%d", time.Now().UnixNano())
	h := newHeraldSubject(&c, db, sk, newWorkload(&c, id, c.RoutesPerIntent))
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	defer h.stop()
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	prodErr := steadyProducer(pctx, h, sk, &c)
	if err := sleep(ctx, retentionWarmup); err != nil {
		return nil, err
	}

	// One phase: run until done says so, with the counters read around it.
	phase := func(name string, done <-chan struct{}) (RetentionPhase, error) {
		ph := RetentionPhase{Phase: name}
		snapBefore, err := takeSnapshot(ctx, db.Pool)
		if err != nil {
			return ph, err
		}
		d0, start := sk.delivered.Load(), time.Now()
		c.Logger.Info("bench: retention phase", "phase", name)
		select {
		case <-ctx.Done():
			return ph, ctx.Err()
		case err := <-prodErr:
			if err == nil {
				err = errors.New("stopped early")
			}
			return ph, fmt.Errorf("producer: %w", err)
		case <-done:
		}
		ph.Seconds, ph.Delivered = time.Since(start).Seconds(), sk.delivered.Load()-d0
		ph.DeliveredPerSec = float64(ph.Delivered) / ph.Seconds
		snapAfter, err := takeSnapshot(ctx, db.Pool)
		if err != nil {
			return ph, err
		}
		ph.Cost = cost(snapBefore, snapAfter, func(string) bool { return true })
		c.Logger.Info("bench: retention phase done", "phase", name, "seconds", ph.Seconds, "delivered_per_sec", ph.DeliveredPerSec)
		return ph, nil
	}
	after := func(d time.Duration) <-chan struct{} {
		ch := make(chan struct{})
		time.AfterFunc(d, func() { close(ch) })
		return ch
	}

	pb, err := phase("before", after(p.Baseline))
	if err != nil {
		return nil, err
	}
	ran := make(chan struct{})
	var deleted int64
	var retErr error
	var retStart, retEnd time.Time
	rctx, stopRetention := context.WithCancel(ctx)
	defer stopRetention()
	go func() {
		defer close(ran)
		retStart = time.Now()
		deleted, retErr = m.DeleteFinished(rctx)
		retEnd = time.Now()
	}()
	pr, err := phase("retention", ran)
	if err != nil {
		stopRetention()
		<-ran
		return nil, err
	}
	if retErr != nil {
		return nil, fmt.Errorf("retention: %w", retErr)
	}
	pa, err := phase("after", after(p.Baseline))
	if err != nil {
		return nil, err
	}
	stopProducers()
	if err := h.stop(); err != nil {
		return nil, fmt.Errorf("stop herald: %w", err)
	}
	rep.Phases = []RetentionPhase{pb, pr, pa}

	afterCount, err := q.BenchHistoryCount(ctx, db.Pool, countParams)
	if err != nil {
		return nil, fmt.Errorf("count history: %w", err)
	}
	rep.After = HistoryCount(afterCount)
	sizesAfter, err := takeSnapshot(ctx, db.Pool)
	if err != nil {
		return nil, err
	}
	for _, t := range []string{"records", "routes", "dead_letters"} {
		b, a := sizesBefore.tables[t], sizesAfter.tables[t]
		rep.Sizes = append(rep.Sizes, RetentionSize{Table: t,
			TableBytesBefore: b.TableBytes, IndexBytesBefore: b.IndexBytes,
			TableBytesAfter: a.TableBytes, IndexBytesAfter: a.IndexBytes})
	}

	rep.RecordsDeleted = deleted
	rep.RoutesDeleted = rep.Before.Routes - rep.After.Routes
	rep.RetentionSeconds = retEnd.Sub(retStart).Seconds()
	rep.RoutesDeletedPerSec = float64(rep.RoutesDeleted) / rep.RetentionSeconds
	rep.RecordsDeletedPerSec = float64(rep.RecordsDeleted) / rep.RetentionSeconds
	engineWAL := float64(pb.Cost.WALBytes) / pb.Seconds * pr.Seconds
	rep.RetentionWALBytes = pr.Cost.WALBytes - int64(engineWAL)
	if rep.RoutesDeleted > 0 {
		rep.WALPerRouteDeleted = float64(rep.RetentionWALBytes) / float64(rep.RoutesDeleted)
	}
	if pb.DeliveredPerSec > 0 {
		rep.Headroom = rep.RoutesDeletedPerSec / pb.DeliveredPerSec
		rep.EngineCost = 1 - pr.DeliveredPerSec/pb.DeliveredPerSec
	}
	if pa.DeliveredPerSec > 0 {
		rep.EngineCostVsAfter = 1 - pr.DeliveredPerSec/pa.DeliveredPerSec
	}
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("history: %d records of %d route(s) each, accepted evenly over 30 days that ended 8 days ago, published; one record in %d dead-lettered (kept: dead-letter retention is off by default); filled with generate_series in statements of %d records, then VACUUM ANALYZEd and CHECKPOINTed",
			records, c.RoutesPerIntent, historyDeadEvery, historyChunk),
		"retention: internal/maintenance's DeleteFinished with the default 7-day finished retention, run once to the end on a pool of its own while the engine delivers; producers keep about 20,000 routes ahead of the deliveries",
		"headroom: routes deleted per second over the engine's routes delivered per second before retention (issue 14: at least 2); engine cost: 1 - delivered/s during retention over before (issue 14: at most 0.10); after is the engine again without retention, while autovacuum cleans up behind it",
		"retention WAL: the retention phase's WAL (the whole cluster's) less the engine's WAL rate before it over as long: an estimate",
		"sizes: before retention, and after the after phase (the live workload's rows included); deleted rows' space is reused, not returned to the file system",
	)
	return rep, nil
}

// fillHistory inserts n finished records (and their routes) of
// historyProducer, accepted over historySpan from oldest, in statements of
// historyChunk records, and returns how long it took.
func fillHistory(ctx context.Context, db *Database, c *Config, n int64, oldest time.Time) (float64, error) {
	w := newWorkload(c, "history", c.RoutesPerIntent)
	v, err := intake.Validate(new(w.intent(historyProducer, 0)), intake.Limits{}.WithDefaults(), time.Now())
	if err != nil {
		return 0, fmt.Errorf("validate history intent: %w", err)
	}
	arg := benchstore.BenchHistoryFillParams{
		Producer:    historyProducer,
		PayloadJson: string(v.PayloadJSON),
		Channel:     channel.Webhook,
		Oldest:      oldest,
		SpanSeconds: historySpan.Seconds(),
		N:           n,
		DeadEvery:   historyDeadEvery,
	}
	for _, r := range v.Routes {
		arg.RouteIds = append(arg.RouteIds, r.RouteID)
		arg.RecipientRefs = append(arg.RecipientRefs, r.RecipientRef)
	}
	q := benchstore.New()
	start := time.Now()
	for from := int64(0); from < n; from += historyChunk {
		arg.FromN, arg.ToN = from, min(from+historyChunk, n)
		if err := q.BenchHistoryFill(ctx, db.Pool, arg); err != nil {
			return 0, fmt.Errorf("fill history records %d to %d: %w", arg.FromN, arg.ToN, err)
		}
		c.Logger.Info("bench: history", "records", arg.ToN, "of", n, "seconds", time.Since(start).Round(time.Second))
	}
	return time.Since(start).Seconds(), nil
}

// WriteRetention prints the retention report.
func WriteRetention(w io.Writer, r *RetentionReport) error {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "history: %d routes (%d records), filled in %.0f s; retention batch %d\n",
		r.HistoryRoutes, r.HistoryRecords, r.FillSeconds, r.BatchSize)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\tdelivered/s\tWAL MiB\tWAL MiB/s\t")
	for _, p := range r.Phases {
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.1f\t%.1f\t\n", p.Phase, p.Seconds, p.DeliveredPerSec,
			mib(p.Cost.WALBytes), mib(p.Cost.WALBytes)/p.Seconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "retention: %d records, %d routes deleted in %.1f s: %.0f routes/s, %.0f records/s; WAL about %.0f bytes per route deleted\n",
		r.RecordsDeleted, r.RoutesDeleted, r.RetentionSeconds, r.RoutesDeletedPerSec, r.RecordsDeletedPerSec, r.WALPerRouteDeleted)
	fmt.Fprintf(w, "history rows before: %d records, %d routes, %d dead letters; after: %d records, %d routes, %d dead letters\n",
		r.Before.Records, r.Before.Routes, r.Before.DeadLetters, r.After.Records, r.After.Routes, r.After.DeadLetters)
	fmt.Fprintf(w, "headroom (routes deleted/s over delivered/s): %.2f (want >= 2); engine cost while retention runs: %.1f%% vs before, %.1f%% vs after (want <= 10%%)\n",
		r.Headroom, 100*r.EngineCost, 100*r.EngineCostVsAfter)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\ttable MiB before\tindexes MiB before\ttable MiB after\tindexes MiB after\t")
	for _, s := range r.Sizes {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t\n", s.Table, mib(s.TableBytesBefore), mib(s.IndexBytesBefore),
			mib(s.TableBytesAfter), mib(s.IndexBytesAfter))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}
