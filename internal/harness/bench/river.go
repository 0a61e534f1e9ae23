package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/schema"
)

// River's settings in the comparison, taken from River's own benchmark
// (riverqueue/river cmd/river/riverbench): "When benchmarking to maximize
// job throughput these numbers have an outsized effect on results".
const (
	riverFetchCooldown     = 2 * time.Millisecond
	riverFetchPollInterval = 20 * time.Millisecond
	riverQueue             = "herald_bench"
	riverKind              = "herald_bench"
)

// riverArgs is one route as a River job: the route's destination and the
// content herald stores for it (a webhook's JSON, an SMS's {"body": …}).
type riverArgs struct {
	Key     string          `json:"key"`
	Dest    string          `json:"dest"`
	Content json.RawMessage `json:"content"`
}

// Kind implements river.JobArgs.
func (riverArgs) Kind() string { return riverKind }

// InsertOpts puts the bench's jobs in a queue of their own.
func (riverArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: riverQueue} }

// riverWorker works a job. With deliver set (riverWorkerHTTP) it makes the
// delivery herald's engine makes for the route, through the same driver;
// without, it calls the bench channel in memory (riverWorkerNoop). A
// transient failure is an error, retried by the client's retry policy
// (heraldBackoff with deliver); a permanent one cancels the job, as herald
// dead-letters the route.
type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	sink    *sink
	deliver channel.Deliverer
}

// Work implements river.Worker.
func (w *riverWorker) Work(ctx context.Context, j *river.Job[riverArgs]) error {
	if w.deliver == nil {
		if !w.sink.attempt(ctx, isProbe(j.Args.Content)) {
			return errors.New("bench: injected transient failure")
		}
		return nil
	}
	out := w.deliver.Deliver(ctx, &channel.Message{
		NotificationID:   j.Args.Key,
		RouteID:          strconv.FormatInt(j.ID, 10),
		NotificationType: benchType,
		Attempt:          j.Attempt,
		Address:          j.Args.Dest,
		Content:          j.Args.Content,
		AcceptedAt:       j.CreatedAt,
	})
	switch out.Class {
	case channel.Delivered:
		return nil
	case channel.Transient:
		return fmt.Errorf("%s: %s", out.Classification, out.Message)
	default:
		return river.JobCancel(fmt.Errorf("%s: %s", out.Classification, out.Message))
	}
}

// heraldBackoff is a River retry policy that waits as herald's dispatcher
// does after a transient failure, with its default backoff (exponential
// from 1s, full jitter, capped at 10m): River's worker retries a failed
// delivery when herald would retry it.
type heraldBackoff struct{ b dispatch.BackoffConfig }

func newHeraldBackoff() heraldBackoff {
	return heraldBackoff{dispatch.BackoffConfig{Base: time.Second, Cap: 10 * time.Minute, RandFunc: rand.Float64}}
}

// NextRetry implements river.ClientRetryPolicy.
func (p heraldBackoff) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(p.b.Delay(job.Attempt, 0))
}

// riverSubject drives River on the same database: an insert-only client on
// the producers' pool, and working clients, each on a pool of its own: one
// in this process when herald's engine runs in this process, else one
// River worker process (ModeRiverWorker) per herald serve process.
type riverSubject struct {
	cfg      *Config
	db       *Database
	sink     *sink
	work     *workload
	prodPool *pgxpool.Pool
	inserter *river.Client[pgx.Tx]
	// local is the working client in this process, and deliverer its
	// driver (nil: the no-op worker); procs the worker processes.
	local     *riverWork
	deliverer channel.Deliverer
	procs     *serveProcesses
	stopSink  func()
}

func newRiverSubject(cfg *Config, db *Database, sk *sink, w *workload) *riverSubject {
	return &riverSubject{cfg: cfg, db: db, sink: sk, work: w}
}

func (r *riverSubject) name() string { return "river" }

// inProcesses reports whether River works in worker processes, as herald
// does in serve processes.
func (r *riverSubject) inProcesses() bool { return r.cfg.Processes > 1 || r.cfg.Serve }

func (r *riverSubject) settings() string {
	worker := "worker noop: the bench channel in memory, as herald's in-process engine"
	switch {
	case r.cfg.ServeDiscard:
		worker = "worker noop: it does nothing, as serve's discard driver"
	case r.cfg.riverWorkerMode() == riverWorkerNoop:
	case r.cfg.Provider:
		worker = "worker http: each job sent through sms/bench's sms-http driver, built as herald's engine builds it, to the loopback sink"
	default:
		worker = "worker http: each job POSTed through herald's webhook driver, signed with the serve processes' secret, to the loopback sink"
	}
	retry := "default retry policy"
	if r.cfg.riverWorkerMode() == riverWorkerHTTP {
		retry = "herald's default backoff as its retry policy (exponential from 1s, full jitter)"
	}
	where := "one working client in this process"
	if r.inProcesses() {
		where = fmt.Sprintf("%d River worker processes (herald bench -mode %s), one per herald serve process, each one working client with its own pool and driver", r.cfg.Processes, ModeRiverWorker)
	}
	return fmt.Sprintf("River %s: %s; FetchCooldown %s and FetchPollInterval %s as in River's own riverbench, "+
		"MaxWorkers %d per client (riverbench uses 2,000), %s, %s, InsertMany batches of %d from %d producers in this process",
		riverVersion(), worker, riverFetchCooldown, riverFetchPollInterval, r.cfg.Concurrency, where, retry, r.cfg.Batch, r.cfg.Producers)
}

// The statements below touch River's tables, which River's migrator
// creates and sqlc does not know: the commented exception to "SQL lives in
// queries/*.sql".
const (
	riverResetSQL = `TRUNCATE herald.river_job`
	// riverOpenSQL counts the jobs not finalized (River's CHECK ties
	// finalized_at IS NULL to these states) through the leading column of
	// River's fetching index rather than a scan of every job, as the
	// routes' count reads only routes_live: the bench polls both while the
	// engines run, and their cost is counted as each engine's.
	riverOpenSQL = `SELECT count(*) FROM herald.river_job
WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled') AND queue = $1`
	// riverSummarySQL: created_at is set by the inserting statement,
	// finalized_at when the completer marks the job completed.
	riverSummarySQL = `
SELECT count(*)::bigint,
    count(*) FILTER (WHERE state = 'completed')::bigint,
    coalesce(percentile_cont(0.50) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - created_at)) FILTER (WHERE state = 'completed'), 0)::float8,
    coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - created_at)) FILTER (WHERE state = 'completed'), 0)::float8,
    coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - created_at)) FILTER (WHERE state = 'completed'), 0)::float8,
    coalesce(max(finalized_at), now()),
    coalesce(sum(attempt), 0)::bigint
FROM herald.river_job
WHERE queue = $1 AND args->>'key' NOT LIKE 'idle-%' AND finalized_at IS NOT NULL`
)

func (r *riverSubject) start(ctx context.Context) error {
	// Like River's own benchmark, the phase starts from an empty jobs table
	// (Run empties both engines' tables before each phase).
	var err error
	r.prodPool, err = r.newPool(ctx, int32(r.cfg.Producers+1))
	if err != nil {
		return err
	}
	r.inserter, err = river.NewClient(riverpgxv5.New(r.prodPool), &river.Config{
		Schema: schema.Name,
		Logger: slog.New(warnOnly{r.cfg.Logger.Handler()}),
	})
	if err != nil {
		return fmt.Errorf("create river inserter: %w", err)
	}
	conns := engineConns(r.cfg.Concurrency)
	// In herald's HTTP modes the worker delivers to the sink as herald
	// does: through the same driver, one per process, as each herald
	// process has its own.
	switch {
	case r.inProcesses():
		worker := "discard"
		if !r.cfg.ServeDiscard {
			worker = "webhook"
			if r.work.dest, r.stopSink, err = r.sink.serveHTTP(); err != nil {
				return fmt.Errorf("start webhook sink: %w", err)
			}
		}
		r.procs, err = startRiverProcesses(r.cfg.Processes, r.cfg.ServeBinary, r.db.URL, worker,
			r.cfg.Concurrency, conns, r.cfg.ServeOutput)
		return err
	case r.cfg.Provider:
		r.work.sms = true
		url, stop, err := r.sink.serveProvider(nil)
		if err != nil {
			return fmt.Errorf("start provider sink: %w", err)
		}
		r.stopSink = stop
		if r.deliverer, err = newProviderDeliverer(url); err != nil {
			return fmt.Errorf("river worker's driver: %w", err)
		}
	}
	r.local, err = startRiverWorker(ctx, r.db.URL, r.cfg.Concurrency, conns, r.deliverer, r.sink, r.cfg.Logger)
	return err
}

func (r *riverSubject) newPool(ctx context.Context, conns int32) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(r.db.URL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	pcfg.MaxConns = conns
	p, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return p, nil
}

func (r *riverSubject) params(prefix string, from, to int) []river.InsertManyParams {
	ps := make([]river.InsertManyParams, 0, (to-from)*r.cfg.RoutesPerIntent)
	for i := from; i < to; i++ {
		for j := range r.cfg.RoutesPerIntent {
			dest, content := r.work.routeJob(j, prefix != "")
			ps = append(ps, river.InsertManyParams{Args: riverArgs{
				Key:     fmt.Sprintf("%s%s-%d", prefix, r.work.runID, i),
				Dest:    dest,
				Content: content,
			}})
		}
	}
	return ps
}

func (r *riverSubject) submit(ctx context.Context, from, to int) error {
	_, err := r.inserter.InsertMany(ctx, r.params("", from, to))
	return err
}

func (r *riverSubject) submitIdle(ctx context.Context, i int) error {
	_, err := r.inserter.InsertMany(ctx, r.params("idle-", i, i+1)[:1])
	return err
}

func (r *riverSubject) open(ctx context.Context) (int64, error) {
	var n int64
	if err := r.db.Pool.QueryRow(ctx, riverOpenSQL, riverQueue).Scan(&n); err != nil {
		return 0, fmt.Errorf("count open jobs: %w", err)
	}
	return n, nil
}

func (r *riverSubject) summarize(ctx context.Context) (summary, error) {
	var s summary
	err := r.db.Pool.QueryRow(ctx, riverSummarySQL, riverQueue).Scan(
		&s.routes, &s.published, &s.p50, &s.p95, &s.p99, &s.lastTerminal, &s.attempts)
	if err != nil {
		return s, fmt.Errorf("summarize jobs: %w", err)
	}
	return s, nil
}

func (r *riverSubject) peakRSS() []int64 {
	if r.procs != nil {
		return r.procs.PeakRSS()
	}
	return []int64{PeakRSS(0)}
}

func (r *riverSubject) stop() error {
	var errs []error
	if r.local != nil {
		errs = append(errs, r.local.stop())
		r.local = nil
	}
	if r.procs != nil {
		errs = append(errs, r.procs.Stop())
		r.procs = nil
	}
	if r.deliverer != nil {
		closeDeliverer(r.deliverer)
		r.deliverer = nil
	}
	if r.prodPool != nil {
		r.prodPool.Close()
		r.prodPool = nil
	}
	if r.stopSink != nil {
		r.stopSink()
		r.stopSink = nil
	}
	return errors.Join(errs...)
}

func (r *riverSubject) owns(table string) bool { return strings.HasPrefix(table, "river_") }

// engineConns is the pool size both engines' workers get: enough for the
// claim, complete and listen loops at the given concurrency.
func engineConns(concurrency int) int32 { return int32(min(max(10, concurrency/10), 40)) }

// warnOnly passes River's warnings and errors on, and drops the rest.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}
