package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// XminSample is one second of the xmin mode's run.
type XminSample struct {
	// At is seconds since the workload started.
	At float64 `json:"at"`
	// Phase is "before", "held" or "after".
	Phase string `json:"phase"`
	// Delivered is the routes delivered during the second.
	Delivered int64 `json:"delivered"`
	// Open is the routes not terminal yet.
	Open int64 `json:"open"`
	// DeadTuples is pg_stat's n_dead_tup of routes.
	DeadTuples int64 `json:"dead_tuples"`
	// RoutesBytes and DueIndexBytes are the routes table's and its due
	// index's size.
	RoutesBytes   int64 `json:"routes_bytes"`
	DueIndexBytes int64 `json:"due_index_bytes"`
}

// XminPhase sums up one phase.
type XminPhase struct {
	Phase        string  `json:"phase"`
	Seconds      float64 `json:"seconds"`
	DeliveredPer float64 `json:"delivered_per_sec"`
	// DeadTuplesEnd, RoutesBytesEnd and DueIndexBytesEnd are the values at
	// the phase's last sample.
	DeadTuplesEnd    int64 `json:"dead_tuples_end"`
	RoutesBytesEnd   int64 `json:"routes_bytes_end"`
	DueIndexBytesEnd int64 `json:"due_index_bytes_end"`
}

// XminReport is the xmin mode's result.
type XminReport struct {
	Hold    string       `json:"hold"`
	Phases  []XminPhase  `json:"phases"`
	Samples []XminSample `json:"samples"`
	Notes   []string     `json:"notes"`
}

// xminBacklog is how far producers run ahead of deliveries: enough that the
// engine never starves, little enough that the backlog stays bounded.
const xminBacklog = 20_000

// RunXmin runs a steady workload for hold/2 (before), then holds a
// REPEATABLE READ transaction with a snapshot open on another connection
// for hold (held), then releases it and runs for hold more (after),
// sampling throughput, dead tuples and sizes every second.
func RunXmin(ctx context.Context, db *Database, cfg *Config, hold time.Duration) (*XminReport, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	rep := &XminReport{Hold: hold.String()}
	sk := newSink(c.Latency, c.FailShare)
	id := fmt.Sprintf("xmin%d", time.Now().UnixNano())
	w := newWorkload(&c, id, c.RoutesPerIntent)
	h := newHeraldSubject(&c, db, sk, w)
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	defer h.stop()

	// Producers keep about xminBacklog routes ahead of the deliveries.
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	prodErr := steadyProducer(pctx, h, sk, &c)

	q := benchstore.New()
	var holder pgx.Tx
	defer func() {
		if holder != nil {
			_ = holder.Rollback(context.Background())
		}
	}()
	start := time.Now()
	phase := "before"
	last := int64(0)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for phase != "done" {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-prodErr:
			return nil, fmt.Errorf("producer: %w", err)
		case <-tick.C:
		}
		el := time.Since(start)
		s := XminSample{At: el.Seconds(), Phase: phase}
		d := sk.delivered.Load()
		s.Delivered, last = d-last, d
		var err error
		if s.Open, err = q.BenchRouteCountOpen(ctx, db.Pool); err != nil {
			return nil, fmt.Errorf("count open routes: %w", err)
		}
		snap, err := takeSnapshot(ctx, db.Pool)
		if err != nil {
			return nil, err
		}
		s.DeadTuples = snap.table("routes").DeadTuples
		sizes, err := q.BenchRouteSizes(ctx, db.Pool)
		if err != nil {
			return nil, fmt.Errorf("read sizes: %w", err)
		}
		s.RoutesBytes, s.DueIndexBytes = sizes.RoutesBytes, sizes.DueIndexBytes
		rep.Samples = append(rep.Samples, s)
		c.Logger.Info("bench: xmin sample", "phase", phase, "delivered", s.Delivered, "dead_tuples", s.DeadTuples, "due_index_bytes", s.DueIndexBytes)

		switch {
		case phase == "before" && el >= hold/2:
			// The old transaction: REPEATABLE READ, its snapshot taken by
			// its first statement and kept until it ends.
			holder, err = db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
			if err != nil {
				return nil, fmt.Errorf("begin old transaction: %w", err)
			}
			if _, err := q.BenchRouteCountOpen(ctx, holder); err != nil {
				return nil, fmt.Errorf("take old snapshot: %w", err)
			}
			phase = "held"
		case phase == "held" && el >= hold/2+hold:
			if err := holder.Rollback(ctx); err != nil {
				return nil, fmt.Errorf("end old transaction: %w", err)
			}
			holder = nil
			phase = "after"
		case phase == "after" && el >= hold/2+2*hold:
			phase = "done"
		}
	}
	stopProducers()
	for _, name := range []string{"before", "held", "after"} {
		p := XminPhase{Phase: name}
		var n int64
		for _, s := range rep.Samples {
			if s.Phase != name {
				continue
			}
			p.Seconds++
			n += s.Delivered
			p.DeadTuplesEnd, p.RoutesBytesEnd, p.DueIndexBytesEnd = s.DeadTuples, s.RoutesBytes, s.DueIndexBytes
		}
		if p.Seconds > 0 {
			p.DeliveredPer = float64(n) / p.Seconds
		}
		rep.Phases = append(rep.Phases, p)
	}
	rep.Notes = append(rep.Notes,
		"held: a REPEATABLE READ transaction on another connection took a snapshot and stayed open, holding back the xmin horizon: vacuum cannot remove any tuple that died after it",
		"producers keep about 20,000 routes ahead of the deliveries; dead tuples are pg_stat's n_dead_tup of herald.routes",
	)
	return rep, nil
}

// WriteXmin prints the xmin report.
func WriteXmin(w io.Writer, r *XminReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\tdelivered/s\tdead tuples at end\troutes MiB at end\tdue index MiB at end\t")
	for _, p := range r.Phases {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%d\t%.1f\t%.2f\t\n", p.Phase, p.Seconds, p.DeliveredPer, p.DeadTuplesEnd,
			float64(p.RoutesBytesEnd)/(1<<20), float64(p.DueIndexBytesEnd)/(1<<20))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// steadyProducer submits batches to h until ctx ends, keeping about
// xminBacklog routes ahead of what the sink has seen delivered. The channel
// gets nil when ctx ends, or the first submit error.
func steadyProducer(ctx context.Context, h *heraldSubject, sk *sink, c *Config) <-chan error {
	done := make(chan error, 1)
	go func() {
		var submitted int64
		for i := 0; ctx.Err() == nil; {
			if submitted-sk.delivered.Load() > xminBacklog {
				if pause.For(ctx, 5*time.Millisecond) != nil {
					break
				}
				continue
			}
			if err := h.submit(ctx, i, i+c.Batch); err != nil {
				if ctx.Err() == nil {
					done <- err
				}
				return
			}
			i += c.Batch
			submitted += int64(c.Batch * c.RoutesPerIntent)
		}
		done <- nil
	}()
	return done
}
