// Package testsignal lets a test wait for a moment the code under test
// reaches (a loop gone to sleep, a listener connected) instead of sleeping
// and hoping it has. The code emits with Signal, which is a nil check and
// nothing more until a test calls Init; the test then reads the values,
// in the order they were emitted, from C.
package testsignal

// Signal is one kind of moment. Its zero value is off: Signal does
// nothing. A test calls Init before the code under test starts.
type Signal[T any] struct {
	ch chan T
}

// Init turns the signal on, buffering up to 10000 values nobody has read
// yet (more are dropped, never blocking the code under test).
func (s *Signal[T]) Init() { s.ch = make(chan T, 10000) }

// Signal emits v when the signal is on, without ever blocking.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// C returns the channel the emitted values arrive on: nil (never ready)
// before Init.
func (s *Signal[T]) C() <-chan T { return s.ch }

// Drain discards the values emitted so far, so that the next value read
// from C is one emitted after Drain.
func (s *Signal[T]) Drain() {
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}
