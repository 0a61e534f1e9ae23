package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// scaleWindow is the number of deliveries whose rate is the claim
// throughput at a backlog: the same window at every backlog size.
const scaleWindow = 10_000

// ScalePoint is the figures at one backlog size.
type ScalePoint struct {
	// Backlog is the number of routes preloaded.
	Backlog int `json:"backlog"`
	// PreloadSeconds is how long the one-statement preload took.
	PreloadSeconds float64 `json:"preload_seconds"`
	// ClaimPerSec is the delivery rate (claim, no-op delivery, complete)
	// over windows of scaleWindow deliveries out of a due backlog: for the
	// small backlog, the whole of it in each of three preloads; for the
	// large one, three consecutive windows of one preload (the backlog
	// stays within 3% of its size). The figure compared is the median.
	ClaimPerSec []float64 `json:"claim_per_sec"`
	// IdleP50ms and IdleP95ms are the pick-up latency of a new
	// transactional intent on an otherwise idle engine whose due index
	// holds Backlog routes scheduled an hour ahead.
	IdleP50ms float64 `json:"idle_p50_ms"`
	IdleP95ms float64 `json:"idle_p95_ms"`
	// RoutesBytes and DueIndexBytes are the routes table's and due index's
	// size at this backlog.
	RoutesBytes   int64 `json:"routes_bytes"`
	DueIndexBytes int64 `json:"due_index_bytes"`
}

// ScaleReport is the scale mode's result.
type ScaleReport struct {
	Window      int          `json:"window"`
	Concurrency int          `json:"concurrency"`
	Points      []ScalePoint `json:"points"`
	Notes       []string     `json:"notes"`
}

// RunScale measures claim throughput and pick-up latency at a backlog of
// 10,000 routes and at backlog routes: the throughput is the rate of the
// first 10,000 deliveries out of a due backlog of that size (three runs at
// 10,000, one at the large backlog); the pick-up latency is taken with the
// backlog scheduled an hour ahead, so the due index is as large but the
// engine idle.
func RunScale(ctx context.Context, db *Database, cfg *Config, backlog int) (*ScaleReport, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	rep := &ScaleReport{Window: scaleWindow, Concurrency: c.Concurrency}
	for _, size := range []int{scaleWindow, backlog} {
		pt := ScalePoint{Backlog: size}
		// Three windows either way: the small backlog is one window, so it
		// is preloaded three times; the large one is preloaded once (it
		// takes a while) and measured over three consecutive windows.
		preloads, windows := 1, 3
		if size <= scaleWindow {
			preloads, windows = 3, 1
		}
		for range preloads {
			rates, secs, err := scaleThroughput(ctx, db, &c, size, windows)
			if err != nil {
				return nil, err
			}
			pt.PreloadSeconds = secs
			pt.ClaimPerSec = append(pt.ClaimPerSec, rates...)
		}
		sizes, err := benchstore.New().BenchRouteSizes(ctx, db.Pool)
		if err != nil {
			return nil, fmt.Errorf("read sizes: %w", err)
		}
		pt.RoutesBytes, pt.DueIndexBytes = sizes.RoutesBytes, sizes.DueIndexBytes
		p50, p95, err := scalePickup(ctx, db, &c, size)
		if err != nil {
			return nil, err
		}
		pt.IdleP50ms, pt.IdleP95ms = p50, p95
		c.Logger.Info("bench: scale point", "backlog", size, "claim_per_sec", pt.ClaimPerSec, "idle_p50_ms", p50)
		rep.Points = append(rep.Points, pt)
	}
	rep.Notes = append(rep.Notes,
		"claim throughput: routes delivered per second (claim, no-op delivery, complete) over windows of 10,000 deliveries out of a due backlog of the given size, preloaded in one statement (ids and due times in creation order), VACUUM ANALYZEd and CHECKPOINTed: the small backlog is preloaded three times, the large one once and measured over three consecutive windows",
		"pick-up: from a transactional intent's submit return to its delivery's start, the backlog scheduled an hour ahead (in the due index, not due)",
	)
	return rep, nil
}

// preload empties the tables and preloads n routes due at dueAt.
func preload(ctx context.Context, db *Database, c *Config, n int, dueAt time.Time) (float64, error) {
	q := benchstore.New()
	if err := q.BenchReset(ctx, db.Pool); err != nil {
		return 0, fmt.Errorf("reset tables: %w", err)
	}
	w := &workload{runID: "preload", routes: 1, content: payload(c.PayloadBytes), dest: benchHookURL}
	v, err := intake.Validate(new(w.intent(benchProducer, 0)), intake.Limits{}.WithDefaults(), time.Now())
	if err != nil {
		return 0, fmt.Errorf("validate preload intent: %w", err)
	}
	start := time.Now()
	_, err = q.BenchRoutePreload(ctx, db.Pool, benchstore.BenchRoutePreloadParams{
		IDPrefix:     fmt.Sprintf("pre%d-", time.Now().UnixNano()),
		Producer:     benchProducer,
		PayloadJson:  string(v.PayloadJSON),
		DueAt:        dueAt,
		Channel:      channel.Webhook,
		Priority:     1,
		RecipientRef: v.Routes[0].RecipientRef,
		N:            int32(n),
	})
	if err != nil {
		return 0, fmt.Errorf("preload %d routes: %w", n, err)
	}
	secs := time.Since(start).Seconds()
	if err := q.BenchAnalyze(ctx, db.Pool); err != nil {
		return 0, fmt.Errorf("analyze: %w", err)
	}
	if err := db.checkpoint(ctx); err != nil {
		return 0, err
	}
	return secs, nil
}

// scaleThroughput preloads a due backlog of n and measures the delivery
// rate over the given number of consecutive windows of scaleWindow
// deliveries (at most n in all), the first timed from the first delivery.
func scaleThroughput(ctx context.Context, db *Database, c *Config, n, windows int) (rates []float64, preloadSecs float64, err error) {
	preloadSecs, err = preload(ctx, db, c, n, time.Now().Add(-time.Second))
	if err != nil {
		return nil, 0, err
	}
	sk := newSink(c.Latency, c.FailShare)
	eng, err := startEngine(ctx, &engineParams{
		DatabaseURL: db.URL, Channel: channel.Webhook, Deliverer: sk,
		Concurrency: c.Concurrency, Processes: 1, MaxConns: engineConns(c.Concurrency), Logger: c.Logger,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("start herald: %w", err)
	}
	defer eng.Stop()
	// Window i ends when the sink has seen (i+1) windows of deliveries.
	window := int64(min(n, scaleWindow))
	var from time.Time
	for len(rates) < windows && int64(len(rates)+1)*window <= int64(n) {
		d := sk.delivered.Load()
		if from.IsZero() && d > 0 {
			from = time.Now()
		}
		if !from.IsZero() && d >= int64(len(rates)+1)*window {
			now := time.Now()
			rates = append(rates, float64(window)/now.Sub(from).Seconds())
			from = now
			continue
		}
		if err := pause.For(ctx, time.Millisecond); err != nil {
			return nil, 0, err
		}
	}
	return rates, preloadSecs, nil
}

// scalePickup preloads n routes due in an hour and measures idle pick-up.
func scalePickup(ctx context.Context, db *Database, c *Config, n int) (p50, p95 float64, err error) {
	if _, err := preload(ctx, db, c, n, time.Now().Add(time.Hour)); err != nil {
		return 0, 0, err
	}
	sk := newSink(c.Latency, c.FailShare)
	id := fmt.Sprintf("scale%d", time.Now().UnixNano())
	w := newWorkload(c, id, 1)
	h := newHeraldSubject(c, db, sk, w)
	if err := h.start(ctx); err != nil {
		return 0, 0, err
	}
	defer h.stop()
	lat, err := idleProbes(ctx, h, sk, max(c.IdleSamples, 20))
	if err != nil {
		return 0, 0, err
	}
	return ms(percentile(lat, 0.50)), ms(percentile(lat, 0.95)), nil
}

// WriteScale prints the scale report as a table.
func WriteScale(w io.Writer, r *ScaleReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backlog\tpreload s\tclaim routes/s (runs)\tidle pick-up p50 ms\tp95 ms\troutes MiB\tdue index MiB\t")
	for _, p := range r.Points {
		runs := ""
		for i, v := range p.ClaimPerSec {
			if i > 0 {
				runs += " "
			}
			runs += fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%s\t%.2f\t%.2f\t%.1f\t%.1f\t\n", p.Backlog, p.PreloadSeconds, runs, p.IdleP50ms, p.IdleP95ms,
			float64(p.RoutesBytes)/(1<<20), float64(p.DueIndexBytes)/(1<<20))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Points) == 2 {
		a, b := median(r.Points[0].ClaimPerSec), median(r.Points[1].ClaimPerSec)
		fmt.Fprintf(w, "claim throughput at %d / at %d: %.2f (median of runs)\n", r.Points[1].Backlog, r.Points[0].Backlog, b/a)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x * 1000)
	}
	return float64(percentile(d, 0.5)) / 1000
}
