package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

// completerWorkers write batches concurrently: while one waits for its
// statement, the next batch fills.
const completerWorkers = 2

// completer writes outcomes in batches: a bounded buffer drained by a few
// workers, each taking whatever is waiting (up to the batch size) and
// writing it in one fenced statement. Under load batches fill by
// themselves; when idle an outcome is written at once.
type completer struct {
	d    *Dispatcher
	in   chan completion
	once sync.Once
	// progs tracks each worker's statements.
	progs [completerWorkers]*progress
}

func newCompleter(d *Dispatcher, buffer int) *completer {
	c := &completer{d: d, in: make(chan completion, buffer)}
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
	for {
		first, ok := <-c.in
		if !ok {
			return
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < c.d.batchSize {
			select {
			case x, ok := <-c.in:
				if !ok {
					break drain
				}
				batch = append(batch, x)
			default:
				break drain
			}
		}
		c.flush(ctx, prog, batch)
	}
}

// flush writes one batch, retrying database errors until ctx ends (then the
// routes' leases expire and they are attempted again: at-least-once). prog
// is the calling worker's.
func (c *completer) flush(ctx context.Context, prog *progress, batch []completion) {
	// Written, fenced out or given up: out of hand either way.
	defer func() {
		c.d.stats.inHand.Add(-int64(len(batch)))
		if c.d.metrics == nil {
			return
		}
		perChannel := map[string]int{}
		for _, x := range batch {
			perChannel[x.channel]++
		}
		for ch, n := range perChannel {
			c.d.metrics.InFlight(ch, -n)
		}
	}()
	ctx, span := c.completeSpan(ctx, batch)
	defer span.End()
	rows, ok := c.write(ctx, prog, span, batch, true)
	if !ok {
		return
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
			more, ok := c.write(ctx, prog, span, moved, false)
			if !ok {
				// Shutting down: count what the first statement wrote;
				// the moved routes come due again when their leases end.
				c.record(slices.DeleteFunc(slices.Clone(batch), func(x completion) bool {
					_, ok := written[writtenKey{x.notificationID, x.routeID}]
					return !ok
				}), rows)
				return
			}
			rows = append(rows, more...)
		}
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("herald.batch.written", len(rows)))
	}
	c.record(batch, rows)
}

// write runs RouteCompleteMany for batch, each completion addressed by its
// tuple id when byTid (else by its primary key), retrying database errors
// until ctx ends. ok is false when it gave up.
func (c *completer) write(ctx context.Context, prog *progress, span trace.Span, batch []completion, byTid bool) (rows []store.RouteCompleteManyRow, ok bool) {
	p := store.RouteCompleteManyParams{Now: c.d.now()}
	for _, x := range batch {
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
	delay := minCompleteDelay
	racedOnce := false
	for {
		prog.begin()
		rows, err := c.d.q.RouteCompleteMany(ctx, c.d.pool, p)
		if err == nil {
			prog.done()
			return rows, true
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
			return nil, false
		}
		prog.fail(opComplete, err, delay, batchChannels(batch)...)
		if pause.For(ctx, delay) != nil {
			return nil, false
		}
		delay = min(2*delay, maxCompleteDelay)
	}
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
