package dispatch

import "github.com/heraldhq/herald/internal/testsignal"

// The moments the dispatcher signals (Dispatcher.signals), for its tests
// to wait on instead of sleeping. One signal carries them all, so a test
// sees them in the order they happened.
const (
	// signalIdle: a channel loop is about to sleep until
	// a wake-up, a due route or its poll.
	signalIdle = "idle"
	// signalFull: a channel loop has no free slot and
	// waits for a delivery to end before it claims again.
	signalFull = "full"
	// signalListening: the LISTEN connection is (re)connected, just
	// before it wakes every loop.
	signalListening = "listening"
	// signalHealthFlushed: a provider health round was written.
	signalHealthFlushed = "health flushed"
)

// moment is one signalled moment: its kind (signalIdle…) and the channel
// loop's name for the loops' moments. A value, so emitting one while the
// signal is off allocates nothing.
type moment struct {
	kind, channel string
}

// signals is the dispatcher's test signal: off, costing a nil check where
// a moment is emitted, until a test calls Init before Run.
type signals = testsignal.Signal[moment]
