// Command replica measures what a heavy operator read costs the engine's
// deliveries when it runs on the primary, and when it runs on a streaming
// replica instead (herald stats --read-database-url):
//
//	go run ./internal/harness/replica -history 10000000
//
// It starts a throwaway durable cluster (the bench's, internal/harness/bench
// OpenDatabase) and a streaming replica of it (pgtemp's StartReplica),
// fills a finished history of -history routes with the bench's retention
// fill (benchstore.BenchHistoryFill, published 52 days ago), and waits for
// the replica to replay it. Then it runs the bench's standard workload
// (bench.Run) in -rounds rounds of three runs: alone, with `herald stats
// -window` covering the whole history run back to back on the primary,
// and the same on the replica; then alone once more. It prints each run's routes delivered/s, and how many
// reads ran and how long each took. On one machine the replica shares the
// primary's CPUs and disk: what moves off the primary is its buffers, its
// snapshots and its connections, not the machine's work.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/internal/harness/bench"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// Phase is one run of the workload, with or without the heavy read.
type Phase struct {
	// Reads is where the heavy read ran: "none", "primary" or "replica".
	Reads           string  `json:"reads"`
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	EndToEndSeconds float64 `json:"end_to_end_seconds"`
	// ReadsDone is how many stats reads finished during the run, and
	// ReadSeconds their mean duration.
	ReadsDone   int64   `json:"reads_done"`
	ReadSeconds float64 `json:"read_seconds_mean"`
	// ReadFrom is where connstr.ConnectRead sent the reads.
	ReadFrom   string `json:"read_from,omitempty"`
	ReadErrors int64  `json:"read_errors"`
	FirstError string `json:"first_error,omitempty"`
}

// Result is the measurement.
type Result struct {
	HistoryRoutes int64   `json:"history_routes"`
	FillSeconds   float64 `json:"fill_seconds"`
	ReplaySeconds float64 `json:"replay_seconds"`
	Intents       int     `json:"intents_per_run"`
	Window        string  `json:"stats_window"`
	Phases        []Phase `json:"phases"`
}

func main() {
	history := flag.Int64("history", 10_000_000, "finished routes filled before the runs")
	intents := flag.Int("intents", 200_000, "intents per workload run")
	window := flag.Duration("window", 2000*time.Hour, "the stats read's window: long enough to cover the history")
	durable := flag.Bool("durable", true, "fsync on, as in production")
	rounds := flag.Int("rounds", 2, "rounds of the three runs (alone, reads on the primary, reads on the replica), then one more alone")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	res, err := run(context.Background(), log, *history, *intents, *window, *durable, *rounds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(res)
}

func run(ctx context.Context, log *slog.Logger, history int64, intents int, window time.Duration, durable bool, rounds int) (*Result, error) {
	db, err := bench.OpenDatabase(ctx, "", durable, nil)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	replica, err := db.Cluster.StartReplica(ctx)
	if err != nil {
		return nil, err
	}
	defer replica.Stop()
	u, err := url.Parse(db.URL)
	if err != nil {
		return nil, err
	}
	replicaURL := pgtemp.WithDatabase(replica.URL("postgres"), strings.TrimPrefix(u.Path, "/"))

	res := &Result{HistoryRoutes: history, Intents: intents, Window: window.String()}
	start := time.Now()
	if err := fill(ctx, log, db.Pool, history); err != nil {
		return nil, err
	}
	res.FillSeconds = time.Since(start).Seconds()
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE"); err != nil { // exception: maintenance, no table
		return nil, err
	}
	start = time.Now()
	if err := replica.WaitReplayed(ctx, db.Cluster); err != nil {
		return nil, err
	}
	res.ReplaySeconds = time.Since(start).Seconds()
	log.Info("history ready", "routes", history, "fill_seconds", res.FillSeconds, "replay_seconds", res.ReplaySeconds)

	cfg := &bench.Config{Intents: intents, IdleSamples: -1, Logger: log, SubmitterFunc: submitter}
	var order []string
	for range rounds {
		order = append(order, "none", "primary", "replica")
	}
	for _, reads := range append(order, "none") {
		ph, err := phase(ctx, log, db, cfg, reads, replicaURL, window)
		if err != nil {
			return nil, err
		}
		log.Info("phase", "reads", ph.Reads, "delivered_per_sec", ph.DeliveredPerSec, "reads_done", ph.ReadsDone, "read_seconds", ph.ReadSeconds)
		res.Phases = append(res.Phases, *ph)
	}
	return res, nil
}

// phase runs the workload once while stats reads run back to back on
// reads ("none": no reads).
func phase(ctx context.Context, log *slog.Logger, db *bench.Database, cfg *bench.Config, reads, replicaURL string, window time.Duration) (*Phase, error) {
	ph := &Phase{Reads: reads}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var n, errs atomic.Int64
	var total atomic.Int64
	go func() {
		defer close(done)
		if reads == "none" {
			return
		}
		r := connstr.Read{MaxLag: time.Minute}
		if reads == "replica" {
			r.URL = replicaURL
		}
		for rctx.Err() == nil {
			t0 := time.Now()
			err := statsRead(rctx, db.URL, r, window, ph)
			switch {
			case rctx.Err() != nil:
				return
			case err != nil:
				if errs.Add(1) == 1 {
					ph.FirstError = err.Error()
				}
				continue
			}
			n.Add(1)
			total.Add(int64(time.Since(t0)))
		}
	}()
	rep, err := bench.Run(ctx, db, cfg)
	stop()
	<-done
	if err != nil {
		return nil, err
	}
	row := rep.Rows[0]
	ph.DeliveredPerSec, ph.EndToEndSeconds = row.DeliveredPerSec, row.EndToEndSeconds
	ph.ReadsDone, ph.ReadErrors = n.Load(), errs.Load()
	if ph.ReadsDone > 0 {
		ph.ReadSeconds = time.Duration(total.Load() / ph.ReadsDone).Seconds()
	}
	return ph, nil
}

// statsRead is `herald stats -window window` with or without
// --read-database-url: a connection chosen by connstr, then operator's
// Stats.
func statsRead(ctx context.Context, primary string, r connstr.Read, window time.Duration, ph *Phase) error {
	var pool *pgxpool.Pool
	var err error
	if r.URL == "" {
		pool, err = connstr.Connect(ctx, primary, nil)
		ph.ReadFrom = connstr.FromPrimary
	} else {
		var src *connstr.ReadSource
		pool, src, err = connstr.ConnectRead(ctx, primary, r, nil)
		if err == nil {
			ph.ReadFrom = src.From
		}
	}
	if err != nil {
		return err
	}
	defer pool.Close()
	op, err := operator.New(pool, nil)
	if err != nil {
		return err
	}
	_, err = op.Stats(ctx, window)
	return err
}

// fill inserts a finished history of n single-route records with the
// bench's retention fill, as its retention mode does.
func fill(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, n int64) error {
	const (
		producer = "herald-bench-history"
		chunk    = 250_000
		age      = 52 * 24 * time.Hour
		span     = 30 * 24 * time.Hour
	)
	v, err := intake.Validate(&intake.Intent{
		NotificationType: "bench.history", Producer: producer, IdempotencyKey: "history",
		Audience: intake.Audience{Webhook: []string{"http://127.0.0.1:1/hook"}}, Channels: []string{channel.Webhook},
		Content: intake.Content{Webhook: json.RawMessage(`{"n":1}`)},
	}, intake.Limits{}.WithDefaults(), time.Now())
	if err != nil {
		return fmt.Errorf("validate history intent: %w", err)
	}
	oldest := time.Now().Add(-age).Truncate(time.Millisecond)
	arg := benchstore.BenchHistoryFillParams{
		Producer: producer, PayloadJson: string(v.PayloadJSON), Channel: channel.Webhook,
		Oldest: oldest, SpanSeconds: span.Seconds(), N: n, DeadEvery: 100,
	}
	for _, r := range v.Routes {
		arg.RouteIds = append(arg.RouteIds, r.RouteID)
		arg.RecipientRefs = append(arg.RecipientRefs, r.RecipientRef)
	}
	first := pgtype.Date{Time: oldest.UTC(), Valid: true}
	last := pgtype.Date{Time: oldest.Add(span + 24*time.Hour).UTC(), Valid: true}
	q := store.New()
	if _, err := q.RouteWeeksCreate(ctx, pool, store.RouteWeeksCreateParams{FirstDay: first, LastDay: last, WaitSeconds: 10}); err != nil {
		return fmt.Errorf("make the history's weeks: %w", err)
	}
	if _, err := q.RecordWeeksCreate(ctx, pool, store.RecordWeeksCreateParams{FirstDay: first, LastDay: last, WaitSeconds: 10}); err != nil {
		return fmt.Errorf("make the history's record weeks: %w", err)
	}
	for from := int64(0); from < n; from += chunk {
		arg.FromN, arg.ToN = from, min(from+chunk, n)
		if err := benchstore.New().BenchHistoryFill(ctx, pool, arg); err != nil {
			return fmt.Errorf("fill history %d to %d: %w", arg.FromN, arg.ToN, err)
		}
		log.Info("history", "routes", arg.ToN, "of", n)
	}
	return nil
}

// submitter submits through accept, the client's path, as the bench's
// own tests do (internal/ may not import the client package).
func submitter(pool *pgxpool.Pool) (bench.SubmitFunc, error) {
	hint := channel.Webhook
	return func(ctx context.Context, batch []intake.Intent) error {
		vs := make([]*intake.Validated, len(batch))
		for i := range batch {
			v, err := intake.Validate(&batch[i], intake.Limits{}.WithDefaults(), time.Now())
			if err != nil {
				return err
			}
			vs[i] = v
		}
		_, err := accept.Accept(ctx, pool, vs, accept.Params{Notify: &hint})
		return err
	}, nil
}
