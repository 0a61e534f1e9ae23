package dispatch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/routing"
)

// holdingSMSServer is a loopback SMS provider that holds each request
// until release is closed, telling arrived as each comes in.
func holdingSMSServer(t *testing.T) (url string, arrived chan struct{}, release chan struct{}) {
	t.Helper()
	arrived, release = make(chan struct{}, 16), make(chan struct{})
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": n.Add(1)})
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return s.URL, arrived, release
}

func TestProviderState_DisabledGetsNoAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1000, 30*time.Second, "sms/main", "sms/backup")
	main, backup := newSMSServer(t), newSMSServer(t)
	mainP := smsProvider(t, "sms/main", main.URL, 0)
	mainP.State = routing.StateDisabled
	b.start(t, &Config{Plane: &Plane{
		Providers: map[string]*Provider{"sms/main": mainP, "sms/backup": smsProvider(t, "sms/backup", backup.URL, 0)},
		PickFunc:  failoverPick("sms/main", "sms/backup"),
	}})
	var keys []routeKey
	for range 5 {
		keys = append(keys, b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})...)
	}
	for _, k := range keys {
		require.Equal(t, []string{"sms/backup"}, b.waitStatus(t, k, "published").Providers, "routed past the disabled provider")
	}
	require.Zero(t, main.count(), "the disabled provider got no attempt")
	require.Equal(t, 5, backup.count())
}

func TestProviderState_DrainLetsInFlightFinish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1000, 30*time.Second, "sms/main", "sms/backup")
	mainURL, arrived, release := holdingSMSServer(t)
	backup := newSMSServer(t)
	mainP, backupP := smsProvider(t, "sms/main", mainURL, 0), smsProvider(t, "sms/backup", backup.URL, 0)
	d := b.start(t, &Config{Plane: &Plane{
		Providers: map[string]*Provider{"sms/main": mainP, "sms/backup": backupP},
		PickFunc:  failoverPick("sms/main", "sms/backup"),
	}})
	inFlight := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first route never reached sms/main")
	}

	// Drain sms/main while it holds the first route's attempt.
	drained := *mainP
	drained.State = routing.StateDraining
	d.SetPlane(&Plane{
		Providers: map[string]*Provider{"sms/main": &drained, "sms/backup": backupP},
		PickFunc:  failoverPick("sms/main", "sms/backup"),
	})
	fresh := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	require.Equal(t, []string{"sms/backup"}, b.waitStatus(t, fresh[0], "published").Providers, "a new route goes to the next provider")

	close(release)
	require.Equal(t, []string{"sms/main"}, b.waitStatus(t, inFlight[0], "published").Providers, "the attempt in flight finished at the draining provider")
	select {
	case <-arrived:
		t.Fatal("the draining provider got a new attempt")
	default:
	}
}

func TestProviderHealth_CountsFailovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1000, 30*time.Second, "sms/main", "sms/backup")
	var main, backup atomic.Int64
	b.start(t, &Config{
		Channels: map[string]ChannelConfig{"sms": {
			Deliverer: countingDeliverer(new(atomic.Int64), channel.Delivered),
			Backoff:   BackoffConfig{Base: time.Hour, Cap: time.Hour},
		}},
		Plane: &Plane{
			Providers: map[string]*Provider{
				"sms/main":   {Name: "sms/main", Channel: "sms", Deliverer: countingDeliverer(&main, channel.Transient)},
				"sms/backup": {Name: "sms/backup", Channel: "sms", Deliverer: countingDeliverer(&backup, channel.Delivered)},
			},
			PickFunc: failoverPick("sms/main", "sms/backup"),
		},
	})
	for range 3 {
		keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
		b.waitStatus(t, keys[0], "published")
	}
	require.Eventually(t, func() bool {
		var n int64
		err := b.pool.QueryRow(context.Background(), `
			SELECT coalesce(sum((failovers ->> 'sms/backup')::bigint), 0) FROM herald.provider_health WHERE provider = 'sms/main'`).Scan(&n)
		return err == nil && n == 3
	}, 10*time.Second, 50*time.Millisecond, "three failovers from sms/main to sms/backup, flushed with the health counts")
}
