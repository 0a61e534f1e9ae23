package dispatch

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// wakeChannel wakes the loop of the channel a hint names, or every loop
// when it names none this dispatcher has (the payload is "" when the
// producer wrote routes of several channels).
func (d *Dispatcher) wakeChannel(name string) {
	for _, l := range d.loops {
		if l.name == name {
			l.wakeUp()
			return
		}
	}
	d.Wake()
}

// listen holds a connection of its own (outside the pool, so it never
// starves claims) LISTENing on RoutesNotifyChannel, and wakes every channel
// loop on each notification. If the connection dies it reconnects by
// itself, with a capped backoff, and wakes the loops once connected again
// in case a notification was missed meanwhile; until then the loops still
// poll.
func (d *Dispatcher) listen(ctx context.Context) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, func() { delay = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("dispatcher listener connection lost; reconnecting", "err", err, "retry_in", delay)
		if !sleep(ctx, delay) {
			return
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// listenOnce connects, LISTENs and waits for notifications until the
// connection fails or ctx ends. connected is called once LISTEN succeeded.
func (d *Dispatcher) listenOnce(ctx context.Context, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	// LISTEN takes an identifier, not a parameter, and sqlc has nothing to
	// generate for it: the one SQL statement of this package in Go.
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{RoutesNotifyChannel}.Sanitize()); err != nil {
		return err
	}
	connected()
	d.Wake()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		d.wakeChannel(n.Payload)
	}
}
