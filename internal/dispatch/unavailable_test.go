package dispatch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
)

// TestDispatcher_UnavailableProviderPassed: a provider whose
// ReadyFunc says it cannot send is passed over as an open circuit is: the
// route goes to the next provider at its first attempt, and the health
// records why the first cannot send.
func TestDispatcher_UnavailableProviderPassed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1000, 30*time.Second, "sms/main", "sms/backup")
	var main, backup atomic.Int64
	b.start(t, &Config{Plane: &Plane{
		Providers: map[string]*Provider{
			"sms/main": {Name: "sms/main", Channel: "sms", Deliverer: countingDeliverer(&main, channel.Delivered),
				ReadyFunc: func() error { return errors.New("the SMSC refuses herald's bind: ESME_RBINDFAIL (0x0000000D)") }},
			"sms/backup": {Name: "sms/backup", Channel: "sms", Deliverer: countingDeliverer(&backup, channel.Delivered)},
		},
		PickFunc: failoverPick("sms/main", "sms/backup"),
	}})
	keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	r := b.waitStatus(t, keys[0], "published")
	require.Equal(t, []string{"sms/backup"}, r.Providers)
	require.EqualValues(t, 1, r.AttemptCount)
	require.Zero(t, main.Load())
	var reason string
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(context.Background(), `SELECT unavailable_reason FROM herald.provider_health
			WHERE provider = 'sms/main' AND unavailable > 0 ORDER BY bucket DESC LIMIT 1`).Scan(&reason) == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "the SMSC refuses herald's bind: ESME_RBINDFAIL (0x0000000D)", reason)
}

// TestDispatcher_UnsentHandsAttemptBack: an attempt that reached no
// provider (Unsent) spends no attempt: a route with a budget of one
// attempt is neither failed nor dead-lettered, and waits to be routed
// again; the provider's health counts nothing against it.
func TestDispatcher_UnsentHandsAttemptBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1, 30*time.Second, "sms/smsc")
	var calls atomic.Int64
	d := b.start(t, &Config{
		Channels: map[string]ChannelConfig{"sms": {
			Deliverer: countingDeliverer(new(atomic.Int64), channel.Delivered), MaxAttempts: 1,
		}},
		Plane: &Plane{
			Providers: map[string]*Provider{"sms/smsc": {Name: "sms/smsc", Channel: "sms",
				Deliverer: channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
					calls.Add(1)
					return channel.Outcome{Class: channel.Transient, Classification: "smpp_not_bound", Unsent: true,
						Message: "no bind is up"}
				})}},
			PickFunc: failoverPick("sms/smsc"),
		},
	})
	keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	require.Eventually(t, func() bool {
		delivered := calls.Load() >= 1 // read first: the route read after is no older than the delivery
		return delivered && b.route(t, keys[0]).Status != "claimed"
	}, 15*time.Second, 5*time.Millisecond)
	r := b.route(t, keys[0])
	require.Equal(t, "pending", r.Status, "its attempt handed back, not failed nor dead-lettered")
	require.Zero(t, r.AttemptCount)
	require.NotNil(t, r.NextAttemptAt, "it waits to be routed again")
	// Two health rounds from now: the second began after the outcome was
	// counted.
	d.signals.Drain()
	awaitMoment(t, d, moment{kind: signalHealthFlushed})
	awaitMoment(t, d, moment{kind: signalHealthFlushed})
	var transient int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT coalesce(sum(transient), 0)
		FROM herald.provider_health WHERE provider = 'sms/smsc'`).Scan(&transient))
	require.Zero(t, transient, "nothing reached the provider: nothing counts against its circuit")
}
