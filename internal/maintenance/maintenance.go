// Package maintenance keeps herald's tables healthy: River periodic jobs,
// run under River's leader election so that only one `herald serve` process
// schedules them however many run, delete finished notifications once their
// retention and idempotency windows are over, delete old malformed intents,
// optionally delete old dead letters, forget serve processes gone for a
// day, and rebuild the routes due index when it
// is bloated.
//
// Each job works in bounded batches (one short statement each), logs what it
// did, and records a run in metrics.Maintenance. The same River client runs
// other packages' workers (the operator's bulk replay) through
// Config.Workers.
package maintenance

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
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
	// JobProcessRetention deletes the rows of serve processes gone for
	// longer than ProcessRetention.
	JobProcessRetention = "process_retention"
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
	// no more than twice as many as the week keeps: kept
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

	client, err := m.newRiverClient()
	if err != nil {
		return nil, err
	}
	m.client = client
	return m, nil
}
