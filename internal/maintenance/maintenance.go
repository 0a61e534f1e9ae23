// Package maintenance keeps herald's tables healthy: River periodic jobs,
// run under River's leader election so that only one `herald serve` process
// schedules them however many run, delete finished notifications once their
// retention and idempotency windows are over, delete old malformed intents,
// optionally delete old dead letters, and rebuild the routes due index when it
// is bloated.
//
// Each job works in bounded batches (one short statement each), logs what it
// did, and records a run in metrics.Maintenance. The same River client runs
// other packages' workers (the operator's bulk replay) through
// Config.Workers.
package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/schema"
)

// Job names, used as the River job kinds' suffix, in logs (key "job") and as
// the metrics' job label.
const (
	// JobFinishedRetention deletes finished notifications.
	JobFinishedRetention = "finished_retention"
	// JobMalformedRetention deletes old malformed intents.
	JobMalformedRetention = "malformed_retention"
	// JobDeadLetterRetention deletes old dead-lettered notifications; it is
	// scheduled only when Config.DeadLetterRetention is set.
	JobDeadLetterRetention = "dead_letter_retention"
	// JobBloatCheck measures routes_due_idx and reindexes it when bloated.
	JobBloatCheck = "bloat_check"
)

// Defaults for Config's zero fields.
const (
	DefaultInterval           = 10 * time.Minute
	DefaultBloatCheckInterval = 15 * time.Minute
	DefaultFinishedRetention  = 7 * 24 * time.Hour
	DefaultMalformedRetention = 30 * 24 * time.Hour
	DefaultBatchSize          = 1000
	DefaultMaxWorkers         = 4
	DefaultBloatRatio         = 4.0
	DefaultBloatMinBytes      = 16 << 20
	DefaultStopTimeout        = 15 * time.Second
)

// Config configures Maintenance. The zero value (or nil) is usable.
type Config struct {
	// Logger receives one line per job run saying what it did. Defaults to a
	// logger that discards.
	Logger *slog.Logger
	// Metrics records each run (nil records nothing).
	Metrics *metrics.Metrics
	// NowFunc is the clock the retention cut-offs are computed from. Defaults
	// to time.Now; tests move it.
	NowFunc func() time.Time

	// Interval is how often the retention jobs run. Defaults to
	// DefaultInterval.
	Interval time.Duration
	// FinishedRetention is how long a notification whose routes are all
	// published, skipped or canceled is kept after its last route changed.
	// It is never deleted before its idempotency window ends, whatever this
	// says. Defaults to DefaultFinishedRetention.
	FinishedRetention time.Duration
	// MalformedRetention is how long malformed intents are kept. Defaults to
	// DefaultMalformedRetention.
	MalformedRetention time.Duration
	// DeadLetterRetention, when positive, is how long a notification with
	// dead-lettered routes is kept once all its routes are terminal. Zero
	// (the default) keeps dead letters until an operator replays or purges
	// them.
	DeadLetterRetention time.Duration
	// BatchSize is how many rows one delete statement removes at most.
	// Defaults to DefaultBatchSize.
	BatchSize int

	// BloatCheckInterval is how often routes_due_idx is measured. Defaults
	// to DefaultBloatCheckInterval.
	BloatCheckInterval time.Duration
	// BloatRatio is how many times larger than its live entries need the due
	// index may grow before it is rebuilt. Defaults to DefaultBloatRatio.
	BloatRatio float64
	// BloatMinBytes is the size under which the due index is never rebuilt,
	// however bloated. Defaults to DefaultBloatMinBytes; negative means 0.
	BloatMinBytes int64

	// MaxWorkers is the default queue's concurrency in this process.
	// Defaults to DefaultMaxWorkers.
	MaxWorkers int
	// Workers, when set, registers other packages' River workers (the
	// operator's bulk replay) on the client maintenance runs.
	Workers func(*river.Workers) error
	// PeriodicJobs are other packages' periodic jobs, scheduled alongside
	// maintenance's under the same leader election.
	PeriodicJobs []*river.PeriodicJob
	// RunOnStart inserts each periodic job once as soon as this process is
	// elected leader (the demo and tests use it).
	RunOnStart bool
	// StopTimeout is how long Run lets running jobs finish once its context
	// is done. Defaults to DefaultStopTimeout.
	StopTimeout time.Duration
}

func (c *Config) validate() error {
	switch {
	case c.Interval < 0:
		return errors.New("Interval must not be negative")
	case c.BloatCheckInterval < 0:
		return errors.New("BloatCheckInterval must not be negative")
	case c.FinishedRetention < 0:
		return errors.New("FinishedRetention must not be negative")
	case c.MalformedRetention < 0:
		return errors.New("MalformedRetention must not be negative")
	case c.DeadLetterRetention < 0:
		return errors.New("DeadLetterRetention must not be negative (0 keeps dead letters)")
	case c.BatchSize < 0:
		return errors.New("BatchSize must not be negative")
	case c.BloatRatio < 0:
		return errors.New("BloatRatio must not be negative")
	case c.MaxWorkers < 0:
		return errors.New("MaxWorkers must not be negative")
	case c.StopTimeout < 0:
		return errors.New("StopTimeout must not be negative")
	}
	return nil
}

// Maintenance runs herald's maintenance jobs on a River client.
type Maintenance struct {
	pool    *pgxpool.Pool
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Metrics
	queries *store.Queries
	client  *river.Client[pgx.Tx]

	// resume holds, per retention job, where a run that was cut short
	// (canceled, timed out, failed) stood: the job's next run in this
	// process goes on from there rather than from the oldest record, so
	// records that must stay (dead letters, above all) at the head of
	// records_pkey are not read again by every run, and a run that
	// cannot finish within its time still makes progress. A run that
	// finishes clears it: the next run is a whole pass again, from the
	// oldest record, and sees what has become deletable behind the cursor.
	resumeMu sync.Mutex
	resume   map[string]cursor
}

// New returns Maintenance for the database behind pool, with its River client
// configured but not started (Run runs it). It returns an error naming the
// bad Config field.
func New(pool *pgxpool.Pool, cfg *Config) (*Maintenance, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("maintenance config: %w", err)
	}
	c := *cfg
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.BloatCheckInterval = cmp.Or(c.BloatCheckInterval, DefaultBloatCheckInterval)
	c.FinishedRetention = cmp.Or(c.FinishedRetention, DefaultFinishedRetention)
	c.MalformedRetention = cmp.Or(c.MalformedRetention, DefaultMalformedRetention)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.BloatRatio = cmp.Or(c.BloatRatio, DefaultBloatRatio)
	if c.BloatMinBytes == 0 {
		c.BloatMinBytes = DefaultBloatMinBytes
	}
	c.BloatMinBytes = max(c.BloatMinBytes, 0)
	c.MaxWorkers = cmp.Or(c.MaxWorkers, DefaultMaxWorkers)
	c.StopTimeout = cmp.Or(c.StopTimeout, DefaultStopTimeout)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	m := &Maintenance{
		pool:    pool,
		cfg:     c,
		logger:  cmp.Or(c.Logger, slog.New(slog.DiscardHandler)),
		metrics: c.Metrics,
		queries: store.New(),
		resume:  map[string]cursor{},
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[finishedRetentionArgs]) error {
		_, err := m.DeleteFinished(ctx)
		return err
	}))
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[malformedRetentionArgs]) error {
		_, err := m.DeleteMalformed(ctx)
		return err
	}))
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[deadLetterRetentionArgs]) error {
		_, err := m.DeleteDeadLettered(ctx)
		return err
	}))
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[bloatCheckArgs]) error {
		_, err := m.CheckBloat(ctx)
		return err
	}))
	if c.Workers != nil {
		if err := c.Workers(workers); err != nil {
			return nil, fmt.Errorf("register extra workers: %w", err)
		}
	}

	opts := &river.PeriodicJobOpts{RunOnStart: c.RunOnStart}
	periodic := []*river.PeriodicJob{
		periodicJob(c.Interval, finishedRetentionArgs{}, opts),
		periodicJob(c.Interval, malformedRetentionArgs{}, opts),
		periodicJob(c.BloatCheckInterval, bloatCheckArgs{}, opts),
	}
	if c.DeadLetterRetention > 0 {
		periodic = append(periodic, periodicJob(c.Interval, deadLetterRetentionArgs{}, opts))
	}
	periodic = append(periodic, c.PeriodicJobs...)

	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:       schema.Name,
		Logger:       m.logger,
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.MaxWorkers}},
		Workers:      workers,
		PeriodicJobs: periodic,
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	m.client = client
	return m, nil
}

// Client returns the River client, for packages that insert jobs the
// maintenance process works (the operator's bulk replay).
func (m *Maintenance) Client() *river.Client[pgx.Tx] { return m.client }

// Run runs the River client until ctx is done: it works jobs and, while
// this process is the elected leader, schedules the periodic ones. Then it
// stops the client, letting running jobs finish for Config.StopTimeout at
// most, and returns nil; it returns an error if the client cannot start, or
// cannot stop in time. A ctx done while the client is still starting (a
// process stopped as soon as it started) is a shutdown, not a failure.
func (m *Maintenance) Run(ctx context.Context) error {
	if err := m.client.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start maintenance: %w", err)
	}
	m.logger.Info("maintenance started",
		"interval", m.cfg.Interval,
		"finished_retention", m.cfg.FinishedRetention,
		"malformed_retention", m.cfg.MalformedRetention,
		"dead_letter_retention", m.cfg.DeadLetterRetention,
		"bloat_check_interval", m.cfg.BloatCheckInterval)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.StopTimeout)
	defer cancel()
	if err := m.client.Stop(sctx); err != nil {
		return fmt.Errorf("stop maintenance: %w", err)
	}
	return nil
}

// WeeksAhead is how far ahead of now the finished-route partitions are
// made (migration 00025): a route that finishes in a week without one is
// refused, so maintenance may be down this long before completions fail.
const WeeksAhead = 14 * 24 * time.Hour

// weekLockWait bounds how long making or dropping a week waits for its lock
// on routes: the engine's statements queue behind a waiting DDL lock.
const weekLockWait = 100 * time.Millisecond

// Weeks makes the finished-route partitions of the weeks from now to
// WeeksAhead that do not exist yet, then drops, one at a time, those whose
// week ended more than Config.FinishedRetention ago: a finished route goes
// with its week, whole, instead of row by row. It returns how many weeks it
// made and how many routes (the planner's estimate) the weeks it dropped
// held. A lock it cannot get within weekLockWait fails it (55P03); the
// next run tries again.
func (m *Maintenance) Weeks(ctx context.Context) (made int, dropped int64, err error) {
	now := m.cfg.NowFunc()
	n, err := m.queries.RouteWeeksCreate(ctx, m.pool, store.RouteWeeksCreateParams{
		FirstDay:    pgtype.Date{Time: now.UTC(), Valid: true},
		LastDay:     pgtype.Date{Time: now.Add(WeeksAhead).UTC(), Valid: true},
		WaitSeconds: weekLockWait.Seconds(),
	})
	if err != nil {
		return 0, 0, fmt.Errorf("make weeks: %w", err)
	}
	made = int(n)
	cutoff := now.Add(-m.cfg.FinishedRetention)
	for {
		rows, err := m.queries.RouteWeeksDropOne(ctx, m.pool, store.RouteWeeksDropOneParams{
			Before:      cutoff,
			WaitSeconds: weekLockWait.Seconds(),
		})
		if err != nil {
			return made, dropped, fmt.Errorf("drop week: %w", err)
		}
		if len(rows) == 0 {
			return made, dropped, nil
		}
		dropped += rows[0].Routes
		m.logger.Info("finished routes' week dropped", "job", JobFinishedRetention,
			"week", rows[0].Week.Time.Format(time.DateOnly), "routes_about", rows[0].Routes)
	}
}

// DeleteFinished drops the finished routes' weeks past retention (Weeks),
// then deletes, batch by batch, the notifications whose routes are all
// gone with their weeks, or are published, skipped or canceled and were
// last changed longer than Config.FinishedRetention ago (routes from before
// migration 00025), and whose idempotency window is over. It never deletes
// a notification with a dead-lettered or non-terminal route. It returns
// how many notifications it deleted. A week it could not drop (its lock)
// is logged and left to the next run; the notifications go on.
func (m *Maintenance) DeleteFinished(ctx context.Context) (int64, error) {
	if _, _, err := m.Weeks(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s: %w", JobFinishedRetention, ctx.Err())
		}
		m.logger.Warn("finished routes' weeks: left to the next run", "job", JobFinishedRetention, "err", err)
	}
	now := m.cfg.NowFunc()
	cutoff := now.Add(-m.cfg.FinishedRetention)
	cur := m.resumeFrom(JobFinishedRetention)
	return m.runCursorJob(ctx, JobFinishedRetention, &cur, func(ctx context.Context) (int64, int64, error) {
		row, err := m.queries.RecordDeleteFinished(ctx, m.pool, store.RecordDeleteFinishedParams{
			AcceptedBefore: cutoff,
			FinishedBefore: cutoff,
			Now:            &now,
			AfterID:        cur.id,
			BatchSize:      int32(m.cfg.BatchSize),
		})
		cur.advance(row.Candidates, row.LastNotificationID)
		return row.Candidates, row.Deleted, err
	})
}

// DeleteDeadLettered deletes, batch by batch, the notifications with
// dead-lettered routes whose routes are all terminal, whose dead letters are
// all older than Config.DeadLetterRetention and whose idempotency window is
// over. With DeadLetterRetention zero (the default) it deletes nothing.
func (m *Maintenance) DeleteDeadLettered(ctx context.Context) (int64, error) {
	if m.cfg.DeadLetterRetention <= 0 {
		return 0, nil
	}
	now := m.cfg.NowFunc()
	cutoff := now.Add(-m.cfg.DeadLetterRetention)
	cur := m.resumeFrom(JobDeadLetterRetention)
	return m.runCursorJob(ctx, JobDeadLetterRetention, &cur, func(ctx context.Context) (int64, int64, error) {
		row, err := m.queries.RecordDeleteDeadLettered(ctx, m.pool, store.RecordDeleteDeadLetteredParams{
			DeadBefore: cutoff,
			Now:        &now,
			AfterID:    cur.id,
			BatchSize:  int32(m.cfg.BatchSize),
		})
		cur.advance(row.Candidates, row.LastNotificationID)
		return row.Candidates, row.Deleted, err
	})
}

// DeleteMalformed deletes, batch by batch, the malformed intents recorded
// more than Config.MalformedRetention ago.
func (m *Maintenance) DeleteMalformed(ctx context.Context) (int64, error) {
	cutoff := m.cfg.NowFunc().Add(-m.cfg.MalformedRetention)
	return m.runJob(ctx, JobMalformedRetention, func(ctx context.Context) (int64, int64, error) {
		n, err := m.queries.MalformedIntentDeleteBefore(ctx, m.pool, store.MalformedIntentDeleteBeforeParams{
			RecordedBefore: cutoff,
			BatchSize:      int32(m.cfg.BatchSize),
		})
		return n, n, err
	})
}

// cursor is where a retention run's scan of records_pkey stands: after id,
// exclusive. The zero cursor, the empty id, is before every record.
type cursor struct {
	id string
}

// advance moves the cursor to the last candidate of a batch, if it had any.
func (c *cursor) advance(candidates int64, id string) {
	if candidates > 0 {
		c.id = id
	}
}

// resumeFrom is where job's next run starts: where its last run was cut
// short, or (the zero cursor) before every record.
func (m *Maintenance) resumeFrom(job string) cursor {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	return m.resume[job]
}

// runCursorJob runs a retention job whose batches walk records with cur (see
// runJob). If the run fails or is cut short, the job's next run goes on from
// where cur stands; if it finishes, the next run starts from the oldest
// record.
func (m *Maintenance) runCursorJob(ctx context.Context, job string, cur *cursor, batch func(context.Context) (candidates, deleted int64, err error)) (int64, error) {
	total, err := m.runJob(ctx, job, batch)
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	if err != nil {
		m.resume[job] = *cur
	} else {
		delete(m.resume, job)
	}
	return total, err
}

// runJob calls batch until it finds fewer candidates than a batch holds, then
// logs and records the rows deleted.
func (m *Maintenance) runJob(ctx context.Context, job string, batch func(context.Context) (candidates, deleted int64, err error)) (int64, error) {
	start := time.Now()
	var total int64
	var err error
	for {
		var found, n int64
		found, n, err = batch(ctx)
		total += n
		if err != nil || found < int64(m.cfg.BatchSize) {
			break
		}
	}
	m.metrics.Maintenance(job, total, err)
	if err != nil {
		m.logger.Error("maintenance job failed", "job", job, "deleted", total, "err", err)
		return total, fmt.Errorf("%s: %w", job, err)
	}
	m.logger.Info("maintenance job done", "job", job, "deleted", total, "duration", time.Since(start).Round(time.Millisecond))
	return total, nil
}

// The River job args, one kind per job. They carry nothing: each run reads
// its configuration from Maintenance.
type (
	finishedRetentionArgs   struct{}
	malformedRetentionArgs  struct{}
	deadLetterRetentionArgs struct{}
	bloatCheckArgs          struct{}
)

func (finishedRetentionArgs) Kind() string   { return "herald_" + JobFinishedRetention }
func (malformedRetentionArgs) Kind() string  { return "herald_" + JobMalformedRetention }
func (deadLetterRetentionArgs) Kind() string { return "herald_" + JobDeadLetterRetention }
func (bloatCheckArgs) Kind() string          { return "herald_" + JobBloatCheck }

// periodicJob schedules args every interval. A job is unique per interval,
// so a slow run never piles up copies, and tried at most three times.
func periodicJob(interval time.Duration, args river.JobArgs, opts *river.PeriodicJobOpts) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval), func() (river.JobArgs, *river.InsertOpts) {
		return args, &river.InsertOpts{
			MaxAttempts: 3,
			UniqueOpts:  river.UniqueOpts{ByPeriod: interval},
		}
	}, opts)
}
