package operator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/schema"
)

// Audit actions written by this package.
const (
	// ActionReplay is one replay batch (or a replay that moved nothing).
	ActionReplay = "dead_letter_replay"
	// ActionReplayQueued records a bulk replay handed to a River job.
	ActionReplayQueued = "dead_letter_replay_queued"
)

// ErrNoActor is returned by Replay and EnqueueReplay when ReplayOpts.Actor
// is empty: every replay says who asked for it.
var ErrNoActor = errors.New("replay: Actor must be set")

// ReplayOpts says who replays, why, and how.
type ReplayOpts struct {
	// Actor is who asked (the CLI's --actor, default $USER). Required.
	Actor string
	// Reason is why, recorded in the audit log.
	Reason string
	// DryRun counts and samples what would move, and moves nothing.
	DryRun bool
	// SampleSize is how many of the matching dead letters a dry run returns.
	// Defaults to DefaultPageSize.
	SampleSize int
	// ReplayID names the replay in the audit log (details.replay_id); all its
	// batches carry it. Defaults to a new random id; a River job passes its
	// own so a resumed job adds to the same replay.
	ReplayID string
}

// ReplayResult is what a replay did, or would do for a dry run.
type ReplayResult struct {
	ReplayID string `json:"replay_id,omitempty"`
	DryRun   bool   `json:"dry_run"`
	Filter   Filter `json:"filter"`
	// Matched is how many dead letters matched when the replay started.
	Matched int64 `json:"matched"`
	// Moved is how many routes this call moved back to pending (0 for a dry
	// run).
	Moved int `json:"moved"`
	// Batches is how many statements moved them.
	Batches int `json:"batches"`
	// Sample is, for a dry run, the first dead letters that would move.
	Sample []DeadLetter `json:"sample,omitempty"`
	// Elapsed is how long the replay took.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Replay moves the dead letters matching f back to pending with a fresh
// attempt budget, in batches of Config.BatchSize, each one statement that
// also writes its audit row (who, why, the filter, the routes moved). It is
// idempotent and safe to run concurrently with itself: each route moves
// exactly once whatever runs at the same time, because each batch locks its
// dead letters with SKIP LOCKED and deletes them as it moves their routes. If
// f.Until is unset it is set to the database's clock first, so routes that
// die again while the replay runs are not replayed by it. A replay that
// matches nothing still writes one audit row (affected 0). It returns
// ErrNoActor without an actor.
func (o *Operator) Replay(ctx context.Context, f Filter, opts ReplayOpts) (*ReplayResult, error) {
	if opts.Actor == "" {
		return nil, ErrNoActor
	}
	start := time.Now()
	if f.Until.IsZero() {
		now, err := o.q.DatabaseNow(ctx, o.pool)
		if err != nil {
			return nil, fmt.Errorf("read database clock: %w", err)
		}
		f.Until = now
	}
	res := &ReplayResult{DryRun: opts.DryRun, Filter: f}
	matched, err := o.CountDeadLetters(ctx, f)
	if err != nil {
		return nil, err
	}
	res.Matched = matched
	if opts.DryRun {
		page, err := o.DeadLetters(ctx, f, cmp.Or(opts.SampleSize, DefaultPageSize), "")
		if err != nil {
			return nil, err
		}
		res.Sample = page.DeadLetters
		res.Elapsed = time.Since(start)
		return res, nil
	}

	res.ReplayID = cmp.Or(opts.ReplayID, newReplayID())
	details, _ := json.Marshal(map[string]string{"replay_id": res.ReplayID})
	nids, rids := f.idArrays()
	p := store.DeadLetterReplayParams{
		Channel:          optText(f.Channel),
		Producer:         optText(f.Producer),
		NotificationType: optText(f.NotificationType),
		Provider:         optText(f.Provider),
		Classification:   optText(f.Classification),
		Since:            optTime(f.Since),
		Until:            optTime(f.Until),
		IdsNotification:  nids,
		IdsRoute:         rids,
		Max:              int32(o.batchSize),
		Actor:            opts.Actor,
		Reason:           opts.Reason,
		Filter:           f.json(),
		Details:          details,
	}
	// Repeat until a batch moves nothing: a short batch does not mean the
	// end, since another replay may hold some matching rows locked right now
	// (it will move them).
	for {
		moved, err := o.q.DeadLetterReplay(ctx, o.pool, p)
		if err != nil {
			return res, fmt.Errorf("replay dead letters (after %d moved): %w", res.Moved, err)
		}
		if len(moved) == 0 {
			break
		}
		res.Moved += len(moved)
		res.Batches++
		o.logger.Debug("replayed dead letter batch", "replay_id", res.ReplayID, "moved", len(moved), "total", res.Moved)
	}
	if res.Moved == 0 {
		if _, err := o.q.AuditInsert(ctx, o.pool, store.AuditInsertParams{
			Actor: opts.Actor, Action: ActionReplay, Reason: opts.Reason,
			Filter: f.json(), Affected: 0, Details: details,
		}); err != nil {
			return res, fmt.Errorf("audit empty replay: %w", err)
		}
	}
	res.Elapsed = time.Since(start)
	o.logger.Info("replayed dead letters", "replay_id", res.ReplayID, "actor", opts.Actor,
		"moved", res.Moved, "matched", res.Matched, "batches", res.Batches, "elapsed", res.Elapsed)
	return res, nil
}

// ReplayProgress is what the audit log says of one replay: its batches and
// the routes they moved so far, across restarts of its job.
type ReplayProgress struct {
	ReplayID string     `json:"replay_id"`
	Batches  int64      `json:"batches"`
	Moved    int64      `json:"moved"`
	FirstAt  *time.Time `json:"first_at,omitempty"`
	LastAt   *time.Time `json:"last_at,omitempty"`
}

// Progress returns what the replay named replayID has moved so far. A replay
// that has not written a batch yet has zero batches.
func (o *Operator) Progress(ctx context.Context, replayID string) (*ReplayProgress, error) {
	s, err := o.q.AuditSummaryByReplay(ctx, o.pool, replayID)
	if errors.Is(err, pgx.ErrNoRows) {
		return &ReplayProgress{ReplayID: replayID}, nil // no batch yet
	}
	if err != nil {
		return nil, fmt.Errorf("replay progress %s: %w", replayID, err)
	}
	return &ReplayProgress{
		ReplayID: replayID,
		Batches:  s.Batches,
		Moved:    s.Affected,
		FirstAt:  &s.FirstAt,
		LastAt:   &s.LastAt,
	}, nil
}

// ReplayStatus is Progress for a person following a replay: it returns
// ErrNotFound when the replay has written no batch and no River job of it
// exists either (neither run nor queued), where Progress says zero batches.
func (o *Operator) ReplayStatus(ctx context.Context, replayID string) (*ReplayProgress, error) {
	p, err := o.Progress(ctx, replayID)
	if err != nil || p.Batches > 0 {
		return p, err
	}
	// Nothing moved yet: a replay queued and not started, or none.
	queued, err := o.ReplayQueued(ctx, replayID)
	if err != nil {
		return nil, err
	}
	if !queued {
		return nil, fmt.Errorf("replay %s: %w: no batch in herald.audit_log and no River job", replayID, ErrNotFound)
	}
	return p, nil
}

// ReplayQueued reports whether a River job of the bulk replay replayID
// exists, in any state. A replay handed to River by EnqueueReplay writes its
// first batch to herald.audit_log only once a ReplayWorker works it, so
// Progress alone cannot tell a queued replay from none.
func (o *Operator) ReplayQueued(ctx context.Context, replayID string) (bool, error) {
	client, err := river.NewClient(riverpgxv5.New(o.pool), &river.Config{Schema: schema.Name})
	if err != nil {
		return false, fmt.Errorf("river client: %w", err)
	}
	// River lists jobs by a predicate given as SQL: the rare statement
	// outside queries/, with its value passed as a parameter.
	res, err := client.JobList(ctx, river.NewJobListParams().
		Kinds(ReplayArgs{}.Kind()).
		Where("args ->> 'replay_id' = @replay_id", river.NamedArgs{"replay_id": replayID}).
		First(1))
	if err != nil {
		return false, fmt.Errorf("look up replay job %s: %w", replayID, err)
	}
	return len(res.Jobs) > 0, nil
}

// ReplayArgs is the River job of a bulk replay (kind "herald_replay"),
// inserted by EnqueueReplay (through the SQL function
// herald.dead_letter_replay_enqueue, with at most 10 attempts) and worked by
// ReplayWorker wherever `herald serve` runs maintenance.
type ReplayArgs struct {
	ReplayID string `json:"replay_id"`
	Filter   Filter `json:"filter"`
	Actor    string `json:"actor"`
	Reason   string `json:"reason"`
}

// Kind is the River job kind: "herald_replay".
func (ReplayArgs) Kind() string { return "herald_replay" }

// Queued is a bulk replay handed to River.
type Queued struct {
	ReplayID string    `json:"replay_id"`
	JobID    int64     `json:"job_id"`
	Matched  int64     `json:"matched"`
	Filter   Filter    `json:"filter"`
	QueuedAt time.Time `json:"queued_at"`
}

// EnqueueReplay hands a replay of the dead letters matching f to a River
// job, and writes an audit row saying so. The job moves them in batches like
// Replay, each batch with its own audit row carrying the same replay id
// (Progress reads them); if its process dies, River retries the job and it
// resumes, since the routes it moved no longer match. f.Until is set to the
// time of the request if unset. It returns ErrNoActor without an actor.
func (o *Operator) EnqueueReplay(ctx context.Context, f Filter, opts ReplayOpts) (*Queued, error) {
	if opts.Actor == "" {
		return nil, ErrNoActor
	}
	if f.Until.IsZero() {
		now, err := o.q.DatabaseNow(ctx, o.pool)
		if err != nil {
			return nil, fmt.Errorf("read database clock: %w", err)
		}
		f.Until = now
	}
	matched, err := o.CountDeadLetters(ctx, f)
	if err != nil {
		return nil, err
	}
	q := &Queued{ReplayID: cmp.Or(opts.ReplayID, newReplayID()), Matched: matched, Filter: f}
	args, err := json.Marshal(ReplayArgs{ReplayID: q.ReplayID, Filter: f, Actor: opts.Actor, Reason: opts.Reason})
	if err != nil {
		return nil, fmt.Errorf("encode replay job: %w", err)
	}
	// The job and its audit row commit together.
	err = pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		id, err := o.q.DeadLetterReplayEnqueue(ctx, tx, args)
		if err != nil {
			return fmt.Errorf("insert replay job: %w", err)
		}
		q.JobID = id
		details, _ := json.Marshal(map[string]any{"replay_id": q.ReplayID, "job_id": q.JobID, "matched": matched})
		row, err := o.q.AuditInsert(ctx, tx, store.AuditInsertParams{
			Actor: opts.Actor, Action: ActionReplayQueued, Reason: opts.Reason,
			Filter: f.json(), Affected: 0, Details: details,
		})
		if err != nil {
			return fmt.Errorf("audit queued replay: %w", err)
		}
		q.QueuedAt = row.At
		return nil
	})
	if err != nil {
		return nil, err
	}
	o.logger.Info("queued dead-letter replay", "replay_id", q.ReplayID, "job_id", q.JobID, "matched", matched, "actor", opts.Actor)
	return q, nil
}

// ReplayOutcome is what ReplayOrQueue did. Exactly one of the two is set:
// the ReplayResult of a replay done (or a dry run), or the River job a bulk
// replay was handed to. Its JSON form is the one that is set: the
// ReplayResult's fields, or {"queued": ...}.
type ReplayOutcome struct {
	*ReplayResult
	Queued *Queued `json:"queued,omitempty"`
	// LeftOutPermanent is how many dead letters of the filter asked for
	// were left out for having failed permanently (LeavePermanentOut).
	LeftOutPermanent int64 `json:"left_out_permanent,omitempty"`
}

// ReplayOrQueue replays the dead letters matching f at once (Replay), or
// hands them to a River job (EnqueueReplay) when async is set or more than
// threshold of them match. A dry run is never queued. It returns the errors
// of CountDeadLetters, Replay and EnqueueReplay.
func (o *Operator) ReplayOrQueue(ctx context.Context, f Filter, opts ReplayOpts, async bool, threshold int64) (*ReplayOutcome, error) {
	if !opts.DryRun && !async {
		n, err := o.CountDeadLetters(ctx, f)
		if err != nil {
			return nil, err
		}
		async = n > threshold
	}
	if async && !opts.DryRun {
		q, err := o.EnqueueReplay(ctx, f, opts)
		if err != nil {
			return nil, err
		}
		return &ReplayOutcome{Queued: q}, nil
	}
	res, err := o.Replay(ctx, f, opts)
	if err != nil {
		return nil, err
	}
	return &ReplayOutcome{ReplayResult: res}, nil
}

// ReplayWorker works ReplayArgs jobs.
type ReplayWorker struct {
	river.WorkerDefaults[ReplayArgs]
	op *Operator
}

// NewReplayWorker returns a worker that replays with op.
func NewReplayWorker(op *Operator) *ReplayWorker { return &ReplayWorker{op: op} }

// Work runs the replay. A resumed job (attempt > 1) carries on where the
// last attempt stopped: what that attempt moved no longer matches the
// filter. The job's output (River metadata "output") is the ReplayProgress
// of the whole replay.
func (w *ReplayWorker) Work(ctx context.Context, job *river.Job[ReplayArgs]) error {
	a := job.Args
	res, err := w.op.Replay(ctx, a.Filter, ReplayOpts{Actor: a.Actor, Reason: a.Reason, ReplayID: a.ReplayID})
	if res != nil {
		w.op.logger.Info("replay job attempt done", "replay_id", a.ReplayID, "job_id", job.ID, "attempt", job.Attempt, "moved", res.Moved)
	}
	if prog, perr := w.op.Progress(ctx, a.ReplayID); perr == nil {
		_ = river.RecordOutput(ctx, prog)
	}
	return err
}

// Timeout lets a replay of millions of dead letters run for as long as it
// needs: each batch commits on its own, so nothing is held meanwhile.
func (w *ReplayWorker) Timeout(*river.Job[ReplayArgs]) time.Duration { return time.Hour }

// AddWorkers registers the operator's River workers (the bulk replay) on
// workers, replaying against pool. Pass it as maintenance.Config.Workers:
//
//	Workers: func(w *river.Workers) error { return operator.AddWorkers(w, pool, nil) },
func AddWorkers(workers *river.Workers, pool *pgxpool.Pool, cfg *Config) error {
	op, err := New(pool, cfg)
	if err != nil {
		return err
	}
	return river.AddWorkerSafely(workers, NewReplayWorker(op))
}

func newReplayID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "rpl_" + hex.EncodeToString(b[:])
}
