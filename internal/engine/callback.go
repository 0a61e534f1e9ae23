package engine

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel/callback"
	"github.com/heraldhq/herald/internal/dispatch"
)

// Callbacks configures channel callback: status callbacks to producers
// (internal/callback owns them; internal/channel/callback posts them).
// Zero fields take DefaultCallbacks' values.
type Callbacks struct {
	// Disabled leaves the callback channel out of this engine: callbacks
	// wait for an engine that delivers them.
	Disabled bool
	// Concurrency, MaxAttempts, Backoff, Timeout and Lease are the
	// channel's delivery policy, as dispatch.ChannelConfig's. Attempts
	// held back because an earlier callback of the same route is not
	// delivered yet count against MaxAttempts.
	Concurrency int
	MaxAttempts int
	Backoff     dispatch.BackoffConfig
	Timeout     time.Duration
	Lease       time.Duration
	// AllowPrivate, AllowHosts and DenyCIDRs are the dial guard's, as for
	// the webhook channel: producers' endpoints on private or loopback
	// addresses are refused unless allowed.
	AllowPrivate bool
	AllowHosts   []string
	DenyCIDRs    []string
	// OrderRetry is callback.Config.OrderRetry: the shortest wait behind
	// an earlier callback of the same route. Default 1s.
	OrderRetry time.Duration
}

// DefaultCallbacks are the callback channel's defaults: more attempts
// than the other channels' 10 (order waits spend some) and a shorter
// backoff cap, so a producer's endpoint that comes back hears within
// minutes.
var DefaultCallbacks = Callbacks{
	Concurrency: dispatch.DefaultConcurrency,
	MaxAttempts: 15,
	Backoff:     dispatch.BackoffConfig{Base: time.Second, Cap: 5 * time.Minute},
	Timeout:     10 * time.Second,
}

// callbackChannel builds the callback channel's configuration; its
// Deliverer reads subscriptions through pool, the engine's login.
func callbackChannel(pool *pgxpool.Pool, c Callbacks, logger *slog.Logger) (dispatch.ChannelConfig, error) {
	d := DefaultCallbacks
	timeout := cmp.Or(c.Timeout, d.Timeout)
	deliverer, err := callback.New(callback.Config{
		Pool:         pool,
		Timeout:      timeout,
		AllowPrivate: c.AllowPrivate,
		AllowHosts:   c.AllowHosts,
		DenyCIDRs:    c.DenyCIDRs,
		OrderRetry:   c.OrderRetry,
		Logger:       logger,
	})
	if err != nil {
		return dispatch.ChannelConfig{}, err
	}
	return dispatch.ChannelConfig{
		Deliverer:   deliverer,
		Concurrency: cmp.Or(c.Concurrency, d.Concurrency),
		MaxAttempts: cmp.Or(c.MaxAttempts, d.MaxAttempts),
		Backoff: dispatch.BackoffConfig{
			Base:     cmp.Or(c.Backoff.Base, d.Backoff.Base),
			Cap:      cmp.Or(c.Backoff.Cap, d.Backoff.Cap),
			RandFunc: c.Backoff.RandFunc,
		},
		Timeout: timeout,
		Lease:   c.Lease,
	}, nil
}
