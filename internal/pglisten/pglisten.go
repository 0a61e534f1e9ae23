// Package pglisten holds a PostgreSQL LISTEN connection that reconnects by
// itself: the wake-up path of the dispatcher (herald_routes) and of the
// intake worker (herald_intake). Notifications are only hints; callers also
// poll, so a lost connection delays work but never strands it.
package pglisten

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/store"
)

// Config configures Run.
type Config struct {
	// ConnConfig is the connection to open, outside any pool: a LISTEN
	// connection is held for the process's life and must not starve a pool.
	ConnConfig *pgx.ConnConfig
	// Topic is the base name of the NOTIFY topic to LISTEN on (what
	// PostgreSQL calls a channel; herald keeps that word for delivery
	// channels), e.g. wake.RoutesTopic. The name listened on is the one
	// herald.notify_topic makes of it, the base and the database's secret,
	// which only the engine's login (and staff) may read: the connection
	// must be the engine's.
	Topic string
	// NotifyFunc is called with each notification's payload.
	NotifyFunc func(payload string)
	// ConnectedFunc, if set, is called each time LISTEN succeeds; first is
	// false after a reconnect, when notifications may have been missed.
	ConnectedFunc func(first bool)
	// FailedFunc, if set, is called when the connection fails or cannot be
	// made, with the delay before the next try.
	FailedFunc func(err error, retryIn time.Duration)
}

// Backoff bounds between reconnects.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 5 * time.Second
)

// Run LISTENs until ctx is done, reconnecting with a capped backoff.
func Run(ctx context.Context, cfg Config) {
	delay := minRetry
	first := true
	for ctx.Err() == nil {
		err := listenOnce(ctx, cfg, func() {
			delay = minRetry
			if cfg.ConnectedFunc != nil {
				cfg.ConnectedFunc(first)
			}
			first = false
		})
		if ctx.Err() != nil {
			return
		}
		if cfg.FailedFunc != nil {
			cfg.FailedFunc(err, delay)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetry)
	}
}

// listenOnce connects, LISTENs and relays notifications until the
// connection fails or ctx ends.
func listenOnce(ctx context.Context, cfg Config, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	topic, err := store.New().NotifyTopic(ctx, conn, cfg.Topic)
	if err != nil {
		return fmt.Errorf("name of NOTIFY topic %s: %w", cfg.Topic, err)
	}
	// SQL in Go, the commented exception: LISTEN takes an identifier, not a
	// parameter, so sqlc has nothing to generate for it.
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{topic}.Sanitize()); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		cfg.NotifyFunc(n.Payload)
	}
}
