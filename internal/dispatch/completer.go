package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store"
)

// completion is one attempt's outcome, waiting to be written.
type completion struct {
	channel        string
	notificationID string
	routeID        string
	// tid is the route's tuple id as its claim left it: the completion
	// reaches the row by it (RouteCompleteMany). Invalid when unknown.
	tid pgtype.TID
	// attempt is the attempt taken at claim and leaseUntil the claim's
	// lease end: together, the fence. (RouteClaimDue returns lease_until as
	// a nullable column, but the claim has just set it.)
	attempt        int32
	leaseUntil     time.Time
	status         string // published | failed | dead_letter | skipped
	delay          time.Duration
	classification string
	message        string
	hint           string
	maxAttempts    int32
	resolvedEmail  string
	resolvedLocale string
	providerID     string
	// provider took the attempt: '' on a channel without providers, and
	// for a route settled without delivery.
	provider string
	// receiptKey is "<provider> <provider message id>" when the provider
	// sends receipts, else ''.
	receiptKey string
	acceptedAt time.Time
	// traceID continues the producer's trace in the route's log lines.
	traceID string
	// metricOutcome labels herald_route_attempts_total.
	metricOutcome string
	// span is the attempt's span, which the completion's links to; invalid
	// for a route settled without an attempt, or when not traced.
	span trace.SpanContext
}

// completerWorkers write batches concurrently when full batches wait;
// otherwise one writes while the other gathers the next batch.
const completerWorkers = 2

// completer writes outcomes in batches: a bounded buffer drained by a few
// workers, each taking whatever is waiting (up to the batch size) and
// writing it in one fenced statement. When idle an outcome is written at
// once; while one worker's statement runs, the next worker keeps
// gathering until its batch is full or that statement ends (maxGather at
// most), so that under load each statement (and its commit, which waits
// for the WAL flush) carries what arrived during the one before, not a
// sliver of it.
type completer struct {
	d    *Dispatcher
	in   chan completion
	once sync.Once
	// progs tracks each worker's statements.
	progs [completerWorkers]*progress
	// turn is held by the one worker taking from in (see work).
	turn chan struct{}
	// writing counts the workers in a statement; wrote takes a signal
	// when one ends, for the worker gathering behind it.
	writing atomic.Int32
	wrote   chan struct{}
}

func newCompleter(d *Dispatcher, buffer int) *completer {
	c := &completer{d: d, in: make(chan completion, buffer), turn: make(chan struct{}, 1), wrote: make(chan struct{}, 1)}
	c.turn <- struct{}{}
	for i := range c.progs {
		c.progs[i] = newProgress(d, fmt.Sprintf("completer %d", i+1), "")
	}
	return c
}

// Backoff of a completion that failed: doubling from minCompleteDelay up
// to maxCompleteDelay, on top of the failed statement's own time.
const (
	minCompleteDelay = 50 * time.Millisecond
	maxCompleteDelay = 2 * time.Second
)

// add queues one outcome, blocking while the buffer is full: back-pressure
// that holds the delivery's slot and so slows claims.
func (c *completer) add(x completion) { c.in <- x }

// close ends input; the workers flush what is queued and stop.
func (c *completer) close() { c.once.Do(func() { close(c.in) }) }

// start runs the workers; the returned channel closes when all are done.
func (c *completer) start(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	for _, prog := range c.progs {
		wg.Go(func() { c.work(ctx, prog) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

func (c *completer) work(ctx context.Context, prog *progress) {
	batch := make([]completion, 0, c.d.batchSize)
	// held are completions whose routes another transaction holds (a
	// producer's cancel in its own open transaction): tried again, without
	// waiting for their rows, every heldDelay until written or fenced out.
	var held []completion
	heldDelay := minCompleteDelay
	retry := time.NewTimer(0)
	<-retry.C
	defer retry.Stop()
	limit := time.NewTimer(maxGather)
	limit.Stop()
	for {
		// One worker at a time takes from the buffer: it holds the turn
		// while it waits for an outcome and gathers a batch behind the
		// other's statement, and hands it over as its own statement
		// starts. A worker with held completions also wakes to retry them.
		retried := false
		if len(held) == 0 {
			<-c.turn
		} else {
			select {
			case <-c.turn:
			case <-retry.C:
				retried = true
			}
		}
		var first completion
		ok := true
		if !retried {
			if len(held) == 0 {
				first, ok = <-c.in
			} else {
				select {
				case first, ok = <-c.in:
				case <-retry.C:
					retried = true
					c.turn <- struct{}{}
				}
			}
		}
		if retried {
			c.writing.Add(1)
			held = c.flushHeld(ctx, prog, held)
			c.wroteOne()
			heldDelay = min(2*heldDelay, maxCompleteDelay)
			if len(held) == 0 {
				heldDelay = minCompleteDelay
			} else {
				retry.Reset(heldDelay)
			}
			continue
		}
		if !ok {
			c.turn <- struct{}{} // for the other worker, to see the end too
			// Shutting down: the held completions are tried until written
			// or ctx ends (then their leases expire: at-least-once).
			for len(held) > 0 && pause.For(ctx, heldDelay) == nil {
				held = c.flushHeld(ctx, prog, held)
				heldDelay = min(2*heldDelay, maxCompleteDelay)
			}
			c.release(held)
			return
		}
		batch = c.gather(append(batch[:0], first), limit)
		c.writing.Add(1)
		c.turn <- struct{}{}
		more := c.flush(ctx, prog, batch)
		c.wroteOne()
		if len(more) > 0 {
			if len(held) == 0 {
				retry.Reset(heldDelay)
			}
			held = append(held, more...)
		}
	}
}

// wroteOne ends a worker's statement, waking a worker gathering behind it.
func (c *completer) wroteOne() {
	c.writing.Add(-1)
	select {
	case c.wrote <- struct{}{}:
	default:
	}
}

// maxGather bounds how long a worker gathers behind another's statement:
// about a loaded commit's time, so that a statement waiting on a row lock
// (a producer's open cancel) holds up the next batch no longer than this.
const maxGather = 20 * time.Millisecond

// gather adds to batch what is waiting, up to the batch size, and, while
// another worker's statement runs, what arrives until that statement ends,
// the batch is full or maxGather has passed. limit is the worker's own
// timer, stopped.
func (c *completer) gather(batch []completion, limit *time.Timer) []completion {
	waiting := false
	defer func() {
		if waiting {
			limit.Stop()
		}
	}()
	for {
		batch = c.drain(batch)
		if len(batch) == c.d.batchSize {
			return batch
		}
		// Nothing waiting. A stale signal is dropped first, so that one
		// from a statement ending after the check below is not lost.
		select {
		case <-c.wrote:
		default:
		}
		if c.writing.Load() == 0 {
			return batch
		}
		if !waiting {
			waiting = true
			limit.Reset(maxGather)
		}
		select {
		case x, ok := <-c.in:
			if !ok {
				return batch
			}
			batch = append(batch, x)
		case <-c.wrote:
			return c.drain(batch)
		case <-limit.C:
			waiting = false
			return c.drain(batch)
		}
	}
}

// drain adds to batch what is waiting, up to the batch size.
func (c *completer) drain(batch []completion) []completion {
	for len(batch) < c.d.batchSize {
		select {
		case x, ok := <-c.in:
			if !ok {
				return batch
			}
			batch = append(batch, x)
		default:
			return batch
		}
	}
	return batch
}

// release counts completions out of hand: written, fenced out or given up.
func (c *completer) release(xs []completion) {
	if len(xs) == 0 {
		return
	}
	c.d.stats.inHand.Add(-int64(len(xs)))
	if c.d.metrics == nil {
		return
	}
	perChannel := map[string]int{}
	for _, x := range xs {
		perChannel[x.channel]++
	}
	for ch, n := range perChannel {
		c.d.metrics.InFlight(ch, -n)
	}
}

// flush writes one batch, retrying database errors until ctx ends (then the
// routes' leases expire and they are attempted again: at-least-once). prog
// is the calling worker's. held are the completions whose routes another
// transaction holds: still in hand, for the caller to try again later
// (flushHeld).
//
// The batch's statement waits for a row at most the dispatcher's
// lock_timeout. Routes are locked only by the engine's own short
// statements, and by a producer's notification_cancel, which a producer
// may run in a transaction it keeps open: so a batch that timed out is
// settled (settle) without waiting for any row, and only the held routes'
// completions wait, not the batch's other routes, every producer's.
func (c *completer) flush(ctx context.Context, prog *progress, batch []completion) (held []completion) {
	// Written, fenced out or given up: out of hand either way.
	defer func() { c.release(without(batch, held)) }()
	ctx, span := c.completeSpan(ctx, batch)
	defer span.End()
	rows, ok, locked := c.write(ctx, prog, span, batch, true)
	if !ok {
		return nil
	}
	if locked {
		rows, held, ok = c.settle(ctx, prog, batch)
		if !ok {
			return nil
		}
		c.holdersOf(ctx, held)
		c.record(without(batch, held), rows)
		return held
	}
	// A route updated since its claim has a new tuple id, and its
	// completion matched nothing. Most such routes have moved on (canceled,
	// their lease taken again) and are fenced out again here; the rest are
	// written by their primary key, which RouteCompleteMany uses for a NULL
	// tid.
	if len(rows) < len(batch) {
		var moved []completion
		written := writtenSet(rows)
		for _, x := range batch {
			if _, ok := written[writtenKey{x.notificationID, x.routeID}]; !ok && x.tid.Valid {
				moved = append(moved, x)
			}
		}
		if len(moved) > 0 {
			more, ok, locked := c.write(ctx, prog, span, moved, false)
			if ok && locked {
				more, held, ok = c.settle(ctx, prog, moved)
				c.holdersOf(ctx, held)
			}
			if !ok {
				// Shutting down: count what the first statement wrote;
				// the moved routes come due again when their leases end.
				c.record(slices.DeleteFunc(slices.Clone(batch), func(x completion) bool {
					_, ok := written[writtenKey{x.notificationID, x.routeID}]
					return !ok
				}), rows)
				return nil
			}
			rows = append(rows, more...)
		}
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("herald.batch.written", len(rows)))
	}
	c.record(without(batch, held), rows)
	return held
}

// without returns xs less the completions of the routes in drop.
func without(xs, drop []completion) []completion {
	if len(drop) == 0 {
		return xs
	}
	return slices.DeleteFunc(slices.Clone(xs), func(x completion) bool {
		return slices.ContainsFunc(drop, func(h completion) bool {
			return h.notificationID == x.notificationID && h.routeID == x.routeID
		})
	})
}

// flushHeld tries the held completions again without waiting for their
// rows, and returns those still held.
func (c *completer) flushHeld(ctx context.Context, prog *progress, held []completion) []completion {
	ctx, span := c.completeSpan(ctx, held)
	defer span.End()
	rows, still, ok := c.settle(ctx, prog, held)
	if !ok {
		return held
	}
	done := without(held, still)
	c.record(done, rows)
	c.release(done)
	if len(done) > 0 {
		c.d.log.Info("held completions settled: their routes were let go", "routes", len(done), "still_held", len(still))
	}
	return still
}

// settle writes the completions whose routes no other transaction holds,
// in one transaction that locks them first with SKIP LOCKED (a fenced-out
// completion is dropped as in write), and returns the rest as held. Other
// database errors are retried until ctx ends; ok is false when it gave up.
// A table lock that outlasts lock_timeout holds the whole batch.
func (c *completer) settle(ctx context.Context, prog *progress, xs []completion) (rows []store.RouteCompleteManyRow, held []completion, ok bool) {
	delay := minCompleteDelay
	racedOnce := false
	for {
		prog.begin()
		rows, held, err := c.settleOnce(ctx, xs)
		if err == nil {
			prog.done()
			return rows, held, true
		}
		if raced(err) && !racedOnce && ctx.Err() == nil {
			racedOnce = true
			continue
		}
		if ctx.Err() != nil {
			c.d.log.Error("complete routes: giving up; they come due again when their leases end",
				"routes", len(xs), "err", err)
			return nil, nil, false
		}
		prog.fail(opComplete, err, delay, batchChannels(xs)...)
		if timeoutKind(err) == "lock" {
			return nil, xs, true
		}
		if pause.For(ctx, delay) != nil {
			return nil, nil, false
		}
		delay = min(2*delay, maxCompleteDelay)
	}
}

func (c *completer) settleOnce(ctx context.Context, xs []completion) (rows []store.RouteCompleteManyRow, held []completion, err error) {
	tx, err := c.d.pool.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	lp := store.RouteCompletionsLockParams{}
	for _, x := range xs {
		lp.NotificationIds = append(lp.NotificationIds, x.notificationID)
		lp.RouteIds = append(lp.RouteIds, x.routeID)
		lp.Attempts = append(lp.Attempts, x.attempt)
		lp.LeaseUntils = append(lp.LeaseUntils, x.leaseUntil)
	}
	live, err := c.d.q.RouteCompletionsLock(ctx, tx, lp)
	if err != nil {
		return nil, nil, err
	}
	state := make(map[writtenKey]bool, len(live))
	for _, r := range live {
		state[writtenKey{r.NotificationID, r.RouteID}] = r.Locked
	}
	var mine []completion
	for _, x := range xs {
		locked, ok := state[writtenKey{x.notificationID, x.routeID}]
		switch {
		case !ok: // fenced out
		case locked:
			mine = append(mine, x)
		default:
			held = append(held, x)
		}
	}
	if len(mine) > 0 {
		if rows, err = c.d.q.RouteCompleteMany(ctx, tx, c.params(mine, false)); err != nil {
			return nil, nil, err
		}
	}
	return rows, held, tx.Commit(ctx)
}

// holdersOf logs the held completions' routes and who may hold them.
func (c *completer) holdersOf(ctx context.Context, held []completion) {
	if len(held) == 0 {
		return
	}
	ids := make([]string, len(held))
	for i, x := range held {
		ids[i] = x.notificationID + " " + x.routeID
	}
	holders, err := c.d.q.RouteLockHolders(ctx, c.d.pool)
	if err != nil {
		holders = "unknown: " + err.Error()
	}
	c.d.log.Warn("completions set aside: another transaction holds their routes; the batch's other routes are written, these are tried again until it lets go",
		"routes", ids, "channels", batchChannels(held), "holders", holders)
}

// write runs RouteCompleteMany for batch, each completion addressed by its
// tuple id when byTid (else by its primary key), retrying database errors
// until ctx ends. ok is false when it gave up; locked is true when the
// statement waited its lock_timeout (nothing was written: the caller
// settles the batch).
func (c *completer) write(ctx context.Context, prog *progress, span trace.Span, batch []completion, byTid bool) (rows []store.RouteCompleteManyRow, ok, locked bool) {
	p := c.params(batch, byTid)
	delay := minCompleteDelay
	racedOnce := false
	for {
		prog.begin()
		rows, err := c.d.q.RouteCompleteMany(ctx, c.d.pool, p)
		if err == nil {
			prog.done()
			return rows, true, false
		}
		// A batch with a route a cancel finished (moved) meanwhile is
		// written again at once, once: that route is then fenced out.
		if raced(err) && !racedOnce && ctx.Err() == nil {
			racedOnce = true
			c.d.log.Debug("completion raced a route's move; writing the batch again", "routes", len(batch))
			continue
		}
		if ctx.Err() != nil {
			span.SetStatus(codes.Error, "gave up: shutting down")
			c.d.log.Error("complete routes: giving up; they come due again when their leases end",
				"routes", len(batch), "err", err)
			return nil, false, false
		}
		prog.fail(opComplete, err, delay, batchChannels(batch)...)
		if timeoutKind(err) == "lock" {
			return nil, true, true
		}
		if pause.For(ctx, delay) != nil {
			return nil, false, false
		}
		delay = min(2*delay, maxCompleteDelay)
	}
}

// params are RouteCompleteMany's for xs, each addressed by its tuple id
// when byTid, else by its primary key.
func (c *completer) params(xs []completion, byTid bool) store.RouteCompleteManyParams {
	n := len(xs)
	if n == 0 {
		return store.RouteCompleteManyParams{Now: c.d.now()}
	}
	p := store.RouteCompleteManyParams{
		Now:                c.d.now(),
		NotificationIds:    make([]string, 0, n),
		RouteIds:           make([]string, 0, n),
		RouteTids:          make([]pgtype.TID, 0, n),
		Attempts:           make([]int32, 0, n),
		LeaseUntils:        make([]time.Time, 0, n),
		Statuses:           make([]string, 0, n),
		DelaySeconds:       make([]float64, 0, n),
		Classifications:    make([]string, 0, n),
		Messages:           make([]string, 0, n),
		RecoveryHints:      make([]string, 0, n),
		MaxAttempts:        make([]int32, 0, n),
		ResolvedEmails:     make([]string, 0, n),
		ResolvedLocales:    make([]string, 0, n),
		ProviderMessageIds: make([]string, 0, n),
		Providers:          make([]string, 0, n),
		ReceiptKeys:        make([]string, 0, n),
	}
	for _, x := range xs {
		p.NotificationIds = append(p.NotificationIds, x.notificationID)
		p.RouteIds = append(p.RouteIds, x.routeID)
		tid := x.tid
		if !byTid {
			tid = pgtype.TID{}
		}
		p.RouteTids = append(p.RouteTids, tid)
		p.Attempts = append(p.Attempts, x.attempt)
		p.LeaseUntils = append(p.LeaseUntils, x.leaseUntil)
		p.Statuses = append(p.Statuses, x.status)
		p.DelaySeconds = append(p.DelaySeconds, x.delay.Seconds())
		p.Classifications = append(p.Classifications, x.classification)
		p.Messages = append(p.Messages, x.message)
		p.RecoveryHints = append(p.RecoveryHints, x.hint)
		p.MaxAttempts = append(p.MaxAttempts, x.maxAttempts)
		p.ResolvedEmails = append(p.ResolvedEmails, x.resolvedEmail)
		p.ResolvedLocales = append(p.ResolvedLocales, x.resolvedLocale)
		p.ProviderMessageIds = append(p.ProviderMessageIds, x.providerID)
		p.Providers = append(p.Providers, x.provider)
		p.ReceiptKeys = append(p.ReceiptKeys, x.receiptKey)
	}
	return p
}

// writtenKey names a written route.
type writtenKey struct{ n, r string }

// writtenSet returns the routes in rows.
func writtenSet(rows []store.RouteCompleteManyRow) map[writtenKey]struct{} {
	written := make(map[writtenKey]struct{}, len(rows))
	for _, r := range rows {
		written[writtenKey{r.NotificationID, r.RouteID}] = struct{}{}
	}
	return written
}

// batchChannels returns the distinct channels of a batch's routes.
func batchChannels(batch []completion) []string {
	var out []string
	for _, x := range batch {
		if !slices.Contains(out, x.channel) {
			out = append(out, x.channel)
		}
	}
	return out
}

// record logs and counts a written batch; the completions missing from
// rows were fenced out (stale).
func (c *completer) record(batch []completion, rows []store.RouteCompleteManyRow) {
	written := writtenSet(rows)
	m, log := c.d.metrics, c.d.log
	for _, x := range batch {
		if _, ok := written[writtenKey{x.notificationID, x.routeID}]; !ok {
			c.d.stats.stale.Add(1)
			m.Attempt(x.channel, "stale")
			log.Info("stale completion ignored: the route has moved on", "notification_id", x.notificationID,
				"route_id", x.routeID, "channel", x.channel, "attempt", x.attempt, "trace_id", x.traceID, "outcome", x.status)
			continue
		}
		m.Attempt(x.channel, x.metricOutcome)
		switch x.status {
		case "published":
			if !x.acceptedAt.IsZero() {
				m.Published(x.channel, time.Since(x.acceptedAt))
			}
		case "dead_letter":
			m.DeadLetter(x.channel, x.classification)
			log.Warn("route dead-lettered", "notification_id", x.notificationID, "route_id", x.routeID,
				"channel", x.channel, "attempt", x.attempt, "trace_id", x.traceID, "classification", x.classification)
		case "failed":
			log.Debug("route attempt failed; retrying later", "notification_id", x.notificationID,
				"route_id", x.routeID, "channel", x.channel, "attempt", x.attempt, "trace_id", x.traceID,
				"classification", x.classification, "retry_in", x.delay)
		case "skipped":
			log.Info("route skipped", "notification_id", x.notificationID, "route_id", x.routeID,
				"channel", x.channel, "trace_id", x.traceID, "classification", x.classification)
		}
	}
}
