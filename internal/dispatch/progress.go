package dispatch

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

// Statements of the hot loop, as the op label of
// herald_dispatch_db_timeouts_total and in logs.
const (
	opClaim    = "claim"
	opResolve  = "resolve"
	opComplete = "complete"
	opRelease  = "release"
	opNextDue  = "next_due"
	opPark     = "park"
	opPace     = "pace"
	opHealth   = "health"
)

// opEffect says, per op, what its failure means for the routes: the hint
// of the line that opens an episode.
var opEffect = map[string]string{
	opClaim:    "no routes of the channel are claimed until it succeeds",
	opResolve:  "the claimed routes are released and claimed again",
	opComplete: "the outcomes wait in memory and are written again; routes whose leases end first are delivered again",
	opRelease:  "the routes come due again when their leases end",
	opPark:     "the routes come due again in their channel's queue when their leases end",
	opPace:     "the capped provider's claimed routes are released and claimed again",
	opHealth:   "provider health and circuits are not shared until it succeeds",
}

// timeoutKind returns "lock" for a statement the database canceled by
// lock_timeout, "statement" for one canceled by statement_timeout (or by
// an administrator's pg_cancel_backend: Postgres gives both
// query_canceled), and "" for any other error.
func timeoutKind(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch pgErr.Code {
	case pgerrcode.LockNotAvailable:
		return "lock"
	case pgerrcode.QueryCanceled:
		return "statement"
	}
	return ""
}

// raced reports whether err is a serialization failure (40001): in read
// committed, a statement that found a route moved to another partition of
// herald.routes by a concurrent update (a completion or a cancel finishing
// it, migration 00025) since its snapshot. Nothing was written; the same
// statement run again takes a new snapshot, where the route is where it
// now is.
func raced(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.SerializationFailure
}

// progress tracks whether one part of the hot loop (a channel loop, a
// completer worker) gets its statements through. Its owner calls begin
// before each statement, fail after each failure and done once a round of
// work has succeeded; CheckProgress reads it from any goroutine.
//
// A failure opens an episode: the first is logged at warning level, the
// rest at debug, and done closes it with one line saying how long it
// lasted. So a claim that times out every few seconds behind a table lock
// logs twice, however long the lock is held.
type progress struct {
	d       *Dispatcher
	part    string // "channel loop", or "completer N"
	channel string // the loop's channel; "" for a completer

	// since is when the current round's first statement started (Unix
	// nanoseconds), kept across failures until a round succeeds; 0 when
	// no round is under way.
	since atomic.Int64
	// failing is true from the first failure of an episode to its done: the
	// only state done's fast path reads.
	failing atomic.Bool

	mu       sync.Mutex
	failures int
	lastOp   string
	lastErr  error
	// retired is set when its loop stopped for good (a lane loop whose
	// provider lost its cap): CheckProgress skips it.
	retired atomic.Bool
}

func newProgress(d *Dispatcher, part, channel string) *progress {
	p := &progress{d: d, part: part, channel: channel}
	d.loopsMu.Lock()
	d.progress = append(d.progress, p)
	d.loopsMu.Unlock()
	return p
}

// begin marks a statement starting: the round's start, unless a round is
// under way already.
func (p *progress) begin() {
	if p.since.Load() == 0 {
		p.since.Store(time.Now().UnixNano())
	}
}

// fail records a failed statement of op on the routes of channels (the
// part's own channel if none are given): counted if the database timed it
// out, logged if it opens an episode.
func (p *progress) fail(op string, err error, retryIn time.Duration, channels ...string) {
	if len(channels) == 0 {
		channels = []string{p.channel}
	}
	kind := p.count(op, err, channels)
	p.mu.Lock()
	p.failures++
	first := p.failures == 1
	p.lastOp, p.lastErr = op, err
	p.mu.Unlock()
	p.failing.Store(true)

	attrs := []any{"part", p.part, "op", op, "err", err, "channel", strings.Join(channels, ",")}
	if kind != "" {
		attrs = append(attrs, "timeout", kind)
	}
	if retryIn > 0 {
		attrs = append(attrs, "retry_in", retryIn)
	}
	if !first {
		p.d.log.Debug("dispatcher statement failed again", attrs...)
		return
	}
	attrs = append(attrs, "effect", opEffect[op],
		"hint", "logged once until it succeeds again; see herald_dispatch_db_timeouts_total and /readyz")
	if kind == "lock" {
		attrs = append(attrs, "lock_timeout", p.d.lockTimeout)
	}
	p.d.log.Warn("dispatcher statement failed; retrying with backoff", attrs...)
}

// count counts err in herald_dispatch_db_timeouts_total, once per
// channel, if the database timed the statement out, and returns the
// timeout's kind ("" if it did not).
func (p *progress) count(op string, err error, channels []string) string {
	kind := timeoutKind(err)
	if kind != "" {
		for _, ch := range channels {
			p.d.metrics.DispatchDBTimeout(op, ch, kind)
		}
	}
	return kind
}

// done marks a round of work succeeded, closing the episode if one is
// open.
func (p *progress) done() {
	since := p.since.Swap(0)
	if !p.failing.Load() {
		return
	}
	p.mu.Lock()
	failures, op := p.failures, p.lastOp
	p.failures, p.lastOp, p.lastErr = 0, "", nil
	p.mu.Unlock()
	p.failing.Store(false)
	attrs := []any{"part", p.part, "failures", failures, "last_failed_op", op}
	if p.channel != "" {
		attrs = append(attrs, "channel", p.channel)
	}
	if since != 0 {
		attrs = append(attrs, "failing_for", time.Since(time.Unix(0, since)).Round(time.Millisecond))
	}
	p.d.log.Info("dispatcher statements succeed again", attrs...)
}

// stalledFor returns how long the part's current round has gone without
// succeeding at now, and a description of it; 0 when no round is under
// way.
func (p *progress) stalledFor(now time.Time) (time.Duration, string) {
	since := p.since.Load()
	if since == 0 {
		return 0, ""
	}
	age := now.Sub(time.Unix(0, since))
	who := p.part
	if p.channel != "" {
		who = fmt.Sprintf("%s %q", p.part, p.channel)
	}
	p.mu.Lock()
	failures, op, err := p.failures, p.lastOp, p.lastErr
	p.mu.Unlock()
	if failures == 0 {
		return age, fmt.Sprintf("%s: a statement has been running for %s", who, age.Round(time.Millisecond))
	}
	what := "failed"
	if kind := timeoutKind(err); kind != "" {
		what = "timed out (" + kind + "_timeout)"
	}
	return age, fmt.Sprintf("%s: no success for %s, %d statements failed; last: %s %s: %v",
		who, age.Round(time.Millisecond), failures, op, what, err)
}

// CheckProgress returns nil while the dispatcher is making progress: every
// channel loop and completer worker got its last round of statements
// through, or has been at its current round for less than
// Config.StallTimeout. Otherwise it returns an error wrapping ErrStalled
// that names the part stuck longest, for how long, and its last error (a
// claim behind a table lock, a completion behind a row lock). A dispatcher
// idle because nothing is due is making progress: its loops' statements
// succeed. It returns nil when the Dispatcher is not running. It reads
// memory only, so a readiness probe may call it as often as it likes; it
// recovers by itself once the statements succeed again.
func (d *Dispatcher) CheckProgress() error {
	if !d.running.Load() {
		return nil
	}
	now := time.Now()
	var worst time.Duration
	var reason string
	d.loopsMu.RLock()
	defer d.loopsMu.RUnlock()
	for _, p := range d.progress {
		if p.retired.Load() {
			continue
		}
		if age, why := p.stalledFor(now); age > d.stallTimeout && age > worst {
			worst, reason = age, why
		}
	}
	if reason == "" {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrStalled, reason)
}
