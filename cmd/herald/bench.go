package main

import (
	"context"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/harness/bench"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/maintenance"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure herald end to end (and River side by side with --vs river)",
		example: "herald bench -intents 20000 --vs river",
		run:     runBench,
	})
}

func runBench(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("bench", &g)
	var cfg bench.Config
	fs.IntVar(&cfg.Intents, "intents", bench.DefaultIntents, "intents submitted per engine")
	fs.IntVar(&cfg.RoutesPerIntent, "routes-per-intent", 1, "routes (webhook destinations) per intent")
	fs.IntVar(&cfg.PayloadBytes, "payload-bytes", bench.DefaultPayloadBytes, "content size of each notification")
	fs.IntVar(&cfg.Batch, "batch", bench.DefaultBatch, "submit batch size (SubmitMany; River InsertMany)")
	fs.IntVar(&cfg.Producers, "producers", bench.DefaultProducers, "goroutines submitting batches at once")
	fs.DurationVar(&cfg.Latency, "latency", 0, "what one delivery takes in the bench channel")
	fs.Float64Var(&cfg.FailShare, "fail-share", 0, "share of delivery attempts that fail transiently (0 to 1)")
	fs.IntVar(&cfg.Concurrency, "concurrency", bench.DefaultConcurrency, "deliveries in flight per process (dispatcher concurrency; River MaxWorkers)")
	fs.IntVar(&cfg.Processes, "processes", 1, "herald engine processes (1: in this process, unless -serve)")
	fs.BoolVar(&cfg.ServeDiscard, "serve-discard", false, "with herald serve processes (implies -serve), use the discard driver, a no-op channel like River's no-op worker; no idle probes")
	fs.BoolVar(&cfg.EngineAsyncCommit, "engine-async-commit", false, "run the engine's connections (not the producers') with synchronous_commit off")
	fs.BoolVar(&cfg.Serve, "serve", false, "run the engine as herald serve processes (this binary) even for -processes 1, delivering to a loopback webhook sink")
	fs.BoolVar(&cfg.Provider, "provider", false, "herald delivers SMS routes through a configured sms-http provider (sms/bench) to the loopback sink, receipts off: the baseline of -receipts")
	fs.BoolVar(&cfg.Receipts, "receipts", false, "as -provider, with delivery receipts: the sink posts one per message to herald's receipts endpoint, and the matcher matches them")
	fs.DurationVar(&cfg.ReceiptDelay, "receipt-delay", bench.DefaultReceiptDelay, "with -receipts: how long after accepting a message the sink posts its receipt")
	traceSample := fs.Float64("trace-sample", -1, "trace herald's engine, sampling this ratio of traces (0 to 1), exported over OTLP/HTTP to a loopback receiver the bench runs; negative: tracing off")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "run the engines this many times, alternating which goes first; the table is the median round")
	cfg.EngineSettings = map[string]string{}
	fs.Func("engine-set", "a run-time setting name=value for the engine's connections only (repeatable), e.g. enable_seqscan=off", bench.KeyValues(cfg.EngineSettings))
	fs.IntVar(&cfg.DispatchBatch, "dispatch-batch", 0, "the dispatcher's claim and completion batch size (0: its default, 100)")
	fs.BoolVar(&cfg.Warmup, "warmup", true, "run a discarded warm-up round (a fifth of the intents) first")
	fs.IntVar(&cfg.IdleSamples, "idle-samples", bench.DefaultIdleSamples, "one-at-a-time pick-up probes on the idle engine (negative: none)")
	vs := fs.String("vs", "", `compare with: "river"`)
	durable := fs.Bool("durable", true, "throwaway cluster with fsync and synchronous_commit on (ignored with -database-url)")
	mode := fs.String("mode", "compare", "compare (the workload), scale (claim throughput at a 10k and a 1M backlog), xmin (an old snapshot held mid-run), soak (memory over a long steady run) or retention (a finished history deleted while the engine delivers); river-worker is a River worker process the bench starts itself beside herald serve processes")
	var mp bench.ModeParams
	fs.DurationVar(&mp.Duration, "duration", 10*time.Minute, "soak mode: how long to run")
	fs.IntVar(&mp.Backlog, "backlog", 1_000_000, "scale mode: the large backlog of due routes")
	fs.DurationVar(&mp.Hold, "hold", 20*time.Second, "xmin mode: how long the old snapshot is held (the run lasts twice that)")
	fs.IntVar(&mp.Retention.History, "history", bench.DefaultHistory, "retention mode: the finished history filled, in routes")
	fs.DurationVar(&mp.Retention.Window, "window", bench.DefaultWindow, "retention mode: how long each of the alternating windows with and without retention lasts")
	fs.IntVar(&mp.Retention.BatchSize, "retention-batch", maintenance.DefaultBatchSize, "retention mode: notifications one retention statement deletes at most")
	pgSettings := map[string]string{}
	fs.Func("pg-set", "throwaway cluster: a postgresql.conf setting name=value (repeatable), e.g. to try autovacuum settings", bench.KeyValues(pgSettings))
	cpuProfile := fs.String("cpuprofile", "", "write this process's CPU profile (engine in-process, producers, River) to this file")
	if err := m.parse(fs, &g, args); err != nil {
		return err
	}
	if *mode == bench.ModeRiverWorker {
		return bench.RunRiverWorker(ctx, m.Getenv, m.logger(&g))
	}
	cfg.Vs = *vs
	if err := bench.CheckCommandLine(&cfg, *mode, *traceSample, mp); err != nil {
		return usageError{err}
	}
	cfg.Tracing, cfg.TraceSample = *traceSample >= 0, *traceSample
	log := m.logger(&g)
	cfg.Logger = log
	cfg.SubmitterFunc = benchSubmitter
	cfg.ServeOutput = m.Stderr

	if *cpuProfile != "" {
		stop, err := engine.StartCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	db, err := bench.OpenDatabase(ctx, g.DatabaseURL, *durable, pgSettings)
	if err != nil {
		return err
	}
	defer db.Close()
	log.Info("bench: database ready", "postgres", db.Version, "fsync", db.Durable, "shared_buffers", db.SharedBuffers)

	rep, write, err := bench.RunMode(ctx, db, &cfg, *mode, mp)
	if err != nil {
		return err
	}
	return output(m, g.JSON, rep, func(w io.Writer, _ any) error { return write(w) })
}

// benchSubmitter submits through the public client, as a producer would.
func benchSubmitter(pool *pgxpool.Pool) (bench.SubmitFunc, error) {
	c, err := herald.NewClient(pool, nil)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, batch []intake.Intent) error {
		ins := make([]*herald.Intent, len(batch))
		for i := range batch {
			ins[i] = &batch[i]
		}
		res, err := c.SubmitMany(ctx, ins)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	}, nil
}
