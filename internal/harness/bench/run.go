package bench

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/harness/oteltest"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// Run runs the workload against herald and, if cfg.Vs is "river", against
// River on the same database, one after the other, and returns both rows.
func Run(ctx context.Context, db *Database, cfg *Config) (*Report, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.ServeDiscard {
		c.Serve = true
		c.IdleSamples = -1 // the discard driver cannot tell the bench a probe arrived
	}
	rep := &Report{}
	rc := &rep.Config
	rc.Intents, rc.RoutesPerIntent, rc.PayloadBytes, rc.Batch = c.Intents, c.RoutesPerIntent, c.PayloadBytes, c.Batch
	rc.Producers, rc.Latency, rc.FailShare, rc.Concurrency = c.Producers, c.Latency.String(), c.FailShare, c.Concurrency
	rc.Processes, rc.Durable, rc.Postgres, rc.CPUs = c.Processes, db.Durable, db.Version, runtime.NumCPU()
	rc.SharedBuffers = db.SharedBuffers
	rc.Provider, rc.Receipts = c.Provider, c.Receipts
	if c.Vs == "river" {
		rc.RiverWorker = c.riverWorkerMode()
	}
	if c.Receipts {
		rc.ReceiptDelay = c.ReceiptDelay.String()
	}

	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	newWork := func() *workload { return newWorkload(&c, runID, c.RoutesPerIntent) }
	var traces *oteltest.Receiver
	if c.Tracing {
		// One receiver for the run, in this process: a collector's work,
		// counted in the bench process's CPU, not the engine's.
		traces = oteltest.Start(false)
		defer traces.Close()
		rc.TraceSample = &c.TraceSample
	}
	subjects := []func(*sink) subject{
		func(sk *sink) subject {
			h := newHeraldSubject(&c, db, sk, newWork())
			h.traces = traces
			return h
		},
	}
	if c.Vs == "river" {
		subjects = append(subjects, func(sk *sink) subject { return newRiverSubject(&c, db, sk, newWork()) })
	}
	if c.Warmup {
		// A discarded round at a fifth of the size: the cluster's WAL
		// segments exist and are recycled afterwards, and both engines'
		// statements are planned, before anything is measured.
		w := c
		w.Intents = max(c.Intents/5, 1)
		w.IdleSamples = -1
		for i := range subjects {
			sk := newSink(c.Latency, c.FailShare)
			wc := w
			sub := subjects[i](sk)
			switch s := sub.(type) {
			case *heraldSubject:
				s.cfg = &wc
			case *riverSubject:
				s.cfg = &wc
			}
			if err := emptyBoth(ctx, db); err != nil {
				return rep, err
			}
			if _, err := runPhase(ctx, db, &wc, sub, sk); err != nil {
				return rep, fmt.Errorf("warm-up: %s: %w", sub.name(), err)
			}
		}
	}
	for round := range c.Rounds {
		rows := make([]Row, len(subjects))
		for k := range subjects {
			// Alternate which engine goes first, so neither always gets
			// the fresher database.
			i := k
			if round%2 == 1 {
				i = len(subjects) - 1 - k
			}
			runID = strconv.FormatInt(time.Now().UnixNano(), 36)
			sk := newSink(c.Latency, c.FailShare)
			if err := emptyBoth(ctx, db); err != nil {
				return rep, err
			}
			row, err := runPhase(ctx, db, &c, subjects[i](sk), sk)
			if err != nil {
				return rep, fmt.Errorf("%s: %w", row.Engine, err)
			}
			rows[i] = row
		}
		rep.Rounds = append(rep.Rounds, rows)
	}
	rep.Rows = rep.Rounds[medianRound(rep.Rounds)]
	if len(rep.Rounds) == 1 {
		rep.Rounds = nil
	}
	if c.Warmup {
		rep.Notes = append(rep.Notes, "a discarded warm-up round (a fifth of the intents, each engine) ran first")
	}
	rep.Notes = append(rep.Notes,
		"both engines run on the same database in the same run, one after the other, each after a CHECKPOINT and with both engines' tables emptied (TRUNCATE), so neither phase's autovacuum cleans up after the other; Postgres figures are deltas over the workload and the idle probes that follow it (one row per probe)",
		"after each phase the bench VACUUMs the engine's tables (its cleanup, measured apart: autovacuum visits a database about once a minute, so whether it cleaned up during a phase of seconds, and was counted in it, is chance; the phase plus its VACUUM after is the whole cost whichever way it fell)",
		fmt.Sprintf("the bench channel takes %s per attempt and fails %.0f%% of attempts transiently; latency is accept (commit) to published, from the database's timestamps", c.Latency, 100*c.FailShare),
		"peak RSS of an in-process engine is this whole process's VmHWM over the phase (reset at its start), producers included",
		indexNote(db),
	)
	if c.Tracing {
		rep.Notes = append(rep.Notes, fmt.Sprintf("herald's engine traces: an OpenTelemetry SDK tracer provider sampling parentbased_traceidratio %g, batching spans to the OTLP/HTTP exporter, which posts them to a loopback receiver in the bench process (internal/harness/oteltest, decoding and counting them: its CPU is in the bench process's figure, as a collector's would not be); the sampler decides per root span: each claim batch (its attempts are its children, linked to the intents' traces) and each completion or receipts batch; the producers' client is not traced; River is not traced", c.TraceSample))
	} else {
		rep.Notes = append(rep.Notes, "tracing off: herald's engine has no tracer provider (OpenTelemetry's no-op), as serve without OTEL_TRACES_EXPORTER")
	}
	if c.Provider {
		what := "without receipts: the baseline of -receipts"
		if c.Receipts {
			what = fmt.Sprintf("with receipts: the completion records each route's receipt key, the sink posts one delivery receipt per message (%d connections) to herald's receipts endpoint %s after answering it, where concurrent ones are stored and matched together (one transaction per group); a phase ends once every receipt is matched, so the Postgres figures include the receipts' work; compare them with a -provider run for the cost of receipts per route", receiptSenders, c.ReceiptDelay)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("herald delivers SMS routes (one number per route, a %d-character text) through provider %s (driver sms-http, the only provider of its routing rule) to the loopback sink, which answers each with a message id, %s", c.PayloadBytes, benchProvider, what))
		if c.Vs == "river" {
			rep.Notes = append(rep.Notes, "River's worker (river_worker http) sends each job's SMS through sms/bench's sms-http driver, built from the same provider file as herald's engine builds it (its own connection pool per client, as each herald process has), to the same loopback sink; River has no routing, circuit, caps or receipts, so herald does that extra work in this comparison")
		}
	} else if c.Vs == "river" && c.httpDelivery() {
		rep.Notes = append(rep.Notes, fmt.Sprintf("River's worker (river_worker http) POSTs each job through herald's webhook driver, built as the serve processes build theirs (the same secret, signature, headers, body and connection pool settings), to the same loopback sink, from %d River worker processes (herald bench -mode %s), one per herald serve process, each with its own pool and driver; River's producers stay in the bench process, as herald's", c.Processes, ModeRiverWorker))
	} else if c.Vs == "river" {
		rep.Notes = append(rep.Notes, "River's worker is a no-op (river_worker noop): it calls the bench channel in memory, as herald's in-process engine does (beside serve processes with the discard driver: it does nothing, in as many River worker processes); nothing goes over the network")
	}
	if c.httpDelivery() {
		rep.Notes = append(rep.Notes, "the loopback sink checks every request as herald's driver makes it (signature or API key, headers, body) and answers one that is not with 400; http requests and rejected count them")
	}
	if c.Vs == "river" {
		rep.Notes = append(rep.Notes,
			fmt.Sprintf("River gets the settings of its own benchmark (riverqueue/river cmd/river/riverbench): FetchCooldown %s, FetchPollInterval %s; the same concurrency as MaxWorkers, and one job per route with the same payload", riverFetchCooldown, riverFetchPollInterval),
			fmt.Sprintf("both engines' worker pools have %d connections; producers have their own pool of %d", engineConns(c.Concurrency), c.Producers+1),
		)
	}
	return rep, nil
}

// indexNote says how the index tuples were counted, or why they were not.
func indexNote(db *Database) string {
	if db.wal == nil {
		return fmt.Sprintf("index tuples written: n/a (%v)", db.walErr)
	}
	return "index tuples written are counted from each phase's WAL with pg_walinspect (a replication slot keeps it until read): for a B-tree, its leaf inserts, posting-list splits and leaf splits (exact), and for a GIN index without a pending list (fastupdate off), its inserts (exact); for other index types (River's GIN indexes on args and metadata) and unlogged tables (River's river_leader), which write no countable WAL, one entry per new heap tuple version that was not a HOT update; HOT updates are pg_stat_user_tables.n_tup_hot_upd deltas"
}

func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/riverqueue/river" {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}

// medianRound returns the round whose first/second delivery ratio is the
// median (with one engine: whose delivery rate is).
func medianRound(rounds [][]Row) int {
	key := func(rows []Row) float64 {
		if len(rows) == 2 && rows[1].DeliveredPerSec > 0 {
			return rows[0].DeliveredPerSec / rows[1].DeliveredPerSec
		}
		return rows[0].DeliveredPerSec
	}
	idx := make([]int, len(rounds))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(key(rounds[a]), key(rounds[b])) })
	return idx[len(idx)/2]
}

// emptyBoth empties herald's and River's tables before a phase, so each
// engine starts from empty tables (as River's own benchmark does) and
// neither inherits the dead tuples of the phase before, which autovacuum
// would otherwise clean up during this phase, at this engine's expense.
func emptyBoth(ctx context.Context, db *Database) error {
	if err := benchstore.New().BenchReset(ctx, db.Pool); err != nil {
		return fmt.Errorf("empty herald tables: %w", err)
	}
	if _, err := db.Pool.Exec(ctx, riverResetSQL); err != nil {
		return fmt.Errorf("empty river_job: %w", err)
	}
	return nil
}
