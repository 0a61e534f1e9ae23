package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/oteltest"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// heraldSubject drives herald: producers through Config.SubmitterFunc, the
// engine through startEngine.
type heraldSubject struct {
	cfg      *Config
	db       *Database
	sink     *sink
	work     *workload
	pool     *pgxpool.Pool // the producers' pool
	submitF  SubmitFunc
	engine   runningEngine
	stopSink func()
	q        *benchstore.Queries
	// receipts posts the sink's receipts in the receipts mode;
	// sentReceipts is what it had posted when it stopped.
	receipts     *receiptSender
	sentReceipts int64
	// traces receives the engine's spans with Config.Tracing; spans is
	// its count when the phase's engine started.
	traces *oteltest.Receiver
	spans  int64
}

func newHeraldSubject(cfg *Config, db *Database, sk *sink, w *workload) *heraldSubject {
	return &heraldSubject{cfg: cfg, db: db, sink: sk, work: w, q: benchstore.New()}
}

func (h *heraldSubject) name() string { return "herald" }

func (h *heraldSubject) settings() string {
	where := "in this process"
	if h.cfg.Processes > 1 || h.cfg.Serve {
		where = fmt.Sprintf("%d herald serve processes, loopback webhook sink", h.cfg.Processes)
		if h.cfg.ServeDiscard {
			where = fmt.Sprintf("%d herald serve processes, discard driver", h.cfg.Processes)
		}
	}
	if h.cfg.Tracing {
		where += fmt.Sprintf(", tracing on: sampler parentbased_traceidratio %g, OTLP/HTTP batches to a loopback receiver", h.cfg.TraceSample)
	}
	if h.cfg.Provider {
		where += ", SMS routes through provider " + benchProvider + " (sms-http) to the loopback sink"
		if h.cfg.Receipts {
			where += fmt.Sprintf(", receipts on: each posted to the receipts endpoint %s after acceptance, matched by the matcher", h.cfg.ReceiptDelay)
		} else {
			where += ", receipts off"
		}
	}
	commit := ""
	if h.cfg.EngineAsyncCommit {
		commit = ", engine connections with synchronous_commit off"
	}
	for k, v := range h.cfg.EngineSettings {
		commit += fmt.Sprintf(", engine connections with %s=%s", k, v)
	}
	return fmt.Sprintf("dispatcher concurrency %d per process, %s%s; SubmitMany batches of %d from %d producers",
		h.cfg.Concurrency, where, commit, h.cfg.Batch, h.cfg.Producers)
}

func (h *heraldSubject) start(ctx context.Context) error {
	pcfg, err := pgxpool.ParseConfig(h.db.URL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	pcfg.MaxConns = int32(h.cfg.Producers + 1)
	h.pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("connect producers: %w", err)
	}
	h.submitF, err = h.cfg.SubmitterFunc(h.pool)
	if err != nil {
		return fmt.Errorf("create submitter: %w", err)
	}
	p := &engineParams{
		DatabaseURL: h.db.URL,
		Channel:     channel.Webhook,
		Deliverer:   h.sink,
		Concurrency: h.cfg.Concurrency,
		Processes:   h.cfg.Processes,
		Serve:       h.cfg.Serve,
		AsyncCommit: h.cfg.EngineAsyncCommit,
		BatchSize:   h.cfg.DispatchBatch,
		Settings:    h.cfg.EngineSettings,
		Discard:     h.cfg.ServeDiscard,
		MaxConns:    engineConns(h.cfg.Concurrency),
		Logger:      h.cfg.Logger,
		ServeBinary: h.cfg.ServeBinary,
		ServeOutput: h.cfg.ServeOutput,
	}
	if h.cfg.Tracing {
		p.TraceEndpoint, p.TraceSample = h.traces.URL(), h.cfg.TraceSample
		h.spans = h.traces.Count()
	}
	if h.cfg.Provider {
		// SMS routes, delivered by sms/bench: an sms-http provider whose
		// server is the sink.
		h.work.sms = true
		p.Channel, p.Receipts, p.GetenvFunc = channel.SMS, h.cfg.Receipts, benchGetenv
		var rs *receiptSender
		if h.cfg.Receipts {
			// The endpoint's address is known once the engine is built;
			// no delivery happens before the workload is submitted.
			rs = newReceiptSender(h.cfg.ReceiptDelay)
		}
		url, stop, err := h.sink.serveProvider(rs)
		if err != nil {
			return fmt.Errorf("start provider sink: %w", err)
		}
		h.stopSink = stop
		if err := applyProvider(ctx, h.db.Pool, url, h.cfg.Receipts); err != nil {
			return err
		}
		h.engine, err = startEngine(ctx, p)
		if err != nil {
			return fmt.Errorf("start herald: %w", err)
		}
		if rs != nil {
			rs.start(h.engine.(*inProcess).receiptsAddr)
			h.receipts = rs
		}
		return nil
	}
	if h.cfg.Processes > 1 || h.cfg.Serve {
		// The serve processes deliver to a loopback endpoint that behaves
		// as the bench channel (same latency and failure share, same
		// counters).
		h.work.dest, h.stopSink, err = h.sink.serveHTTP()
		if err != nil {
			return fmt.Errorf("start webhook sink: %w", err)
		}
	}
	h.engine, err = startEngine(ctx, p)
	if err != nil {
		return fmt.Errorf("start herald: %w", err)
	}
	return nil
}

func (h *heraldSubject) submit(ctx context.Context, from, to int) error {
	return h.submitF(ctx, h.work.batch(h.work.producer, from, to))
}

func (h *heraldSubject) submitIdle(ctx context.Context, i int) error {
	return h.submitF(ctx, []intake.Intent{h.work.probeIntent(i)})
}

// open counts the routes not terminal and, in the receipts mode, the
// receipts not posted or not matched yet: a phase ends when the receipts'
// work is done too. Receipts the sink has yet to post are counted first,
// in memory: waitDone polls every 5 ms through the receipts' tail, and
// counting routes in the database each time cost Postgres more than the
// receipts themselves (150 µs per route in a 30,000-route run).
func (h *heraldSubject) open(ctx context.Context) (int64, error) {
	if h.receipts != nil {
		if n := h.receipts.pending.Load(); n > 0 {
			return n, nil
		}
	}
	n, err := h.q.BenchRouteCountOpen(ctx, h.db.Pool)
	if err != nil {
		return 0, fmt.Errorf("count open routes: %w", err)
	}
	if h.receipts == nil || n > 0 {
		return n, nil
	}
	n, err = h.q.BenchReceiptCountOpen(ctx, h.db.Pool)
	if err != nil {
		return 0, fmt.Errorf("count receipts not matched: %w", err)
	}
	return n, nil
}

func (h *heraldSubject) summarize(ctx context.Context) (summary, error) {
	r, err := h.q.BenchRouteSummary(ctx, h.db.Pool, h.work.producer)
	if err != nil {
		return summary{}, fmt.Errorf("summarize routes: %w", err)
	}
	sum := summary{
		routes: r.Routes, published: r.Published, attempts: r.Attempts,
		p50: r.P50, p95: r.P95, p99: r.P99,
		lastTerminal: r.LastTerminalAt,
	}
	if h.cfg.Tracing {
		// The engine flushed its spans when it stopped.
		n := h.traces.Count() - h.spans
		sum.spans = &n
	}
	if h.cfg.Receipts {
		rc, err := h.q.BenchReceiptSummary(ctx, h.db.Pool, h.work.producer)
		if err != nil {
			return summary{}, fmt.Errorf("summarize receipts: %w", err)
		}
		sum.receipts = &ReceiptFigures{
			Sent: h.sentReceipts, Received: rc.Received, Matched: rc.Matched, Duplicate: rc.Duplicate,
			Unmatched: rc.Unmatched, Routes: rc.RoutesWithStatus, LagP50ms: rc.LagP50 * 1000, LagP95ms: rc.LagP95 * 1000,
		}
	}
	return sum, nil
}

func (h *heraldSubject) peakRSS() []int64 {
	if h.engine == nil {
		return nil
	}
	return h.engine.PeakRSS()
}

func (h *heraldSubject) stop() error {
	var err error
	if h.receipts != nil {
		h.receipts.Close()
		h.sentReceipts = h.receipts.sent.Load()
		h.receipts = nil
	}
	if h.engine != nil {
		err = h.engine.Stop()
		h.engine = nil
	}
	if h.pool != nil {
		h.pool.Close()
		h.pool = nil
	}
	if h.stopSink != nil {
		h.stopSink()
		h.stopSink = nil
	}
	return err
}

func (h *heraldSubject) owns(table string) bool { return !strings.HasPrefix(table, "river_") }
