package wake

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// DefaultDebounce is the default debounce window of a Waker: 5 ms. A
// NOTIFY is not free: every notifying transaction takes a cluster-wide lock
// on the notification queue at commit, serializing those commits, so one
// per submit would cap intake at that lock's rate. One hint per 5 ms is at
// most 200 per second whatever the submit rate, while the leading edge
// keeps an isolated submit's latency at zero and a burst's added latency
// under 5 ms (a dispatcher woken by the first hint usually claims the rest
// of the burst on the same wake-up anyway).
const DefaultDebounce = 5 * time.Millisecond

// Waker debounces the RoutesTopic wake-up hint of one process: the first
// accept of a quiet period sends it at once (leading edge, inside the
// accept's own statement), the accepts that follow within the window send
// nothing, and one trailing hint goes out at the end of the window if any
// did. It is safe for concurrent use.
type Waker struct {
	db     store.DBTX // sends trailing hints
	window time.Duration
	logger *slog.Logger

	mu             sync.Mutex
	last           time.Time // when the last hint went out (or rode a statement)
	timer          *time.Timer
	pending        bool // a trailing hint is scheduled
	pendingChannel string
	closed         bool
}

// NewWaker returns a Waker sending trailing hints through db (normally the
// pool) with debounce window window (DefaultDebounce when zero; a
// negative window disables debouncing: every accept sends its hint). A nil
// logger discards.
func NewWaker(db store.DBTX, window time.Duration, logger *slog.Logger) *Waker {
	if window == 0 {
		window = DefaultDebounce
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Waker{db: db, window: window, logger: logger}
}

// Hint is called by an accept about to insert routes of delivery channel
// ch ("" for several). It returns the payload the accept's statement
// should send itself (its Notify parameter) on the leading edge of a
// window, or nil when a hint went out less than a window ago; then the
// accept calls Done once its statement has succeeded.
func (w *Waker) Hint(ch string) *string {
	if w.window < 0 {
		return &ch
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return &ch // no trailing hints any more: every accept sends its own
	}
	if now.Sub(w.last) >= w.window && !w.pending {
		w.last = now
		return &ch
	}
	return nil
}

// Done is called after the statement of an accept whose Hint returned nil
// has succeeded: it schedules one trailing hint for the end of the current
// window (at once if the window has ended), merged with any trailing hint
// already scheduled. Scheduling after the statement, not before, keeps a
// long statement (a batch of thousands) from being hinted before its rows
// are committed. Within a caller's transaction (SubmitTx) the rows become
// visible only at its commit, which the trailing hint may precede: then the
// dispatchers' poll finds them.
func (w *Waker) Done(ch string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.window < 0 {
		return
	}
	if w.pending {
		if w.pendingChannel != ch {
			w.pendingChannel = ""
		}
		return
	}
	w.pending, w.pendingChannel = true, ch
	w.timer = time.AfterFunc(max(0, time.Until(w.last.Add(w.window))), w.trail)
}

// trail sends the scheduled trailing hint.
func (w *Waker) trail() {
	w.mu.Lock()
	ch := w.pendingChannel
	w.pending, w.pendingChannel = false, ""
	w.last = time.Now()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.New().RouteNotifyDispatchers(ctx, w.db, ch); err != nil {
		// Only a hint: dispatchers poll as well.
		w.logger.Debug("send trailing wake-up hint", slog.String("channel", ch), slog.Any("err", err))
	}
}

// Close cancels a scheduled trailing hint; after it, every Hint returns a
// payload (no debouncing, no timers). Close is idempotent.
func (w *Waker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
