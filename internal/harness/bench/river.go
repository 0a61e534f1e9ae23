package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

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

// riverArgs is one notification as a River job: the same content as the
// herald intent, plus its destination.
type riverArgs struct {
	Key     string          `json:"key"`
	Dest    string          `json:"dest"`
	Content json.RawMessage `json:"content"`
}

// Kind implements river.JobArgs.
func (riverArgs) Kind() string { return riverKind }

// InsertOpts puts the bench's jobs in a queue of their own.
func (riverArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: riverQueue} }

// riverWorker works a job through the same bench channel as herald's
// deliveries; a failed attempt is an error, retried by River's default
// policy.
type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	sink *sink
}

// Work implements river.Worker.
func (w *riverWorker) Work(ctx context.Context, j *river.Job[riverArgs]) error {
	if !w.sink.attempt(ctx, isProbe(j.Args.Content)) {
		return errors.New("bench: injected transient failure")
	}
	return nil
}

// riverSubject drives River on the same database: an insert-only client on
// the producers' pool, and a working client on a pool of its own.
type riverSubject struct {
	cfg      *Config
	db       *Database
	sink     *sink
	work     *workload
	prodPool *pgxpool.Pool
	workPool *pgxpool.Pool
	inserter *river.Client[pgx.Tx]
	client   *river.Client[pgx.Tx]
}

func newRiverSubject(cfg *Config, db *Database, sk *sink, w *workload) *riverSubject {
	return &riverSubject{cfg: cfg, db: db, sink: sk, work: w}
}

func (r *riverSubject) name() string { return "river" }

func (r *riverSubject) settings() string {
	return fmt.Sprintf("River %s: FetchCooldown %s and FetchPollInterval %s as in River's own riverbench, "+
		"MaxWorkers %d (riverbench uses 2,000), default retry policy, InsertMany batches of %d from %d producers, in this process",
		riverVersion(), riverFetchCooldown, riverFetchPollInterval, r.cfg.Concurrency, r.cfg.Batch, r.cfg.Producers)
}

// The statements below touch River's tables, which River's migrator
// creates and sqlc does not know: the commented exception to "SQL lives in
// queries/*.sql".
const (
	riverResetSQL = `TRUNCATE herald.river_job`
	riverOpenSQL  = `SELECT count(*) FROM herald.river_job WHERE queue = $1 AND finalized_at IS NULL`
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
	r.workPool, err = r.newPool(ctx, engineConns(r.cfg.Concurrency))
	if err != nil {
		return err
	}
	quiet := slog.New(warnOnly{r.cfg.Logger.Handler()})
	r.inserter, err = river.NewClient(riverpgxv5.New(r.prodPool), &river.Config{
		Schema: schema.Name,
		Logger: quiet,
	})
	if err != nil {
		return fmt.Errorf("create river inserter: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{sink: r.sink})
	r.client, err = river.NewClient(riverpgxv5.New(r.workPool), &river.Config{
		Schema:            schema.Name,
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Queues:            map[string]river.QueueConfig{riverQueue: {MaxWorkers: r.cfg.Concurrency}},
		Workers:           workers,
		Logger:            quiet,
	})
	if err != nil {
		return fmt.Errorf("create river client: %w", err)
	}
	if err := r.client.Start(ctx); err != nil {
		return fmt.Errorf("start river client: %w", err)
	}
	return nil
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
	content := r.work.content
	if prefix != "" {
		content = r.work.probe
	}
	ps := make([]river.InsertManyParams, 0, (to-from)*r.cfg.RoutesPerIntent)
	for i := from; i < to; i++ {
		for j := range r.cfg.RoutesPerIntent {
			ps = append(ps, river.InsertManyParams{Args: riverArgs{
				Key:     fmt.Sprintf("%s%s-%d", prefix, r.work.runID, i),
				Dest:    fmt.Sprintf("%s/%d", r.work.dest, j),
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

func (r *riverSubject) peakRSS() []int64 { return []int64{PeakRSS(0)} }

func (r *riverSubject) stop() error {
	var err error
	if r.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = r.client.Stop(ctx)
		cancel()
		r.client = nil
	}
	for _, p := range []*pgxpool.Pool{r.prodPool, r.workPool} {
		if p != nil {
			p.Close()
		}
	}
	r.prodPool, r.workPool = nil, nil
	return err
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
