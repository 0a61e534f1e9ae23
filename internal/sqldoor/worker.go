// Package sqldoor is the SQL door: its Worker drains the SQL intake
// (herald.intake), where any language, or a person with psql, INSERTs an
// intent's JSON. Each entry goes through the same accept.Pipeline as the
// Go client's and the HTTP API's intents; the worker records the ones
// refused in malformed_intents with a stable failure_code, and sets aside
// the ones the database refuses or that wait in vain for a producer's lock.
package sqldoor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/pglisten"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/tracing"
	"github.com/heraldhq/herald/internal/wake"
)

// Defaults of WorkerConfig.
const (
	// DefaultWorkerBatchSize is the default WorkerConfig.BatchSize.
	DefaultWorkerBatchSize = 500
	// DefaultWorkerBatchBytes is the default WorkerConfig.BatchBytes: 8 MiB,
	// 32 entries of the largest size intake.Limits allow by default.
	DefaultWorkerBatchBytes = 8 << 20
	// DefaultWorkerPollInterval is the default WorkerConfig.PollInterval.
	DefaultWorkerPollInterval = time.Second
	// DefaultWorkerLockTimeout is the default WorkerConfig.LockTimeout.
	DefaultWorkerLockTimeout = time.Second
)

// Bounds of how long an entry set aside behind a producer's lock waits
// before it is tried again: doubling from the first to the second.
const (
	minDeferral = time.Second
	maxDeferral = 30 * time.Second
)

// Results an intake entry can have, as passed to WorkerConfig.ResultFunc
// (the herald_intents_total "result" label).
const (
	// ResultAccepted: a new notification was stored.
	ResultAccepted = "accepted"
	// ResultDuplicate: the key held the same request; nothing new stored.
	ResultDuplicate = "duplicate"
	// ResultConflict: the key held a different request; the entry was
	// recorded in malformed_intents with code idempotency_conflict.
	ResultConflict = "conflict"
	// ResultMalformed: the validator refused the entry, or its login may
	// not submit in the producer's name it holds; it was recorded in
	// malformed_intents.
	ResultMalformed = "malformed"
	// ResultHeld: a review rule of the content blocklist matched the
	// entry; it waits in held_intents for an operator.
	ResultHeld = "held"
)

// WorkerConfig configures a Worker. The zero value is valid.
type WorkerConfig struct {
	// Logger receives the worker's lines; nil discards.
	Logger *slog.Logger
	// BatchSize is how many intake entries one transaction takes at most.
	// Default 500.
	BatchSize int
	// BatchBytes bounds the bodies one transaction loads, in bytes: a batch
	// ends before the entry that would take it past BatchBytes, but always
	// holds at least one entry, so the intake moves whatever the sizes. A
	// body larger than Limits.MaxEntryBytes is never loaded whole, only its
	// size and first 4,096 characters (its too_large record needs no more).
	// Default 8 MiB.
	BatchBytes int
	// PollInterval is how often the worker looks at the intake without a
	// herald_intake notification (a lost one, or a dropped LISTEN
	// connection). Default 1s.
	PollInterval time.Duration
	// Limits bounds the entries; zero fields take the defaults.
	Limits intake.Limits
	// IdempotencyWindow is how long keys stay reserved; default 48 hours.
	IdempotencyWindow time.Duration
	// ResultFunc, if set, is called once per entry with its producer ("" if
	// not a well-formed producer name; for a producer_mismatch, the login
	// that inserted it) and result (ResultAccepted, ResultDuplicate,
	// ResultConflict, ResultMalformed), after the batch committed; serve
	// passes the metrics' Intent method.
	ResultFunc func(producer, result string)
	// NowFunc, if set, replaces the clock; for tests.
	NowFunc func() time.Time
	// ContentRulesMaxAge is how long the content blocklist read is used
	// before it is read again; default content.DefaultRulesMaxAge,
	// negative reads it for every batch.
	ContentRulesMaxAge time.Duration
	// LockTimeout is the longest a batch's statements wait for a lock
	// (lock_timeout). A producer's own open transaction may hold what one
	// of its entries needs (its campaign's row, an idempotency key it is
	// inserting): a batch that times out is settled entry by entry, and an
	// entry that waits in vain is set aside, left in the intake and tried
	// again later, so the other entries go through. Default 1s.
	LockTimeout time.Duration
	// TracerProvider, when set, makes a span (herald.intake.validate) of
	// each batch that claimed entries: a root span whose context the
	// batch's intents without a trace_id store as theirs (see Accept). Nil
	// makes none.
	TracerProvider trace.TracerProvider
}

func (c *WorkerConfig) validate() error {
	switch {
	case c.BatchSize < 0:
		return errors.New("BatchSize must not be negative")
	case c.BatchSize > 10000:
		return errors.New("BatchSize must be at most 10000")
	case c.BatchBytes < 0:
		return errors.New("BatchBytes must not be negative")
	case c.PollInterval != 0 && c.PollInterval < time.Millisecond:
		return errors.New("PollInterval must be at least 1ms")
	case c.IdempotencyWindow != 0 && c.IdempotencyWindow < time.Second:
		return errors.New("IdempotencyWindow must be at least 1s")
	case c.LockTimeout != 0 && c.LockTimeout < time.Millisecond:
		return errors.New("LockTimeout must be at least 1ms")
	}
	return nil
}

// Worker drains the SQL intake (herald.intake): it validates each entry
// and, in one transaction per batch, accepts the valid ones through the
// same idempotent path as the Go client, records the others in
// malformed_intents, and deletes them all from the intake. Several
// workers, in one process or many, may drain one database side by side.
type Worker struct {
	pool       *pgxpool.Pool
	logger     *slog.Logger
	batch      int
	batchBytes int
	poll       time.Duration
	limits     intake.Limits
	window     time.Duration
	result     func(producer, result string)
	now        func() time.Time
	tracer     trace.Tracer // nil: no spans
	pipeline   accept.Pipeline
	lockWait   string // lock_timeout, as set_config takes it

	// deferred are the entries set aside behind a lock a producer holds,
	// until they are tried again: by entry id ("id:<n>") for a trusted
	// login's entry, by login ("login:<name>") for an untrusted login's,
	// whose entries are all its producer's own.
	mu       sync.Mutex
	deferred map[string]*deferral

	afterClaim func(batch []intakeEntry) // test hook: called after each batch is claimed
}

// NewWorker returns a Worker on pool; a nil cfg means the defaults. It
// returns an error naming the Config field that is invalid.
func NewWorker(pool *pgxpool.Pool, cfg *WorkerConfig) (*Worker, error) {
	if pool == nil {
		return nil, errors.New("new intake worker: pool is nil")
	}
	if cfg == nil {
		cfg = &WorkerConfig{}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new intake worker: %w", err)
	}
	w := &Worker{
		pool:       pool,
		logger:     cfg.Logger,
		batch:      cmp.Or(cfg.BatchSize, DefaultWorkerBatchSize),
		batchBytes: cmp.Or(cfg.BatchBytes, DefaultWorkerBatchBytes),
		poll:       cmp.Or(cfg.PollInterval, DefaultWorkerPollInterval),
		limits:     cfg.Limits.WithDefaults(),
		window:     cmp.Or(cfg.IdempotencyWindow, accept.DefaultIdempotencyWindow),
		result:     cfg.ResultFunc,
		now:        cfg.NowFunc,
		lockWait:   fmt.Sprintf("%dms", cmp.Or(cfg.LockTimeout, DefaultWorkerLockTimeout).Milliseconds()),
		deferred:   map[string]*deferral{},
	}
	w.pipeline = accept.Pipeline{
		Limits:            w.limits,
		Content:           content.NewChecker(&content.CheckerConfig{RulesMaxAge: cfg.ContentRulesMaxAge, Logger: cfg.Logger}),
		IdempotencyWindow: w.window,
	}
	if cfg.TracerProvider != nil {
		w.tracer = tracing.Tracer(cfg.TracerProvider)
	}
	if w.logger == nil {
		w.logger = slog.New(slog.DiscardHandler)
	}
	return w, nil
}

// Run drains the intake until ctx is done, then returns nil. It LISTENs on
// herald_intake (the intake's INSERT trigger notifies it) and also polls
// every PollInterval, so a lost notification or a broken LISTEN
// connection delays entries but never strands them. Errors of a drain are
// logged and retried at the next wake-up.
func (w *Worker) Run(ctx context.Context) error {
	woken := make(chan struct{}, 1)
	listening := make(chan struct{})
	go w.listen(ctx, woken, listening)
	select { // LISTEN first, so that no entry slips in between drain and LISTEN
	case <-listening:
	case <-ctx.Done():
		return nil
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		accepted, malformed, err := w.DrainOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			w.logger.ErrorContext(ctx, "drain intake", slog.Any("err", err))
		case accepted+malformed > 0:
			w.logger.DebugContext(ctx, "intake drained", slog.Int("accepted", accepted), slog.Int("malformed", malformed))
		}
		timer.Reset(w.poll)
		select {
		case <-ctx.Done():
			return nil
		case <-woken:
		case <-timer.C:
		}
	}
}

// listen holds a connection LISTENing on herald_intake and signals woken on
// each notification, and after a reconnect (entries may have arrived while
// it was not listening); it reconnects by itself after a failure. It closes
// listening after its first attempt, successful or not.
func (w *Worker) listen(ctx context.Context, woken chan<- struct{}, listening chan struct{}) {
	var once sync.Once
	attempted := func() { once.Do(func() { close(listening) }) }
	signal := func() {
		select {
		case woken <- struct{}{}:
		default:
		}
	}
	pglisten.Run(ctx, pglisten.Config{
		ConnConfig: w.pool.Config().ConnConfig,
		Topic:      wake.IntakeTopic,
		NotifyFunc: func(string) { signal() },
		ConnectedFunc: func(first bool) {
			attempted()
			if !first {
				signal()
			}
		},
		FailedFunc: func(err error, retryIn time.Duration) {
			attempted()
			w.logger.WarnContext(ctx, "listen for intake notifications; polling meanwhile",
				slog.Any("err", err), slog.Duration("retry_in", retryIn))
		},
	})
	attempted() // ctx ended before a first attempt finished
}

// DrainOnce drains the intake until it is empty, one transaction per batch
// of at most BatchSize entries and BatchBytes of bodies, and returns how
// many entries it accepted (new or duplicate) and recorded as malformed. A
// batch is all or nothing: if the worker dies or ctx is canceled during one,
// its transaction rolls back and its entries stay in the intake. On error,
// the counts are those of the batches committed before it.
func (w *Worker) DrainOnce(ctx context.Context) (accepted, malformed int, err error) {
	for {
		b, err := w.drainBatch(ctx, w.batch)
		a, m, n, more := b.accepted, b.malformed, b.n, b.more
		if err != nil && (refusedByDatabase(err) || lockTimedOut(err)) {
			// Some entry of the batch passed validation but the database
			// refused it. Settle the batch's entries one at a time, so that
			// entry is set aside and the rest flow.
			a, m, n, err = w.isolate(ctx, err)
			more = n == w.batch // isolate stops after a batch's worth, or when the intake is empty
		}
		accepted += a
		malformed += m
		if err != nil {
			return accepted, malformed, err
		}
		if !more || n == 0 {
			return accepted, malformed, nil
		}
	}
}

// intakeEntry is one entry taken off the intake. body is the entry's whole
// body, or only its first characters if size, the whole body's length in
// bytes, exceeds Limits.MaxEntryBytes: the claim never loads more of a
// body it must refuse as too_large. submittedBy is the database login that
// inserted it; trusted says whether that login may submit in any
// producer's name (a member of herald_relay, or of the intake's owner).
type intakeEntry struct {
	id          int64
	body        string
	size        int
	submittedBy string
	trusted     bool
	reviewed    bool // released by an operator after review
}

// entryRef returns the reference of intake entry id, "intake:<id>", by
// which malformed_intents keeps it (in its stream_entry_id column).
func entryRef(id int64) string { return "intake:" + strconv.FormatInt(id, 10) }

// malformedEntry is an intake entry refused by the validator or the accept
// path.
type malformedEntry struct {
	entry    intakeEntry
	code     heraldtype.Code
	message  string
	producer string // set for an idempotency conflict, else dug out of the body
	key      string
	ntype    string
}

// resultOf is one entry's result, reported after commit.
type resultOf struct{ producer, result string }

// refusedByDatabase reports whether err is the database refusing the data
// itself (a data exception, a constraint, a size limit), as opposed to the
// database being unreachable or the worker being canceled: the errors that
// retrying the same entry cannot fix.
func refusedByDatabase(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgerrcode.IsDataException(pgErr.Code) ||
		pgerrcode.IsIntegrityConstraintViolation(pgErr.Code) ||
		pgerrcode.IsProgramLimitExceeded(pgErr.Code) ||
		pgErr.Code == pgerrcode.InsufficientPrivilege
}

// lockTimedOut reports whether err is a statement canceled by its
// lock_timeout (55P03).
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.LockNotAvailable
}

// isolate settles up to one batch of entries one transaction each, after a
// batch failed with cause. An entry the database refuses on its own is
// recorded in malformed_intents as rejected_by_database, with the
// database's message, and removed from the intake: nothing is lost, and one
// entry cannot stall the intake. An entry that waited its lock_timeout is
// deferred: left in the intake and tried again later.
func (w *Worker) isolate(ctx context.Context, cause error) (accepted, malformed, n int, err error) {
	if lockTimedOut(cause) {
		w.logger.WarnContext(ctx, "intake batch waited too long for a lock; settling its entries one by one", slog.Any("err", cause))
	} else {
		w.logger.WarnContext(ctx, "intake batch refused by the database; settling its entries one by one", slog.Any("err", cause))
	}
	waits := 0 // lock timeouts in a row
	for n < w.batch {
		b, err := w.drainBatch(ctx, 1)
		a, m, took, first := b.accepted, b.malformed, b.n, b.first
		if took == 0 && err == nil {
			return accepted, malformed, n, nil // the intake is empty
		}
		if err != nil {
			switch {
			case first.id == 0:
				return accepted, malformed, n, err
			case lockTimedOut(err):
				w.deferEntry(ctx, first, err)
				if waits++; waits == maxWaitsInARow {
					// A lock on a whole table (a maintenance step) holds
					// every entry up: this pass ends, the next drain
					// tries again.
					return accepted, malformed, n + 1, err
				}
				m, took = 0, 1
			case refusedByDatabase(err):
				if err := w.setAside(ctx, first.id, err); err != nil {
					return accepted, malformed, n, err
				}
				m, took = 1, 1
			default:
				return accepted, malformed, n, err
			}
		}
		if err == nil {
			waits = 0
		}
		accepted += a
		malformed += m
		n += took
	}
	return accepted, malformed, n, nil
}

// maxWaitsInARow is how many entries in a row an isolating round sets
// aside behind locks before it ends.
const maxWaitsInARow = 3

// deferral is how long entries set aside behind a lock wait.
type deferral struct {
	until time.Time
	delay time.Duration
}

// deferralKey is what an entry set aside is left out of claims by: its
// login when untrusted (every entry of that login is its producer's own,
// and they keep their order), else its id.
func deferralKey(e intakeEntry) string {
	if e.trusted {
		return "id:" + strconv.FormatInt(e.id, 10)
	}
	return "login:" + e.submittedBy
}

// deferEntry sets entry e aside after its transaction waited its
// lock_timeout: it stays in the intake, left out of claims for a while
// that doubles each time, and the log names who holds the locks an entry
// waits for.
func (w *Worker) deferEntry(ctx context.Context, e intakeEntry, cause error) {
	k := deferralKey(e)
	w.mu.Lock()
	d := w.deferred[k]
	if d == nil {
		d = &deferral{}
		w.deferred[k] = d
	}
	d.delay = min(max(2*d.delay, minDeferral), maxDeferral)
	d.until = time.Now().Add(d.delay)
	retryIn := d.delay
	w.mu.Unlock()
	holders, err := store.New().LockHolders(ctx, w.pool, []string{"herald.campaigns", "herald.idempotency_keys"})
	if err != nil {
		holders = "unknown: " + err.Error()
	}
	_, producer, _ := intake.PartialFields([]byte(e.body))
	w.logger.WarnContext(ctx, "intake entry waits for a lock another transaction holds; set aside, tried again later",
		slog.Int64("intake_id", e.id), slog.String("producer", metricProducer(producer)),
		slog.String("submitted_by", e.submittedBy), slog.Duration("retry_in", retryIn),
		slog.String("holders", holders), slog.Any("err", cause))
}

// skipped returns the entry ids and logins claims leave out now (empty,
// not nil: a NULL array would leave out every entry).
func (w *Worker) skipped() (ids []int64, logins []string) {
	ids, logins = []int64{}, []string{}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, d := range w.deferred {
		if !now.Before(d.until) {
			if now.Sub(d.until) > maxDeferral {
				// Long over (settled by another worker, say): forgotten.
				delete(w.deferred, k)
			}
			continue
		}
		if login, ok := strings.CutPrefix(k, "login:"); ok {
			logins = append(logins, login)
		} else if id, err := strconv.ParseInt(strings.TrimPrefix(k, "id:"), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, logins
}

// settled forgets the deferrals of entries now settled: their waits are
// over.
func (w *Worker) settled(entries []intakeEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.deferred) == 0 {
		return
	}
	for _, e := range entries {
		delete(w.deferred, deferralKey(e))
	}
}

// setAside records intake entry id as rejected_by_database with the
// database's refusal, and removes it from the intake, in one transaction.
func (w *Worker) setAside(ctx context.Context, id int64, refusal error) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin setting intake entry aside: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := store.New()
	rows, err := q.IntakeTakeByID(ctx, tx, store.IntakeTakeByIDParams{
		ID: id, MaxEntryBytes: int32(w.limits.MaxEntryBytes), ExcerptChars: intake.RawFieldsExcerpt,
	})
	if err != nil {
		return fmt.Errorf("take intake entry %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil // settled by another worker meanwhile
	}
	e := intakeEntry{id: rows[0].ID, body: rows[0].Body, size: int(rows[0].BodyBytes), submittedBy: rows[0].SubmittedBy}
	msg := "the database refused this entry: " + refusal.Error()
	var pgErr *pgconn.PgError
	if errors.As(refusal, &pgErr) {
		msg = fmt.Sprintf("the database refused this entry: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
		if pgErr.ConstraintName != "" {
			msg += ", constraint " + pgErr.ConstraintName
		}
	}
	ntype, producer, key := intake.PartialFields([]byte(e.body))
	var now *time.Time // nil: the database's clock
	if w.now != nil {
		t := w.now()
		now = &t
	}
	if err := q.MalformedIntentInsertMany(ctx, tx, store.MalformedIntentInsertManyParams{
		EntryRefs:         []string{entryRef(e.id)},
		NotificationTypes: []string{ntype},
		Producers:         []string{producer},
		IdempotencyKeys:   []string{key},
		FailureCodes:      []string{string(heraldtype.CodeRejectedByDatabase)},
		FailureMessages:   []string{msg},
		RawFields:         [][]byte{w.rawFields(e)},
		SubmittedBys:      []string{e.submittedBy},
		Now:               now,
	}); err != nil {
		return fmt.Errorf("record intake entry %d as refused: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit setting intake entry %d aside: %w", id, err)
	}
	w.logger.WarnContext(ctx, "intake entry refused by the database, set aside", slog.Int64("intake_id", e.id),
		slog.String("failure_code", string(heraldtype.CodeRejectedByDatabase)), slog.String("producer", metricProducer(producer)))
	if w.result != nil {
		w.result(metricProducer(producer), ResultMalformed)
	}
	return nil
}

// batch is what drainBatch did: accepted entries (new or duplicate),
// malformed ones, n taken, whether entries may be left that it could have
// taken but for its bounds (more), and its first entry (id 0 if none), so
// that a failed batch of one names its entry.
type batch struct {
	accepted, malformed, n int
	more                   bool
	first                  intakeEntry
}

// drainBatch takes up to limit entries (and BatchBytes of bodies) off the
// intake and settles them in one transaction. On error, b.first is still
// the first entry taken.
func (w *Worker) drainBatch(ctx context.Context, limit int) (b batch, err error) {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return b, fmt.Errorf("begin intake batch: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // after Commit, a no-op

	began := time.Now()
	skipIDs, skipLogins := w.skipped()
	rows, err := store.New().IntakeClaimBatch(ctx, tx, store.IntakeClaimBatchParams{
		MaxEntries:    int32(limit),
		MaxBatchBytes: int64(w.batchBytes),
		MaxEntryBytes: int32(w.limits.MaxEntryBytes),
		ExcerptChars:  intake.RawFieldsExcerpt,
		SkipIds:       skipIDs,
		SkipLogins:    skipLogins,
		LockTimeout:   w.lockWait,
	})
	if err != nil {
		return b, fmt.Errorf("claim intake batch: %w", err)
	}
	if len(rows) == 0 {
		return b, nil
	}
	if w.tracer != nil {
		var span trace.Span
		ctx, span = w.tracer.Start(ctx, "herald.intake.validate", trace.WithNewRoot(), trace.WithTimestamp(began),
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(tracing.BatchSize.Int(len(rows))))
		defer func() {
			if err != nil {
				span.SetStatus(codes.Error, "intake batch failed")
				span.RecordError(err)
			} else {
				span.SetAttributes(tracing.Accepted.Int(b.accepted), tracing.Refused.Int(b.malformed))
			}
			span.End()
		}()
	}
	locked := int(rows[0].LockedEntries)
	entries := make([]intakeEntry, len(rows))
	for i, r := range rows {
		entries[i] = intakeEntry{id: r.ID, body: r.Body, size: int(r.BodyBytes), submittedBy: r.SubmittedBy, trusted: r.Trusted, reviewed: r.Reviewed}
	}
	first := entries[0]
	b.first = first
	if w.afterClaim != nil {
		w.afterClaim(entries)
	}

	now := time.Now()
	var sqlNow time.Time
	if w.now != nil {
		now = w.now()
		sqlNow = now
	}
	accepted, bad, results, err := w.settle(ctx, tx, entries, now, sqlNow)
	if err != nil {
		return batch{first: first}, err
	}
	if len(bad) > 0 {
		if results, err = w.recordMalformed(ctx, tx, bad, sqlNow, results); err != nil {
			return batch{first: first}, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return batch{first: first}, fmt.Errorf("commit intake batch: %w", err)
	}
	w.settled(entries)
	for _, b := range bad {
		w.logger.InfoContext(ctx, "intake entry malformed", slog.Int64("intake_id", b.entry.id),
			slog.String("failure_code", string(b.code)), slog.String("producer", b.producer),
			slog.String("submitted_by", b.entry.submittedBy))
	}
	if w.result != nil {
		for _, r := range results {
			w.result(r.producer, r.result)
		}
	}
	return batch{accepted: accepted, malformed: len(bad), n: len(entries),
		more: locked == limit || locked > len(rows), first: first}, nil
}

// settle runs the claimed entries through the intake pipeline in tx,
// validating at now and accepting at sqlNow (zero: the database's clock),
// and returns how many it accepted (new or duplicate), the entries to
// record as malformed, and the results of the others.
func (w *Worker) settle(ctx context.Context, tx pgx.Tx, entries []intakeEntry, now, sqlNow time.Time) (
	accepted int, bad []malformedEntry, results []resultOf, err error) {
	bodies := make([]string, len(entries))
	sizes := make([]int, len(entries))
	for i, e := range entries {
		bodies[i], sizes[i] = e.body, e.size
	}
	vs, errs := intake.DecodeValidateMany(bodies, sizes, w.limits, now)
	items := make([]accept.Item, len(entries))
	for i, e := range entries {
		items[i] = accept.Item{Validated: vs[i], Err: errs[i], Reviewed: e.reviewed}
		if !e.trusted {
			items[i].Actor = e.submittedBy
		}
	}
	hold := func(ctx context.Context, db store.DBTX, i int, v *intake.Validated, m *content.Match) error {
		e := entries[i]
		if _, err := store.New().HeldIntentInsertAs(ctx, db, store.HeldIntentInsertAsParams{
			Producer: v.Intent.Producer, IdempotencyKey: v.Intent.IdempotencyKey, NotificationType: v.Intent.NotificationType,
			Body: e.body, RuleID: m.Rule.ID, Rule: m.Rule.String(), Part: m.Part, SubmittedBy: e.submittedBy,
		}); err != nil {
			return fmt.Errorf("hold intake entry %d for review: %w", e.id, err)
		}
		return nil
	}
	// The pipeline has no Waker: one hint per batch transaction, inside
	// its accept statement; batching already debounces it.
	outs, _, err := w.pipeline.Run(ctx, tx, items, accept.RunOpts{Now: now, AcceptAt: sqlNow, HoldFunc: hold})
	if err != nil {
		return 0, nil, nil, fmt.Errorf("accept intake batch: %w", err)
	}
	results = make([]resultOf, 0, len(entries))
	for i, o := range outs {
		e := entries[i]
		switch o.Kind {
		case accept.KindForbidden:
			if o.Err != nil { // the database refused the statement: DrainOnce settles the entries one by one
				return 0, nil, nil, fmt.Errorf("accept intake batch: %w", o.Err)
			}
			bad = append(bad, mismatched(e, o.Validated))
		case accept.KindInvalid, accept.KindRefused:
			if !o.Campaign {
				bad = append(bad, refused(e, o.Err))
				continue
			}
			v, ve := o.Validated, o.Err.(*heraldtype.ValidationError)
			bad = append(bad, malformedEntry{entry: e, code: ve.Code(), message: ve.Error(),
				ntype: v.Intent.NotificationType, producer: v.Intent.Producer, key: v.Intent.IdempotencyKey})
		case accept.KindConflict:
			v := o.Validated
			bad = append(bad, malformedEntry{
				entry: e,
				code:  heraldtype.CodeIdempotencyConflict,
				message: fmt.Sprintf("idempotency key already used by notification %s for a different request (%s)",
					o.NotificationID, heraldtype.CodeIdempotencyConflict),
				ntype: v.Intent.NotificationType, producer: v.Intent.Producer, key: v.Intent.IdempotencyKey,
			})
		case accept.KindHeld:
			results = append(results, resultOf{o.Validated.Intent.Producer, ResultHeld})
		case accept.KindDuplicate:
			accepted++
			results = append(results, resultOf{o.Validated.Intent.Producer, ResultDuplicate})
		case accept.KindAccepted:
			accepted++
			results = append(results, resultOf{o.Validated.Intent.Producer, ResultAccepted})
		}
	}
	return accepted, bad, results, nil
}

// recordMalformed records bad in malformed_intents, in tx, at sqlNow
// (zero: the database's clock), and returns results with theirs added.
func (w *Worker) recordMalformed(ctx context.Context, tx pgx.Tx, bad []malformedEntry, sqlNow time.Time, results []resultOf) (
	[]resultOf, error) {
	p := store.MalformedIntentInsertManyParams{}
	if !sqlNow.IsZero() {
		p.Now = &sqlNow
	}
	for _, b := range bad {
		p.EntryRefs = append(p.EntryRefs, entryRef(b.entry.id))
		p.NotificationTypes = append(p.NotificationTypes, b.ntype)
		p.Producers = append(p.Producers, b.producer)
		p.IdempotencyKeys = append(p.IdempotencyKeys, b.key)
		p.FailureCodes = append(p.FailureCodes, string(b.code))
		p.FailureMessages = append(p.FailureMessages, b.message)
		p.RawFields = append(p.RawFields, w.rawFields(b.entry))
		p.SubmittedBys = append(p.SubmittedBys, b.entry.submittedBy)
		result, producer := ResultMalformed, b.producer
		switch b.code {
		case heraldtype.CodeIdempotencyConflict:
			result = ResultConflict
		case heraldtype.CodeProducerMismatch:
			producer = b.entry.submittedBy // counted against the login, not the producer it named
		}
		results = append(results, resultOf{metricProducer(producer), result})
	}
	if err := store.New().MalformedIntentInsertMany(ctx, tx, p); err != nil {
		return nil, fmt.Errorf("record malformed intents: %w", err)
	}
	return results, nil
}

// rawFields returns e's malformed_intents.raw_fields: intake.RawFields of
// its body or, for an entry over Limits.MaxEntryBytes whose body the claim
// loaded only the start of, what intake.RawFields returns for an entry
// over 256 KiB: its first 4 KiB, marked truncated, and its size.
func (w *Worker) rawFields(e intakeEntry) []byte {
	if e.size <= w.limits.MaxEntryBytes {
		return intake.RawFields([]byte(e.body))
	}
	n := min(len(e.body), intake.RawFieldsExcerpt)
	// Cut at a rune boundary (at most 3 bytes back), as RawFields does.
	for i := 0; i < 3 && n < len(e.body) && !utf8.RuneStart(e.body[n]); i++ {
		n--
	}
	out := []byte(`{"body":`)
	out = canonjson.AppendString(out, canonjson.SanitizeText(e.body[:n]))
	return fmt.Appendf(out, `,"truncated":true,"bytes":%d}`, e.size)
}

// mismatched returns the malformed record of entry e, valid as v, whose
// producer is not the login that inserted it, an untrusted one.
func mismatched(e intakeEntry, v *intake.Validated) malformedEntry {
	return malformedEntry{
		entry: e,
		code:  heraldtype.CodeProducerMismatch,
		message: fmt.Sprintf("the entry names producer %q but was inserted by database login %q, which may submit only "+
			"in its own name; a member of herald_relay may submit in any producer's name (%s)",
			v.Intent.Producer, e.submittedBy, heraldtype.CodeProducerMismatch),
		ntype:    v.Intent.NotificationType,
		producer: v.Intent.Producer,
		key:      v.Intent.IdempotencyKey,
	}
}

// refused returns the malformed record of entry e refused with err.
func refused(e intakeEntry, err error) malformedEntry {
	m := malformedEntry{entry: e, code: heraldtype.CodeInvalidField, message: err.Error()}
	var ve *heraldtype.ValidationError
	if errors.As(err, &ve) && ve.Code() != "" {
		m.code = ve.Code()
	}
	m.ntype, m.producer, m.key = intake.PartialFields([]byte(e.body))
	return m
}

// metricProducer returns producer if it is a well-formed producer name,
// else "": the metrics label of a malformed entry must not take whatever
// text the entry held.
func metricProducer(producer string) string {
	if !intake.ValidProducer(producer) {
		return ""
	}
	return producer
}
