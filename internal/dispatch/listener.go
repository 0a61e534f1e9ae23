package dispatch

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/pglisten"
	"github.com/heraldhq/herald/internal/wake"
)

// wakeChannel wakes the loop of the channel a hint names, or every loop
// when it names none this dispatcher has (the payload is "" when the
// producer wrote routes of several channels).
func (d *Dispatcher) wakeChannel(name string) {
	d.loopsMu.RLock()
	defer d.loopsMu.RUnlock()
	for _, l := range d.loops {
		if l.name == name {
			l.wakeUp()
			return
		}
	}
	d.Wake()
}

// listen holds a connection of its own (outside the pool, so it never
// starves claims) LISTENing on wake.RoutesTopic, and wakes the named
// channel's loop on each notification. If the connection dies it reconnects
// by itself, with a capped backoff, and wakes every loop once connected
// again in case a notification was missed meanwhile; until then the loops
// still poll.
func (d *Dispatcher) listen(ctx context.Context) {
	pglisten.Run(ctx, pglisten.Config{
		ConnConfig: d.pool.Config().ConnConfig,
		Topic:      wake.RoutesTopic,
		NotifyFunc: d.wakeChannel,
		ConnectedFunc: func(bool) {
			d.signals.Signal(moment{kind: signalListening})
			d.Wake()
		},
		FailedFunc: func(err error, retryIn time.Duration) {
			d.log.Warn("dispatcher listener connection lost; reconnecting", "err", err, "retry_in", retryIn)
		},
	})
}
