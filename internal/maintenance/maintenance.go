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

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/pause"
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
	// JobKeySweep deletes expired idempotency keys; finished retention
	// runs it after the notifications.
	JobKeySweep = "key_sweep"
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
	DefaultKeySweepEvery      = 12 * time.Hour
	DefaultKeySweepBlocks     = 256
	DefaultKeptMergeRows      = 10_000
	DefaultRetentionDuty      = 0.25
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
	// KeySweepEvery is how often expired idempotency keys are swept: a
	// sweep reads the whole keys table once, block range by block range,
	// so an expired key waits at most this long (plus the sweep) for its
	// row to go, and the table holds about the idempotency window plus
	// this much of keys. Defaults to DefaultKeySweepEvery.
	KeySweepEvery time.Duration
	// KeySweepBlocks is how many of the keys table's blocks one sweep
	// statement reads (about 60 keys each). Defaults to
	// DefaultKeySweepBlocks.
	KeySweepBlocks int
	// KeptMergeRows: a retired week's kept records are merged with the
	// kept partition below them when that holds fewer rows than this, or
	// no more than twice as many as the week keeps (migration 00027): kept
	// partitions grow geometrically, stay few, and a kept row is copied a
	// few times at most. Defaults to DefaultKeptMergeRows.
	KeptMergeRows int64
	// RetentionDuty is the share of its time the finished retention job
	// spends in statements: after each statement it waits so that its
	// statements take at most this share of the job's run (0.25: a
	// statement of 10 ms is followed by 30 ms of waiting), and leaves the
	// rest of the database's time to the engine. 1 runs flat out.
	// Defaults to DefaultRetentionDuty.
	RetentionDuty float64

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
	case c.KeySweepEvery < 0:
		return errors.New("KeySweepEvery must not be negative")
	case c.KeySweepBlocks < 0:
		return errors.New("KeySweepBlocks must not be negative")
	case c.KeptMergeRows < 0:
		return errors.New("KeptMergeRows must not be negative")
	case c.RetentionDuty < 0 || c.RetentionDuty > 1:
		return errors.New("RetentionDuty must be between 0 and 1 (0: the default)")
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
	// restUntil is when the wait owed by retention's statements (pace)
	// ends, under resumeMu.
	restUntil time.Time
	// sweep is where the idempotency keys' sweep stands (SweepKeys),
	// under resumeMu.
	sweep keySweep
}

// keySweep is the state of the idempotency keys' sweep in this process: a
// sweep in progress goes on from next up to end (blocks), the table's
// length when it started; done is when the last one finished.
type keySweep struct {
	running   bool
	next, end int64
	done      time.Time
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
	c.KeySweepEvery = cmp.Or(c.KeySweepEvery, DefaultKeySweepEvery)
	c.KeySweepBlocks = cmp.Or(c.KeySweepBlocks, DefaultKeySweepBlocks)
	c.KeptMergeRows = cmp.Or(c.KeptMergeRows, DefaultKeptMergeRows)
	c.RetentionDuty = cmp.Or(c.RetentionDuty, DefaultRetentionDuty)
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
	river.AddWorker(workers, &finishedRetentionWorker{m: m})
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
// with its week, whole, instead of row by row. A week is detached in one
// short transaction and dropped in another, so that the drop does not
// hold the lock on routes. It returns how many weeks it made and how many
// routes (the planner's estimate) the weeks it dropped held. A lock it
// cannot get within weekLockWait, weekLockTries times, fails it (55P03);
// the next run tries again.
func (m *Maintenance) Weeks(ctx context.Context) (made int, dropped int64, err error) {
	now := m.cfg.NowFunc()
	var n int32
	err = m.lockTries(ctx, func(ctx context.Context) error {
		var err error
		n, err = m.queries.RouteWeeksCreate(ctx, m.pool, store.RouteWeeksCreateParams{
			FirstDay:    pgtype.Date{Time: now.UTC(), Valid: true},
			LastDay:     pgtype.Date{Time: now.Add(WeeksAhead).UTC(), Valid: true},
			WaitSeconds: weekLockWait.Seconds(),
		})
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("make weeks: %w", err)
	}
	made = int(n)
	cutoff := now.Add(-m.cfg.FinishedRetention)
	for {
		start := time.Now()
		var rows []store.RouteWeeksDetachOneRow
		err := m.lockTries(ctx, func(ctx context.Context) error {
			var err error
			rows, err = m.queries.RouteWeeksDetachOne(ctx, m.pool, store.RouteWeeksDetachOneParams{
				Before:      cutoff,
				WaitSeconds: weekLockWait.Seconds(),
			})
			return err
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
		if err := m.dropGone(ctx); err != nil {
			return made, dropped, err
		}
		if err := m.pace(ctx, time.Since(start)); err != nil {
			return made, dropped, err
		}
	}
}

// weekLockTries is how many times making, dropping or retiring a week
// tries for its lock (weekLockWait each) before the run leaves it to the
// next, and lockRetryPause how long it waits between tries: the engine's
// statements come and go in milliseconds.
const (
	weekLockTries  = 5
	lockRetryPause = 250 * time.Millisecond
)

// swapTries is how many times a staged week's swap tries for its lock: a
// try costs bringing the staged rows up to date, little.
const swapTries = 20

// lockTries runs fn until it does not fail on its lock_timeout (55P03), at
// most weekLockTries times, waiting lockRetryPause between tries.
func (m *Maintenance) lockTries(ctx context.Context, fn func(context.Context) error) error {
	return m.tries(ctx, weekLockTries, fn)
}

// swapTries is lockTries for a week's swap, swapTries times.
func (m *Maintenance) swapTries(ctx context.Context, fn func(context.Context) error) error {
	return m.tries(ctx, swapTries, fn)
}

// tries runs fn until it does not fail on its lock_timeout, at most n
// times, waiting lockRetryPause between tries.
func (m *Maintenance) tries(ctx context.Context, n int, fn func(context.Context) error) error {
	var err error
	for try := 0; try < n; try++ {
		if try > 0 {
			if err := pause.For(ctx, lockRetryPause); err != nil {
				return err
			}
		}
		var pgErr *pgconn.PgError
		if err = fn(ctx); !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.LockNotAvailable {
			return err
		}
	}
	// Say who held the partitioned tables: a session's open transaction (a
	// producer's read of its routes, say) holds the default partitions,
	// which attaching or detaching a week locks in ACCESS EXCLUSIVE mode.
	holders, herr := m.queries.LockHolders(ctx, m.pool, partitionedTables)
	if herr != nil {
		holders = "holders unknown: " + herr.Error()
	}
	return fmt.Errorf("gave up after %d tries: %s: %w", n, holders, err)
}

// partitionedTables are the tables, and their default partitions, whose
// locks making and retiring weeks wait for.
var partitionedTables = []string{"herald.routes", "herald.routes_live", "herald.records", "herald.records_default"}

// dropGone drops the partitions detached so far (PartitionsDropGone), in a
// transaction of their own: a drop goes over the whole buffer cache and
// unlinks files, which must not hold the parent's lock.
func (m *Maintenance) dropGone(ctx context.Context) error {
	return m.lockTries(ctx, func(ctx context.Context) error {
		_, err := m.queries.PartitionsDropGone(ctx, m.pool, weekLockWait.Seconds()*10)
		if err != nil {
			return fmt.Errorf("drop detached partitions: %w", err)
		}
		return nil
	})
}

// pace waits after a retention statement that took took, so that the
// job's statements take at most Config.RetentionDuty of its time: for a
// duty d, took*(1-d)/d. The wait owed outlives a run cut short: the next
// run waits out the rest first (rest). It returns ctx's error if ctx ends
// first.
func (m *Maintenance) pace(ctx context.Context, took time.Duration) error {
	d := m.cfg.RetentionDuty
	if d >= 1 {
		return ctx.Err()
	}
	wait := time.Duration(float64(took) * (1 - d) / d)
	m.resumeMu.Lock()
	from := time.Now()
	if m.restUntil.After(from) {
		from = m.restUntil
	}
	m.restUntil = from.Add(wait)
	m.resumeMu.Unlock()
	return m.rest(ctx)
}

// rest waits until the wait owed by the statements run so far (pace) is
// over. It returns ctx's error if ctx ends first.
func (m *Maintenance) rest(ctx context.Context) error {
	m.resumeMu.Lock()
	wait := time.Until(m.restUntil)
	m.resumeMu.Unlock()
	if wait <= 0 {
		return ctx.Err()
	}
	return pause.For(ctx, wait)
}

// retireTimeout bounds one week's stage, which runs to its end when the
// job is canceled meanwhile.
const retireTimeout = 10 * time.Minute

// RecordRetireGap is how long after a week's end its records are retired
// on top of Config.FinishedRetention: the routes of a week's records
// finish in it or soon after, and their finished weeks (dropped
// FinishedRetention after they end) have gone by then, so that all but
// the records still needed (dead letters, routes still in flight, open
// idempotency windows) go with the week.
const RecordRetireGap = 7 * 24 * time.Hour

// RecordWeeks makes the record partitions of the weeks from now to
// WeeksAhead that do not exist yet, then retires, one at a time, the
// weeks that ended more than Config.FinishedRetention plus
// RecordRetireGap ago (migration 00027): a week's records that must stay
// are copied into a kept partition (staged), which takes the week's place
// (swapped), and the week's table is dropped whole.
// It returns how many weeks it made, how many records the retired weeks
// held and how many of them were kept. A lock it cannot get
// within weekLockWait fails it (55P03); the next run tries again.
func (m *Maintenance) RecordWeeks(ctx context.Context) (made int, retired, kept int64, err error) {
	now := m.cfg.NowFunc()
	var n int32
	err = m.lockTries(ctx, func(ctx context.Context) error {
		var err error
		n, err = m.queries.RecordWeeksCreate(ctx, m.pool, store.RecordWeeksCreateParams{
			FirstDay:    pgtype.Date{Time: now.UTC(), Valid: true},
			LastDay:     pgtype.Date{Time: now.Add(WeeksAhead).UTC(), Valid: true},
			WaitSeconds: weekLockWait.Seconds(),
		})
		return err
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("make record weeks: %w", err)
	}
	made = int(n)
	before := now.Add(-m.cfg.FinishedRetention - RecordRetireGap)
	for {
		if err := ctx.Err(); err != nil {
			return made, retired, kept, err
		}
		// A retirement is staged (the week's kept records copied: the
		// work) and then swapped in (an instant's lock on records, which
		// it may wait for more than once: a try that gives way costs
		// little, the staged rows stay). A stage is one bounded piece of
		// work, which a cancel would throw away: ctx ending lets it
		// finish, and stops the job before the swap.
		start := time.Now()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retireTimeout)
		staged, err := m.queries.RecordWeekStageOne(rctx, m.pool, store.RecordWeekStageOneParams{
			Before:      before,
			MergeBelow:  m.cfg.KeptMergeRows,
			WaitSeconds: weekLockWait.Seconds() * 10,
		})
		cancel()
		if err != nil {
			return made, retired, kept, fmt.Errorf("stage record week: %w", err)
		}
		if len(staged) == 0 {
			return made, retired, kept, nil
		}
		if err := m.pace(ctx, time.Since(start)); err != nil {
			return made, retired, kept, err
		}
		start = time.Now()
		var rows []store.RecordWeekSwapOneRow
		// A swap is short (its lock waits are bounded): one begun is let
		// finish, so that what it did is known (a statement canceled as it
		// commits would leave its figures unreported). ctx ending stops
		// the tries between them.
		err = m.swapTries(ctx, func(ctx context.Context) error {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retireTimeout)
			defer cancel()
			var err error
			rows, err = m.queries.RecordWeekSwapOne(sctx, m.pool, weekLockWait.Seconds())
			return err
		})
		if err != nil {
			return made, retired, kept, fmt.Errorf("swap record week: %w", err)
		}
		if len(rows) == 0 {
			return made, retired, kept, fmt.Errorf("swap record week: week of %s staged, then not found",
				staged[0].Week.Time.Format(time.DateOnly))
		}
		r := rows[0]
		retired += r.Records
		kept += r.Kept
		m.logger.Info("records' week retired", "job", JobFinishedRetention,
			"week", r.Week.Time.Format(time.DateOnly), "records", r.Records, "kept", r.Kept,
			"merged", r.Merged, "duration", time.Since(start).Round(time.Millisecond))
		if err := m.dropGone(context.WithoutCancel(ctx)); err != nil {
			return made, retired, kept, err
		}
		if err := m.pace(ctx, time.Since(start)); err != nil {
			return made, retired, kept, err
		}
	}
}

// DeleteFinished drops the finished routes' weeks past retention (Weeks),
// then deletes, batch by batch, the notifications whose routes are all
// gone with their weeks, or are published, skipped or canceled and were
// last changed longer than Config.FinishedRetention ago (routes from before
// migration 00025), and whose idempotency window is over. It never deletes
// a notification with a dead-lettered or non-terminal route. First it
// sweeps the expired idempotency keys (SweepKeys), so that a run cut short
// in either part goes on with that part next time: the sweep from where it
// stood, the notifications from where their cursor stood. It returns how
// many notifications it deleted. A week it could not drop (its lock) is
// logged and left to the next run; the notifications go on.
func (m *Maintenance) DeleteFinished(ctx context.Context) (int64, error) {
	if err := m.rest(ctx); err != nil {
		return 0, fmt.Errorf("%s: %w", JobFinishedRetention, err)
	}
	if _, err := m.SweepKeys(ctx); err != nil {
		return 0, err
	}
	return m.deleteFinished(ctx)
}

// deleteFinished is DeleteFinished but for the keys' sweep.
func (m *Maintenance) deleteFinished(ctx context.Context) (int64, error) {
	// Partitions a run detached and could not drop (it stopped between).
	if err := m.dropGone(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s: %w", JobFinishedRetention, ctx.Err())
		}
		m.logger.Warn("detached partitions: left to the next run", "job", JobFinishedRetention, "err", err)
	}
	if _, _, err := m.Weeks(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s: %w", JobFinishedRetention, ctx.Err())
		}
		m.logger.Warn("finished routes' weeks: left to the next run", "job", JobFinishedRetention, "err", err)
	}
	_, retired, kept, err := m.RecordWeeks(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return retired - kept, fmt.Errorf("%s: %w", JobFinishedRetention, ctx.Err())
		}
		m.logger.Warn("records' weeks: left to the next run", "job", JobFinishedRetention, "err", err)
	}
	now := m.cfg.NowFunc()
	cutoff := now.Add(-m.cfg.FinishedRetention)
	// Row by row only below the weeks not retired yet: the kept
	// partitions, records_before and records_default.
	below, err := m.queries.RecordWeeksFloor(ctx, m.pool, idAbove)
	if err != nil {
		return retired - kept, fmt.Errorf("%s: records' weeks: %w", JobFinishedRetention, err)
	}
	cur := m.resumeFrom(JobFinishedRetention)
	n, err := m.runCursorJob(ctx, JobFinishedRetention, &cur, func(ctx context.Context) (int64, int64, error) {
		start := time.Now()
		row, err := m.queries.RecordDeleteFinished(ctx, m.pool, store.RecordDeleteFinishedParams{
			AcceptedBefore: cutoff,
			FinishedBefore: cutoff,
			Now:            &now,
			AfterID:        cur.id,
			BelowID:        below,
			BatchSize:      int32(m.cfg.BatchSize),
		})
		cur.advance(row.Candidates, row.LastNotificationID)
		if err == nil && row.Candidates >= int64(m.cfg.BatchSize) {
			err = m.pace(ctx, time.Since(start))
		}
		return row.Candidates, row.Deleted, err
	})
	return retired - kept + n, err
}

// idAbove sorts after every id herald makes (a UUIDv7's text is hex
// digits and dashes): the walk's upper bound when no week is left.
const idAbove = "g"

// SweepKeys deletes the idempotency keys whose window is over
// (migration 00026): when no sweep is in progress and the last finished
// Config.KeySweepEvery ago or more (or none has run in this process), it
// starts one over the keys table as long as it is now, and goes on with
// the one in progress, Config.KeySweepBlocks blocks a statement, until the
// end. A sweep cut short (ctx, a failure) goes on from where it stood at
// the next call. It returns how many keys it deleted. An expired key is
// free for a new notification whether or not its row is gone yet.
func (m *Maintenance) SweepKeys(ctx context.Context) (int64, error) {
	now := m.cfg.NowFunc()
	m.resumeMu.Lock()
	sw := m.sweep
	m.resumeMu.Unlock()
	if !sw.running {
		if !sw.done.IsZero() && now.Sub(sw.done) < m.cfg.KeySweepEvery {
			return 0, nil
		}
		end, err := m.queries.IdempotencyKeyBlocks(ctx, m.pool)
		if err != nil {
			m.metrics.Maintenance(JobKeySweep, 0, err)
			return 0, fmt.Errorf("%s: %w", JobKeySweep, err)
		}
		sw = keySweep{running: true, end: end, done: sw.done}
	}
	start := time.Now()
	var total int64
	var err error
	for sw.next < sw.end {
		to := min(sw.next+int64(m.cfg.KeySweepBlocks), sw.end)
		var n int64
		began := time.Now()
		n, err = m.queries.IdempotencyKeyDeleteExpired(ctx, m.pool, store.IdempotencyKeyDeleteExpiredParams{
			FromBlock: sw.next, ToBlock: to, Now: now,
		})
		if err != nil {
			break
		}
		total += n
		sw.next = to
		if sw.next < sw.end {
			if err = m.pace(ctx, time.Since(began)); err != nil {
				break
			}
		}
	}
	if err == nil {
		sw = keySweep{done: now}
	}
	m.resumeMu.Lock()
	m.sweep = sw
	m.resumeMu.Unlock()
	m.metrics.Maintenance(JobKeySweep, total, err)
	if err != nil {
		m.logger.Error("maintenance job failed", "job", JobKeySweep, "deleted", total, "err", err)
		return total, fmt.Errorf("%s: %w", JobKeySweep, err)
	}
	m.logger.Info("maintenance job done", "job", JobKeySweep, "deleted", total, "duration", time.Since(start).Round(time.Millisecond))
	return total, nil
}

// DeleteDeadLettered deletes, batch by batch, the notifications with
// dead-lettered routes whose routes are all terminal, whose dead letters are
// all older than Config.DeadLetterRetention and whose idempotency window is
// over, among the records of weeks retired already (kept, migration 00027)
// and the others not in a week. With DeadLetterRetention zero (the
// default) it deletes nothing.
func (m *Maintenance) DeleteDeadLettered(ctx context.Context) (int64, error) {
	if m.cfg.DeadLetterRetention <= 0 {
		return 0, nil
	}
	now := m.cfg.NowFunc()
	cutoff := now.Add(-m.cfg.DeadLetterRetention)
	below, err := m.queries.RecordWeeksFloor(ctx, m.pool, idAbove)
	if err != nil {
		return 0, fmt.Errorf("%s: records' weeks: %w", JobDeadLetterRetention, err)
	}
	cur := m.resumeFrom(JobDeadLetterRetention)
	return m.runCursorJob(ctx, JobDeadLetterRetention, &cur, func(ctx context.Context) (int64, int64, error) {
		row, err := m.queries.RecordDeleteDeadLettered(ctx, m.pool, store.RecordDeleteDeadLetteredParams{
			DeadBefore: cutoff,
			Now:        &now,
			AfterID:    cur.id,
			BelowID:    below,
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

// finishedRetentionWorker runs DeleteFinished. Paced (RetentionDuty), a
// run may take longer than River's default minute, which would cap what
// retention does per Interval: a run may go on until shortly before the
// next is due, and a run cut short there goes on from where it stood.
type finishedRetentionWorker struct {
	river.WorkerDefaults[finishedRetentionArgs]
	m *Maintenance
}

func (w *finishedRetentionWorker) Work(ctx context.Context, _ *river.Job[finishedRetentionArgs]) error {
	_, err := w.m.DeleteFinished(ctx)
	return err
}

// Timeout is nine tenths of the jobs' Interval.
func (w *finishedRetentionWorker) Timeout(*river.Job[finishedRetentionArgs]) time.Duration {
	return w.m.cfg.Interval - w.m.cfg.Interval/10
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
