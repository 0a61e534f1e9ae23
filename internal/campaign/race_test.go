package campaign

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/dispatch"
)

// deliveries records what a test channel did per route: how many times
// Deliver answered delivered.
type deliveries struct {
	mu        sync.Mutex
	delivered map[string]int // notification_id/route_id → deliveries
	attempts  atomic.Int64
}

// TestCancel_RacingDispatchersNeverBoth
// runs four dispatchers on one database (as four herald serve processes
// would) delivering a campaign through a channel that
// takes a millisecond and fails one attempt in five transiently, and
// cancels the campaign in small batches while they do. Afterwards every
// route is published or canceled; the published routes are exactly those
// the channel delivered, each once; no canceled route was ever delivered.
// A campaign delivered meanwhile by the same dispatchers is not slowed to
// a stop: it is delivered whole. (Canceling claimed routes too, as the
// single notification's cancel does, fails here: a claimed route is
// delivered and then canceled under its dispatcher.)
func TestCancel_RacingDispatchersNeverBoth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n, other = 3000, 300
	b.submitCampaign(t, "shop", "spring", n, time.Time{})
	b.submitCampaign(t, "shop", "autumn", other, time.Time{})

	d := &deliveries{delivered: map[string]int{}}
	deliver := channel.DelivererFunc(func(ctx context.Context, m *channel.Message) channel.Outcome {
		k := d.attempts.Add(1)
		time.Sleep(time.Millisecond)
		if k%5 == 0 {
			return channel.Outcome{Class: channel.Transient, Classification: "http_503", Message: "try again"}
		}
		d.mu.Lock()
		d.delivered[m.NotificationID+"/"+m.RouteID]++
		d.mu.Unlock()
		return channel.Outcome{Class: channel.Delivered}
	})
	for range 4 {
		disp, err := dispatch.New(b.pool, &dispatch.Config{
			Channels: map[string]dispatch.ChannelConfig{"webhook": {
				Deliverer: deliver, Concurrency: 8,
				Backoff: dispatch.BackoffConfig{Base: time.Millisecond, Cap: 5 * time.Millisecond},
			}},
			BatchSize: 50, PollInterval: 10 * time.Millisecond,
		})
		require.NoError(t, err)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- disp.Run(runCtx) }()
		t.Cleanup(func() {
			stop()
			require.NoError(t, <-done)
		})
	}

	// Cancel once deliveries are well under way.
	require.Eventually(t, func() bool { return d.attempts.Load() >= 300 }, 30*time.Second, 5*time.Millisecond)
	var inFlightSeen int64
	res, err := Cancel(ctx, b.pool, "shop", "spring", CancelOpts{Actor: "ops", BatchSize: 100, InFlightPause: 5 * time.Millisecond,
		BatchFunc: func(x Batch) { inFlightSeen += x.InFlight }})
	require.NoError(t, err)
	require.True(t, res.Done)

	// Done means every route of the campaign is final already.
	st := b.statuses(t, "shop", "spring")
	require.Equal(t, n, st["published"]+st["canceled"], "every route is published or canceled: %v", st)
	require.NotZero(t, st["published"], "the cancel came while the campaign was being delivered")
	require.NotZero(t, st["canceled"])
	t.Logf("published %d, canceled %d, in flight seen by batches %d", st["published"], st["canceled"], inFlightSeen)

	// The other campaign is delivered whole.
	require.Eventually(t, func() bool { return b.statuses(t, "shop", "autumn")["published"] == other }, 30*time.Second, 10*time.Millisecond)

	rows, err := b.pool.Query(ctx, `SELECT r.notification_id || '/' || r.route_id, r.status
		FROM herald.routes r JOIN herald.records rec USING (notification_id)
		WHERE rec.producer = 'shop' AND rec.campaign = 'spring'`)
	require.NoError(t, err)
	defer rows.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	published := 0
	for rows.Next() {
		var key, status string
		require.NoError(t, rows.Scan(&key, &status))
		switch status {
		case "published":
			published++
			require.Equal(t, 1, d.delivered[key], "published route %s was delivered once", key)
		case "canceled":
			require.Zero(t, d.delivered[key], "canceled route %s was delivered: both delivered and canceled", key)
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, published, st["published"])
	campaignDelivered := 0
	for range d.delivered {
		campaignDelivered++
	}
	require.Equal(t, published+other, campaignDelivered, "every delivery the channel made is a published route")
}
