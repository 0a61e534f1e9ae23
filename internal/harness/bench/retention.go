package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// Defaults of the retention mode.
const (
	// DefaultHistory is the finished history the retention mode fills, in
	// routes: ten million.
	DefaultHistory = 10_000_000
	// DefaultWindow is how long each of the retention mode's alternating
	// windows with and without retention lasts.
	DefaultWindow = 10 * time.Second
)

// The history's shape: accepted over 30 days that ended 22 days ago, one
// record in historyDeadEvery dead-lettered and kept, as dead letters are
// until an operator acts. 22 days: past maintenance's default seven days
// of finished retention, counted from the end of the week a route
// finished in (routes go by that week, whole), and the
// seven more after which the records of the week they were accepted in
// are retired, and the 48-hour idempotency window.
const (
	historyProducer  = "herald-bench-history"
	historyAge       = 52 * 24 * time.Hour
	historySpan      = 30 * 24 * time.Hour
	historyDeadEvery = 100
	// historyChunk is the records one fill statement inserts.
	historyChunk = 250_000
	// retentionWarmup is how long the engine runs before the first phase.
	retentionWarmup = 5 * time.Second
)

// RetentionWindow is one window of the retention mode: the live engine's
// figures while retention ran ("with") or did not ("without").
type RetentionWindow struct {
	Retention bool    `json:"retention"`
	Seconds   float64 `json:"seconds"`
	Delivered int64   `json:"delivered"`
	// RecordsDeleted is what the window's retention run returned: a run
	// cut short at the window's end may have committed a last batch it
	// could not count (its statement ended as it was canceled).
	RecordsDeleted int64 `json:"records_deleted"`
	// WALBytes is the whole cluster's WAL over the window.
	WALBytes int64 `json:"wal_bytes"`
}

// RetentionPhase sums the windows of one kind: "without" retention or
// "with" it.
type RetentionPhase struct {
	Phase     string  `json:"phase"`
	Windows   int     `json:"windows"`
	Seconds   float64 `json:"seconds"`
	Delivered int64   `json:"delivered"`
	// DeliveredPerSec is the live engine's routes delivered per second.
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	WALBytes        int64   `json:"wal_bytes"`
}

// HistoryCount is the history's rows at one moment, counted with SQL.
type HistoryCount struct {
	Records int64 `json:"records"`
	// Keys are the history's idempotency keys.
	Keys        int64 `json:"keys"`
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
	// RecordsDeleted is Before.Records - After.Records;
	// RoutesDeleted is Before.Routes - After.Routes (the live workload's
	// routes are too young to be deleted).
	RecordsDeleted int64 `json:"records_deleted"`
	RoutesDeleted  int64 `json:"routes_deleted"`
	// RetentionSeconds is how long DeleteFinished ran, over all windows.
	RetentionSeconds     float64 `json:"retention_seconds"`
	RoutesDeletedPerSec  float64 `json:"routes_deleted_per_sec"`
	RecordsDeletedPerSec float64 `json:"records_deleted_per_sec"`
	// RetentionWALBytes estimates the WAL retention wrote: the windows'
	// WAL with retention less the engine's WAL rate without it over as
	// long.
	RetentionWALBytes  int64   `json:"retention_wal_bytes"`
	WALPerRouteDeleted float64 `json:"wal_bytes_per_route_deleted"`
	// Window is the length of the windows with and without retention.
	Window string `json:"window"`
	// Phases are the windows without retention and with it, summed.
	Phases  []RetentionPhase  `json:"phases"`
	Windows []RetentionWindow `json:"windows"`
	// Cost is what the windows cost Postgres, all together.
	Cost  PGCost          `json:"pg_cost"`
	Sizes []RetentionSize `json:"sizes"`
	// Headroom is RoutesDeletedPerSec over the engine's delivered/s
	// without retention; the bound herald holds itself to is at least 2.
	Headroom float64 `json:"headroom"`
	// EngineCost is the share of its delivered/s the live engine lost
	// with retention running, against without; the bound is at most 0.10.
	EngineCost float64  `json:"engine_cost"`
	Notes      []string `json:"notes"`
}

// RetentionParams are the retention mode's settings.
type RetentionParams struct {
	// History is the finished history filled, in routes. Defaults to
	// DefaultHistory.
	History int
	// Window is how long each window with or without retention lasts.
	// Defaults to DefaultWindow.
	Window time.Duration
	// BatchSize is maintenance's retention batch size (0: its default).
	BatchSize int
}

// RunRetention fills a finished history of p.History routes (with their
// records, past their retention), then, while the engine delivers the
// workload steadily, measures it in windows of p.Window alternately
// without retention and with maintenance's finished retention
// (DeleteFinished, as the periodic job runs it) deleting the history, until
// the history is gone, and once more without. It returns an error for a
// bad parameter, and the first failure of the fill, the engine, the
// producers or retention.
func RunRetention(ctx context.Context, db *Database, cfg *Config, p RetentionParams) (*RetentionReport, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	switch {
	case p.History < 0:
		return nil, fmt.Errorf("History must not be negative, not %d", p.History)
	case p.Window < 0:
		return nil, fmt.Errorf("Window must not be negative, not %s", p.Window)
	case p.BatchSize < 0:
		return nil, fmt.Errorf("BatchSize must not be negative, not %d", p.BatchSize)
	}
	if p.History == 0 {
		p.History = DefaultHistory
	}
	if p.Window == 0 {
		p.Window = DefaultWindow
	}
	if p.BatchSize == 0 {
		p.BatchSize = maintenance.DefaultBatchSize
	}
	q := benchstore.New()
	rep := &RetentionReport{RoutesPerIntent: c.RoutesPerIntent, BatchSize: p.BatchSize, Window: p.Window.String()}
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

	// Retention's own connections, set up as a serve process's, whose
	// maintenance shares the engine's pool (engine.ConfigurePool: no JIT,
	// generic plans, no sequential scans). Its runs are cut short at the
	// end of each window (an error it would log), so it logs nothing; the
	// windows are logged here.
	rcfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return nil, fmt.Errorf("connect retention: %w", err)
	}
	engine.ConfigurePool(rcfg)
	rpool, err := pgxpool.NewWithConfig(ctx, rcfg)
	if err != nil {
		return nil, fmt.Errorf("connect retention: %w", err)
	}
	defer rpool.Close()
	m, err := maintenance.New(rpool, &maintenance.Config{BatchSize: p.BatchSize})
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
	if err := pause.For(ctx, retentionWarmup); err != nil {
		return nil, err
	}

	var first, last snapshot
	rep.Windows, first, last, err = retentionWindows(ctx, db, &c, m, sk, prodErr, p.Window)
	if err != nil {
		return nil, err
	}
	rep.Cost = cost(first, last, func(string) bool { return true })
	stopProducers()
	if err := h.stop(); err != nil {
		return nil, fmt.Errorf("stop herald: %w", err)
	}
	rep.Phases = retentionPhases(rep.Windows)

	afterCount, err := q.BenchHistoryCount(ctx, db.Pool, countParams)
	if err != nil {
		return nil, fmt.Errorf("count history: %w", err)
	}
	rep.After = HistoryCount(afterCount)
	sizesAfter, err := takeSnapshot(ctx, db.Pool)
	if err != nil {
		return nil, err
	}
	for _, t := range []string{"records", "routes", "dead_letters", "idempotency_keys"} {
		b, a := sizesBefore.table(t), sizesAfter.table(t)
		rep.Sizes = append(rep.Sizes, RetentionSize{Table: t,
			TableBytesBefore: b.TableBytes, IndexBytesBefore: b.IndexBytes,
			TableBytesAfter: a.TableBytes, IndexBytesAfter: a.IndexBytes})
	}

	without, with := rep.Phases[0], rep.Phases[1]
	rep.RecordsDeleted = rep.Before.Records - rep.After.Records
	rep.RoutesDeleted = rep.Before.Routes - rep.After.Routes
	rep.RetentionSeconds = with.Seconds
	rep.RoutesDeletedPerSec = float64(rep.RoutesDeleted) / with.Seconds
	rep.RecordsDeletedPerSec = float64(rep.RecordsDeleted) / with.Seconds
	engineWAL := float64(without.WALBytes) / without.Seconds * with.Seconds
	rep.RetentionWALBytes = with.WALBytes - int64(engineWAL)
	if rep.RoutesDeleted > 0 {
		rep.WALPerRouteDeleted = float64(rep.RetentionWALBytes) / float64(rep.RoutesDeleted)
	}
	rep.Headroom = rep.RoutesDeletedPerSec / without.DeliveredPerSec
	rep.EngineCost = 1 - with.DeliveredPerSec/without.DeliveredPerSec
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("history: %d records of %d route(s) each, with their idempotency keys (long expired), accepted evenly over 30 days that ended 22 days ago (routes go by the week they finished in, records by the week they were accepted in, seven days after it: 22 days is past both), published; one record in %d dead-lettered (kept: dead-letter retention is off by default); filled with generate_series in statements of %d records, then VACUUM ANALYZEd and CHECKPOINTed",
			records, c.RoutesPerIntent, historyDeadEvery, historyChunk),
		fmt.Sprintf("retention: internal/maintenance's DeleteFinished with the default 7-day finished retention, on a pool of its own while the engine delivers, in windows of %s alternating with windows without it (so that the machine's drift falls on both alike), each run cut short at its window's end (its last batch rolled back) and the next going on from where it stood, as the periodic job's next run does after one cut short; producers keep about 20,000 routes ahead of the deliveries", p.Window),
		"headroom: routes deleted per second (over the windows with retention) over the engine's routes delivered per second without it (bound: at least 2); engine cost: 1 - delivered/s with retention over without (bound: at most 0.10); autovacuum runs whenever it will, in either",
		"retention WAL: the windows' WAL with retention (the whole cluster's) less the engine's WAL rate without it over as long: an estimate",
		"sizes: before retention, and after the last window (the live workload's rows included); deleted rows' space is reused, not returned to the file system",
	)
	return rep, nil
}

// retentionWindows alternates windows of length window without retention
// and with m's DeleteFinished running (cut short at the window's end),
// starting without, until a run finishes within its window, and ends with
// one more without. It returns the windows and the Postgres counters at the
// first window's start and the last one's end; an error if ctx ends, the
// producers stop, or retention fails otherwise than by being cut short.
func retentionWindows(ctx context.Context, db *Database, c *Config, m *maintenance.Maintenance, sk *sink,
	prodErr <-chan error, window time.Duration) (wins []RetentionWindow, first, last snapshot, err error) {
	if first, err = takeSnapshot(ctx, db.Pool); err != nil {
		return nil, first, last, err
	}
	last = first
	for done := false; ; {
		win := RetentionWindow{Retention: !done && len(wins)%2 == 1}
		d0, start := sk.delivered.Load(), time.Now()
		if win.Retention {
			wctx, cancel := context.WithTimeout(ctx, window)
			win.RecordsDeleted, err = m.DeleteFinished(wctx)
			cancel()
			switch {
			case err == nil:
				done = true
			case ctx.Err() != nil:
				return nil, first, last, ctx.Err()
			case !errors.Is(err, context.DeadlineExceeded):
				return nil, first, last, fmt.Errorf("retention: %w", err)
			}
		} else if err := pause.For(ctx, window); err != nil {
			return nil, first, last, err
		}
		win.Seconds, win.Delivered = time.Since(start).Seconds(), sk.delivered.Load()-d0
		select {
		case err := <-prodErr:
			if err == nil {
				err = errors.New("stopped early")
			}
			return nil, first, last, fmt.Errorf("producer: %w", err)
		default:
		}
		snap, err := takeSnapshot(ctx, db.Pool)
		if err != nil {
			return nil, first, last, err
		}
		win.WALBytes, last = snap.wal-last.wal, snap
		wins = append(wins, win)
		c.Logger.Info("bench: retention window", "retention", win.Retention, "seconds", win.Seconds,
			"delivered_per_sec", float64(win.Delivered)/win.Seconds, "records_deleted", win.RecordsDeleted)
		if done && !win.Retention {
			return wins, first, last, nil
		}
	}
}

// retentionPhases sums the windows without retention and with it, in that
// order.
func retentionPhases(wins []RetentionWindow) []RetentionPhase {
	var phases []RetentionPhase
	for _, with := range []bool{false, true} {
		ph := RetentionPhase{Phase: "without"}
		if with {
			ph.Phase = "with"
		}
		for _, w := range wins {
			if w.Retention == with {
				ph.Windows++
				ph.Seconds += w.Seconds
				ph.Delivered += w.Delivered
				ph.WALBytes += w.WALBytes
			}
		}
		ph.DeliveredPerSec = float64(ph.Delivered) / ph.Seconds
		phases = append(phases, ph)
	}
	return phases
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
	// The finished weeks' partitions the history's published routes go to,
	// and the accepted weeks' its records go to, as maintenance makes them ahead of time on a
	// live system.
	first := pgtype.Date{Time: oldest.UTC(), Valid: true}
	last := pgtype.Date{Time: oldest.Add(historySpan + 24*time.Hour).UTC(), Valid: true}
	if _, err := store.New().RouteWeeksCreate(ctx, db.Pool, store.RouteWeeksCreateParams{
		FirstDay: first, LastDay: last, WaitSeconds: 10,
	}); err != nil {
		return 0, fmt.Errorf("make the history's weeks: %w", err)
	}
	if _, err := store.New().RecordWeeksCreate(ctx, db.Pool, store.RecordWeeksCreateParams{
		FirstDay: first, LastDay: last, WaitSeconds: 10,
	}); err != nil {
		return 0, fmt.Errorf("make the history's record weeks: %w", err)
	}
	q := benchstore.New()
	start := time.Now()
	for from := int64(0); from < n; from += historyChunk {
		arg.FromN, arg.ToN = from, min(from+historyChunk, n)
		if err := q.BenchHistoryFill(ctx, db.Pool, arg); err != nil {
			return 0, fmt.Errorf("fill history records %d to %d: %w", arg.FromN, arg.ToN, err)
		}
		c.Logger.Info("bench: history", "records", arg.ToN, "of", n, "seconds", time.Since(start).Seconds())
	}
	return time.Since(start).Seconds(), nil
}

// WriteRetention prints the retention report.
func WriteRetention(w io.Writer, r *RetentionReport) error {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "history: %d routes (%d records), filled in %.0f s; retention batch %d\n",
		r.HistoryRoutes, r.HistoryRecords, r.FillSeconds, r.BatchSize)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "retention\twindows\tseconds\tdelivered/s\tWAL MiB\tWAL MiB/s\t")
	for _, p := range r.Phases {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.1f\t%.1f\t\n", p.Phase, p.Windows, p.Seconds, p.DeliveredPerSec,
			mib(p.WALBytes), mib(p.WALBytes)/p.Seconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "retention: %d records, %d routes deleted in %.1f s: %.0f routes/s, %.0f records/s; WAL about %.0f bytes per route deleted\n",
		r.RecordsDeleted, r.RoutesDeleted, r.RetentionSeconds, r.RoutesDeletedPerSec, r.RecordsDeletedPerSec, r.WALPerRouteDeleted)
	fmt.Fprintf(w, "history rows before: %d records, %d routes, %d dead letters; after: %d records, %d routes, %d dead letters\n",
		r.Before.Records, r.Before.Routes, r.Before.DeadLetters, r.After.Records, r.After.Routes, r.After.DeadLetters)
	fmt.Fprintf(w, "headroom (routes deleted/s over delivered/s without retention): %.2f (want >= 2); engine cost with retention running: %.1f%% (want <= 10%%)\n",
		r.Headroom, 100*r.EngineCost)
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
