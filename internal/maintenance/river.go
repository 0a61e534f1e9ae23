package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/schema"
)

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

// newRiverClient returns the River client that works maintenance's jobs:
// one worker per job kind, the extra workers of Config.Workers, and the
// periodic jobs (Config.PeriodicJobs among them) its leader schedules.
func (m *Maintenance) newRiverClient() (*river.Client[pgx.Tx], error) {
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
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[processRetentionArgs]) error {
		_, err := m.DeleteGoneProcesses(ctx)
		return err
	}))
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[bloatCheckArgs]) error {
		_, err := m.CheckBloat(ctx)
		return err
	}))
	if m.cfg.Workers != nil {
		if err := m.cfg.Workers(workers); err != nil {
			return nil, fmt.Errorf("register extra workers: %w", err)
		}
	}

	opts := &river.PeriodicJobOpts{RunOnStart: m.cfg.RunOnStart}
	periodic := []*river.PeriodicJob{
		periodicJob(m.cfg.Interval, finishedRetentionArgs{}, opts),
		periodicJob(m.cfg.Interval, malformedRetentionArgs{}, opts),
		periodicJob(m.cfg.Interval, processRetentionArgs{}, opts),
		periodicJob(m.cfg.BloatCheckInterval, bloatCheckArgs{}, opts),
	}
	if m.cfg.DeadLetterRetention > 0 {
		periodic = append(periodic, periodicJob(m.cfg.Interval, deadLetterRetentionArgs{}, opts))
	}
	periodic = append(periodic, m.cfg.PeriodicJobs...)

	client, err := river.NewClient(riverpgxv5.New(m.pool), &river.Config{
		Schema:       schema.Name,
		Logger:       m.logger,
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: m.cfg.MaxWorkers}},
		Workers:      workers,
		PeriodicJobs: periodic,
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return client, nil
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
	processRetentionArgs    struct{}
)

func (finishedRetentionArgs) Kind() string   { return "herald_" + JobFinishedRetention }
func (malformedRetentionArgs) Kind() string  { return "herald_" + JobMalformedRetention }
func (deadLetterRetentionArgs) Kind() string { return "herald_" + JobDeadLetterRetention }
func (bloatCheckArgs) Kind() string          { return "herald_" + JobBloatCheck }
func (processRetentionArgs) Kind() string    { return "herald_" + JobProcessRetention }

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
