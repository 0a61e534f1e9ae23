package dispatch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type attemptCtxKey struct{}

// TestAttemptContext_BehavesAsWithDeadline runs each scenario on an
// attemptContext and on context.WithDeadline (the reference) and requires
// the same Deadline, Err, Cause, Done state and values at every step.
func TestAttemptContext_BehavesAsWithDeadline(t *testing.T) {
	t.Parallel()
	errShutdown := errors.New("shutdown")
	type step func(t *testing.T, ctx context.Context, end func(), cancelParent context.CancelCauseFunc)
	use := func(t *testing.T, ctx context.Context, _ func(), _ context.CancelCauseFunc) { _ = ctx.Done() }
	look := func(t *testing.T, ctx context.Context, _ func(), _ context.CancelCauseFunc) {
		_ = ctx.Value(attemptCtxKey{})
	}
	end := func(t *testing.T, _ context.Context, end func(), _ context.CancelCauseFunc) { end() }
	cancelParent := func(t *testing.T, _ context.Context, _ func(), cancel context.CancelCauseFunc) {
		cancel(errShutdown)
	}
	waitDone := func(t *testing.T, ctx context.Context, _ func(), _ context.CancelCauseFunc) {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done did not close")
		}
	}
	sleepPast := func(t *testing.T, _ context.Context, _ func(), _ context.CancelCauseFunc) {
		time.Sleep(30 * time.Millisecond)
	}
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		// parentTimeout, when set, gives the parent a deadline of its own.
		parentTimeout time.Duration
		steps         []step
	}{
		{name: "EndedUnused", timeout: time.Hour, steps: []step{end}},
		{name: "EndedUnusedThenUsed", timeout: time.Hour, steps: []step{end, use}},
		{name: "UsedThenEnded", timeout: time.Hour, steps: []step{use, end}},
		{name: "LookedIntoThenEnded", timeout: time.Hour, steps: []step{look, end}},
		{name: "DeadlinePassedUnused", timeout: 10 * time.Millisecond, steps: []step{sleepPast}},
		{name: "DeadlinePassedUnusedThenEnded", timeout: 10 * time.Millisecond, steps: []step{sleepPast, end, use}},
		{name: "DeadlinePassedUnusedThenUsed", timeout: 10 * time.Millisecond, steps: []step{sleepPast, use, waitDone}},
		{name: "UsedUntilDeadline", timeout: 10 * time.Millisecond, steps: []step{use, waitDone, end}},
		{name: "ParentCanceledUnused", timeout: time.Hour, steps: []step{cancelParent}},
		{name: "ParentCanceledUnusedThenUsed", timeout: time.Hour, steps: []step{cancelParent, use, waitDone}},
		{name: "ParentCanceledWhileUsed", timeout: time.Hour, steps: []step{use, cancelParent, waitDone, end}},
		{name: "ParentCanceledAfterEnd", timeout: time.Hour, steps: []step{end, cancelParent, use}},
		{name: "ParentDeadlineSooner", timeout: time.Hour, parentTimeout: 10 * time.Millisecond,
			steps: []step{sleepPast, use, waitDone}},
		{name: "ZeroTimeout", timeout: 0, steps: []step{use, waitDone}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			type side struct {
				ctx    context.Context
				end    func()
				cancel context.CancelCauseFunc
			}
			base := context.WithValue(context.Background(), attemptCtxKey{}, "v")
			deadline := time.Now().Add(tt.timeout)
			var parentDeadline time.Time
			if tt.parentTimeout > 0 {
				parentDeadline = time.Now().Add(tt.parentTimeout)
			}
			mk := func(real bool) side {
				parent, cancel := context.WithCancelCause(base)
				if tt.parentTimeout > 0 {
					var stop context.CancelFunc
					parent, stop = context.WithDeadline(parent, parentDeadline)
					t.Cleanup(stop)
				}
				t.Cleanup(func() { cancel(nil) })
				if real {
					ctx, end := context.WithDeadline(parent, deadline)
					return side{ctx, end, cancel}
				}
				a := newAttemptContext(parent, deadline)
				return side{a, a.end, cancel}
			}
			got, want := mk(false), mk(true)
			check := func(when string) {
				gd, gok := got.ctx.Deadline()
				wd, wok := want.ctx.Deadline()
				require.Equal(t, wok, gok, "%s: Deadline ok", when)
				require.True(t, wd.Equal(gd), "%s: Deadline %v, want %v", when, gd, wd)
				require.Equal(t, want.ctx.Err(), got.ctx.Err(), "%s: Err", when)
				require.Equal(t, context.Cause(want.ctx), context.Cause(got.ctx), "%s: Cause", when)
				require.Equal(t, want.ctx.Value(attemptCtxKey{}), got.ctx.Value(attemptCtxKey{}), "%s: Value", when)
				if want.ctx.Err() != nil {
					select {
					case <-got.ctx.Done():
					default:
						t.Fatalf("%s: Err is %v but Done is open", when, got.ctx.Err())
					}
				}
			}
			for i, s := range tt.steps {
				s(t, got.ctx, got.end, got.cancel)
				s(t, want.ctx, want.end, want.cancel)
				check("step " + string(rune('1'+i)))
			}
		})
	}
}

// TestAttemptContext_ErrWithoutUse: until something waits on it, an
// attempt's context answers Err from the clock, its parent and end, and
// makes no timer (Done, made at last, is closed at once).
func TestAttemptContext_ErrWithoutUse(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newAttemptContext(parent, time.Now().Add(time.Hour))
	require.NoError(t, a.Err())
	require.Nil(t, a.made.Load(), "Err made the real context")
	cancel()
	require.ErrorIs(t, a.Err(), context.Canceled)
	a.end()
	require.ErrorIs(t, a.Err(), context.Canceled)
	require.Nil(t, a.made.Load())
	<-a.Done()

	past := newAttemptContext(context.Background(), time.Now().Add(-time.Second))
	require.ErrorIs(t, past.Err(), context.DeadlineExceeded)
	past.end()
	require.ErrorIs(t, past.Err(), context.DeadlineExceeded, "end after the deadline keeps DeadlineExceeded, as cancel does")
	<-past.Done()
}

// TestAttemptContext_AfterFuncAndChildren: context.AfterFunc and a child
// context of an attempt's context see it end, as they see WithDeadline's.
func TestAttemptContext_AfterFuncAndChildren(t *testing.T) {
	t.Parallel()
	a := newAttemptContext(context.Background(), time.Now().Add(time.Hour))
	ran := make(chan struct{})
	context.AfterFunc(a, func() { close(ran) })
	child, stop := context.WithCancel(a)
	defer stop()
	a.end()
	<-ran
	<-child.Done()
	require.ErrorIs(t, child.Err(), context.Canceled)

	// AfterFunc after end runs at once.
	late := make(chan struct{})
	context.AfterFunc(a, func() { close(late) })
	<-late
}

// TestAttemptContext_ConcurrentUse: Done, Err and Value from several
// goroutines while the attempt ends (run with -race).
func TestAttemptContext_ConcurrentUse(t *testing.T) {
	t.Parallel()
	for range 50 {
		a := newAttemptContext(context.Background(), time.Now().Add(time.Millisecond))
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				switch g % 3 {
				case 0:
					<-a.Done()
				case 1:
					_ = a.Err()
				default:
					_ = a.Value(attemptCtxKey{})
				}
			})
		}
		wg.Go(a.end)
		wg.Wait()
		<-a.Done()
		require.Error(t, a.Err())
	}
}

// BenchmarkAttemptContext compares, per delivery whose deliverer does not
// wait on its context, context.WithTimeout under a cancelable parent shared
// by every delivery (the dispatcher's) with attemptContext.
//
//	go test -run '^$' -bench AttemptContext ./internal/dispatch
func BenchmarkAttemptContext(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ctx, stop := context.WithTimeout(parent, time.Minute)
				_ = ctx
				stop()
			}
		})
	})
	b.Run("attemptContext", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				a := newAttemptContext(parent, time.Now().Add(time.Minute))
				a.end()
			}
		})
	})
}
