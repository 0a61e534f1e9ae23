// Package bench measures herald end to end, and River on the same database
// in the same run: a workload generator (intents, routes per intent, payload
// size, submit batch size, channel latency, failure share, concurrency,
// processes), the throughput and latency it reaches, the peak memory of the
// processes doing it, and what it cost Postgres (WAL bytes, rows written,
// dead tuples, table and index sizes, from pg_stat_* and pg_current_wal_lsn).
//
// The engine runs through internal/engine, in this process or as `herald
// serve` processes. The public client is the module root, which internal
// packages never import, so the caller passes Config.SubmitterFunc: a
// function that submits a batch through it. cmd/herald's bench command
// does that.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/intake"
)

// Defaults for the zero values of Config.
const (
	DefaultIntents      = 100_000
	DefaultBatch        = 1_000
	DefaultPayloadBytes = 256
	DefaultConcurrency  = 100
	DefaultProducers    = 2
	DefaultIdleSamples  = 50
	DefaultReceiptDelay = 200 * time.Millisecond
)

// Config configures a benchmark run.
type Config struct {
	// Intents is the number of intents submitted per engine. Default 100,000.
	Intents int
	// RoutesPerIntent is the number of routes each intent fans out into
	// (webhook destinations). Default 1.
	RoutesPerIntent int
	// PayloadBytes is the size of each notification's content. Default 256.
	PayloadBytes int
	// Batch is the submit batch size: SubmitMany for herald, InsertMany for
	// River. Default 1,000.
	Batch int
	// Producers is the number of goroutines submitting batches at once.
	// Default 2.
	Producers int
	// Latency is what one delivery takes in the bench channel.
	Latency time.Duration
	// FailShare is the share of delivery attempts that fail transiently
	// (0 to 1).
	FailShare float64
	// Concurrency is the number of deliveries in flight per process: the
	// dispatcher's channel concurrency and River's MaxWorkers. Default 100.
	Concurrency int
	// Processes is the number of herald engine processes; 1 runs the engine
	// in this process. Default 1.
	Processes int
	// ServeDiscard makes `herald serve` processes use the discard driver
	// (a no-op channel, like River's no-op worker) instead of webhooks to
	// the loopback sink; deliveries are then counted from the database
	// only, and no idle probes run.
	ServeDiscard bool
	// EngineAsyncCommit runs the engine's connections with
	// synchronous_commit off (producers keep it on): a measured option, see
	// the report's notes.
	EngineAsyncCommit bool
	// Serve runs the engine as `herald serve` processes even when
	// Processes is 1.
	Serve bool
	// Vs names the engine to compare with: "" (herald alone) or "river".
	Vs string
	// EngineSettings are run-time settings (name → value) for the engine's
	// connections only, e.g. enable_seqscan=off: how a proposed serve
	// setting is measured.
	EngineSettings map[string]string
	// DispatchBatch is the dispatcher's claim and completion batch size
	// (serve's dispatch.batch_size); 0 is the dispatcher's default.
	DispatchBatch int
	// Provider makes herald deliver SMS routes (one number per route)
	// through a configured provider, sms/bench (driver sms-http), to the
	// loopback sink, which answers each with a provider message id: the
	// delivery plane's hot path, without receipts. In this process only.
	Provider bool
	// Receipts implies Provider and gives sms/bench receipts settings: the
	// completion records each route's receipt key, the sink posts a
	// delivery receipt to the engine's receipts endpoint ReceiptDelay
	// after answering, as a provider does, and the matcher matches it. A
	// phase ends once every receipt is matched.
	Receipts bool
	// ReceiptDelay is how long after answering a delivery the sink posts
	// its receipt. Default DefaultReceiptDelay.
	ReceiptDelay time.Duration
	// Tracing turns OpenTelemetry tracing on in herald's engine: spans
	// sampled at TraceSample (a trace-id ratio, 0 to 1, parent-based),
	// batched and exported over OTLP/HTTP, as serve's OTEL_* variables
	// would have them, to a loopback receiver the bench runs in this
	// process (internal/harness/oteltest), which counts them.
	Tracing     bool
	TraceSample float64
	// Warmup runs a discarded round at a fifth of the size first.
	Warmup bool
	// Rounds is how many times the engines run, alternating which goes
	// first; the report has every round and the medians. Default 1.
	Rounds int
	// IdleSamples is the number of one-at-a-time pick-up latency samples
	// taken on the idle engine. Default 50; negative skips them.
	IdleSamples int
	// Logger receives progress lines. Defaults to discarding.
	Logger *slog.Logger
	// SubmitterFunc returns a SubmitFunc that submits through herald's
	// public client on pool. Required.
	SubmitterFunc func(pool *pgxpool.Pool) (SubmitFunc, error)
	// ServeBinary is the herald binary whose `herald serve` processes run
	// the engine for Processes > 1 or Serve. Defaults to this process's
	// executable.
	ServeBinary string
	// ServeOutput receives the serve processes' output. Defaults to
	// os.Stderr.
	ServeOutput io.Writer
}

func (c *Config) validate() error {
	switch {
	case c.Intents < 1:
		return fmt.Errorf("Intents must be at least 1, not %d", c.Intents)
	case c.RoutesPerIntent < 1:
		return fmt.Errorf("RoutesPerIntent must be at least 1, not %d", c.RoutesPerIntent)
	case c.PayloadBytes < 16:
		return fmt.Errorf("PayloadBytes must be at least 16, not %d", c.PayloadBytes)
	case c.Batch < 1:
		return fmt.Errorf("Batch must be at least 1, not %d", c.Batch)
	case c.Producers < 1:
		return fmt.Errorf("Producers must be at least 1, not %d", c.Producers)
	case c.Latency < 0:
		return fmt.Errorf("Latency must not be negative, not %s", c.Latency)
	case c.FailShare < 0 || c.FailShare >= 1:
		return fmt.Errorf("FailShare must be in [0, 1), not %g", c.FailShare)
	case c.Concurrency < 1:
		return fmt.Errorf("Concurrency must be at least 1, not %d", c.Concurrency)
	case c.Processes < 1:
		return fmt.Errorf("Processes must be at least 1, not %d", c.Processes)
	case c.Vs != "" && c.Vs != "river":
		return fmt.Errorf("Vs must be empty or \"river\", not %q", c.Vs)
	case c.SubmitterFunc == nil:
		return errors.New("SubmitterFunc is required")
	case c.Provider && (c.Processes > 1 || c.Serve):
		return errors.New("Provider and Receipts run the engine in this process: not with Processes > 1 or Serve")
	case c.Tracing && !(c.TraceSample >= 0 && c.TraceSample <= 1):
		return fmt.Errorf("TraceSample must be between 0 and 1, not %g", c.TraceSample)
	case c.ReceiptDelay < 0:
		return fmt.Errorf("ReceiptDelay must not be negative, not %s", c.ReceiptDelay)
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Intents = cmp.Or(c.Intents, DefaultIntents)
	c.RoutesPerIntent = cmp.Or(c.RoutesPerIntent, 1)
	c.PayloadBytes = cmp.Or(c.PayloadBytes, DefaultPayloadBytes)
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.Producers = cmp.Or(c.Producers, DefaultProducers)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.Processes = cmp.Or(c.Processes, 1)
	c.IdleSamples = cmp.Or(c.IdleSamples, DefaultIdleSamples)
	c.Rounds = cmp.Or(c.Rounds, 1)
	c.Provider = c.Provider || c.Receipts
	c.ReceiptDelay = cmp.Or(c.ReceiptDelay, DefaultReceiptDelay)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// SubmitFunc submits one batch of intents through herald's public client
// and returns once they are accepted (committed).
type SubmitFunc func(ctx context.Context, batch []intake.Intent) error

// Row is one engine's figures for one run.
type Row struct {
	Engine string `json:"engine"`
	// Settings describes the engine's configuration in one line.
	Settings  string `json:"settings"`
	Intents   int    `json:"intents"`
	Routes    int64  `json:"routes"`
	Published int64  `json:"published"`
	Attempts  int64  `json:"attempts"`
	// AcceptSeconds is how long submitting every intent took.
	AcceptSeconds float64 `json:"accept_seconds"`
	// EndToEndSeconds runs from the first submit to the last route terminal
	// (by the database's clock of the last completion).
	EndToEndSeconds float64 `json:"end_to_end_seconds"`
	AcceptedPerSec  float64 `json:"accepted_per_sec"`
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	// DeliveredWhileAccepting is how many deliveries the bench channel had
	// taken when the last submit returned: the end-to-end figure is the
	// phase while producers submit (the engine sharing the machine with
	// them) and the tail after (the engine alone, draining its backlog),
	// and the two rates show which one bounds it. nil when the channel
	// does not see the deliveries (herald serve processes with the
	// discard driver).
	DeliveredWhileAccepting *int64 `json:"delivered_while_accepting,omitempty"`
	// Latency from accept (commit of the submit) to published, in ms.
	P50ms float64 `json:"p50_ms"`
	P95ms float64 `json:"p95_ms"`
	P99ms float64 `json:"p99_ms"`
	// IdleP50ms and IdleP95ms are the pick-up latency on an idle engine,
	// from the submit's return to the delivery's start, in ms.
	IdleP50ms float64 `json:"idle_p50_ms"`
	IdleP95ms float64 `json:"idle_p95_ms"`
	// PeakRSS is the peak resident set size of each engine process.
	PeakRSS []int64 `json:"peak_rss_bytes"`
	// ClientCPUSeconds is the CPU time the bench process (producers and an
	// in-process engine) and its reaped children (serve processes) used
	// over the phase.
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
	// PostgresCPUSeconds is the CPU time the cluster's processes used over
	// the phase (0 when they cannot be read: a server on another machine).
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
	// Cleanup is the VACUUM of the engine's tables run after the phase.
	Cleanup Cleanup `json:"cleanup"`
	// HOTUpdatesPerRoute is the HOT updates over the engine's tables
	// (pg_stat_user_tables.n_tup_hot_upd) per published route.
	HOTUpdatesPerRoute float64 `json:"hot_updates_per_route"`
	// IndexTuplesPerRoute is Cost.IndexTuples per published route; nil
	// (null) when the WAL could not be read.
	IndexTuplesPerRoute *float64 `json:"index_tuples_per_route"`
	Cost                PGCost   `json:"pg_cost"`
	// TraceSpans is the spans the engine exported over the phase, with
	// Config.Tracing; nil without (and for River).
	TraceSpans *int64 `json:"trace_spans,omitempty"`
	// Receipts are the receipts mode's figures; nil without receipts (and
	// for River, which has none).
	Receipts *ReceiptFigures `json:"receipts,omitempty"`
	// HTTPRequests is the requests the loopback sink received over the
	// phase (the workload's and the probes', every attempt), and
	// HTTPRejected those that were not the request herald's driver makes
	// (a wrong signature, credential or body; answered 400); both nil
	// when the engine does not deliver over HTTP.
	HTTPRequests *int64 `json:"http_requests,omitempty"`
	HTTPRejected *int64 `json:"http_rejected,omitempty"`
}

// ReceiptFigures are what became of a phase's delivery receipts.
type ReceiptFigures struct {
	// Sent is the receipts the sink posted and the endpoint stored (2xx).
	Sent int64 `json:"sent"`
	// Received is the receipts in the inbox; Matched, Duplicate and
	// Unmatched what the matcher made of them.
	Received  int64 `json:"received"`
	Matched   int64 `json:"matched"`
	Duplicate int64 `json:"duplicate"`
	Unmatched int64 `json:"unmatched"`
	// Routes is the measured routes that have a delivery status.
	Routes int64 `json:"routes_with_status"`
	// LagP50ms and LagP95ms are the receipt lag: the intent's acceptance
	// to its route's delivery status, in ms.
	LagP50ms float64 `json:"lag_p50_ms"`
	LagP95ms float64 `json:"lag_p95_ms"`
}

// Report is a run's result.
type Report struct {
	Config struct {
		Intents         int     `json:"intents"`
		RoutesPerIntent int     `json:"routes_per_intent"`
		PayloadBytes    int     `json:"payload_bytes"`
		Batch           int     `json:"batch"`
		Producers       int     `json:"producers"`
		Latency         string  `json:"latency"`
		FailShare       float64 `json:"fail_share"`
		Concurrency     int     `json:"concurrency"`
		Processes       int     `json:"processes"`
		Provider        bool    `json:"provider"`
		// RiverWorker is what River's worker does with a job, with -vs
		// river: "http", the delivery herald makes (same driver, request
		// and sink), or "noop", the bench channel in memory.
		RiverWorker  string `json:"river_worker,omitempty"`
		Receipts     bool   `json:"receipts"`
		ReceiptDelay string `json:"receipt_delay,omitempty"`
		// TraceSample is the engine's sampling ratio; null with tracing off.
		TraceSample   *float64 `json:"trace_sample"`
		Durable       bool     `json:"durable"`
		Postgres      string   `json:"postgres"`
		SharedBuffers string   `json:"shared_buffers"`
		CPUs          int      `json:"cpus"`
	} `json:"config"`
	Rows []Row `json:"rows"`
	// Rounds holds every round's rows when there was more than one; Rows
	// is then the round whose herald/River delivery ratio is the median.
	Rounds [][]Row `json:"rounds,omitempty"`
	// Notes say how the comparison was set up.
	Notes []string `json:"notes"`
}
