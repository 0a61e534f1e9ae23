package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// attemptContext is a delivery attempt's context: what
// context.WithDeadline(parent, deadline) returns, made only when it is
// used. WithDeadline starts a timer and registers the new context among
// its parent's children (under the parent's lock, which every delivery
// of the dispatcher shares) at once, and undoes both when the attempt
// ends: for a deliverer that returns without waiting on its context (one
// that queues, or the bench's sink) that was most of the attempt's cost.
// attemptContext makes the real context on the first call of Done or
// Value (context.Cause and context.AfterFunc call those) and delegates
// to it from then on, so that whoever waits on the context, or looks
// into it, sees exactly what WithDeadline gives; until then Deadline and
// Err answer from the clock and the parent. A parent already canceled,
// a deadline already passed and end are seen by Err alike either way.
type attemptContext struct {
	parent   context.Context
	deadline time.Time
	made     atomic.Pointer[madeContext]
	mu       sync.Mutex // guards making and ended
	// ended is Err as end left it, while the real context was not made.
	ended error
}

// madeContext is the real context of an attemptContext.
type madeContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// newAttemptContext returns the context of an attempt under parent
// that must end by deadline; the caller calls end when the attempt is
// over, as it would WithDeadline's cancel function.
func newAttemptContext(parent context.Context, deadline time.Time) *attemptContext {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d // as WithDeadline: the parent's, when sooner
	}
	return &attemptContext{parent: parent, deadline: deadline}
}

// use returns the real context, making it on the first call.
func (c *attemptContext) use() context.Context {
	if m := c.made.Load(); m != nil {
		return m.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.made.Load(); m != nil {
		return m.ctx
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	if c.ended != nil {
		// Ended unused: the real context is done already. WithDeadline
		// made it done if the parent was or the deadline has passed;
		// cancel covers end.
		cancel()
	}
	c.made.Store(&madeContext{ctx: ctx, cancel: cancel})
	return ctx
}

// end ends the attempt: WithDeadline's cancel function.
func (c *attemptContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.made.Load(); m != nil {
		m.cancel()
		return
	}
	if c.ended == nil {
		c.ended = c.errNow()
		if c.ended == nil {
			c.ended = context.Canceled
		}
	}
}

// errNow is Err of an attemptContext not ended and not made.
func (c *attemptContext) errNow() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Deadline implements context.Context.
func (c *attemptContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *attemptContext) Done() <-chan struct{} { return c.use().Done() }

// Value implements context.Context.
func (c *attemptContext) Value(key any) any { return c.use().Value(key) }

// Err implements context.Context.
func (c *attemptContext) Err() error {
	if m := c.made.Load(); m != nil {
		return m.ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.made.Load(); m != nil {
		return m.ctx.Err()
	}
	if c.ended != nil {
		return c.ended
	}
	return c.errNow()
}

// String names the context as WithDeadline's does, for panics and logs.
func (c *attemptContext) String() string {
	return "dispatch.attemptContext(" + c.deadline.String() + ")"
}
