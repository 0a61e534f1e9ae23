package dispatch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/routing"
)

// failoverPick is a failover rule over order for every route: the provider
// after the last one tried, skipping open circuits (what internal/routing
// computes for a failover rule, reduced to what the dispatcher relies on).
func failoverPick(order ...string) func(routing.PickInput) (routing.Decision, error) {
	return func(in routing.PickInput) (routing.Decision, error) {
		start, wrap := 0, false
		if n := len(in.Tried); n > 0 {
			if i := slices.Index(order, in.Tried[n-1]); i >= 0 {
				start = i + 1
			}
		}
		for k := range order {
			idx := start + k
			name := order[idx%len(order)]
			if !in.IsOpenFunc(name) {
				return routing.Decision{Provider: name, Wrap: wrap || idx >= len(order)}, nil
			}
		}
		return routing.Decision{Provider: order[start%len(order)], AllOpen: true}, nil
	}
}

// addProviders writes providers rows (pacing and circuits need them), with
// a circuit tripping after minAttempts attempts at half transient, for
// cooldown.
func (b *testBundle) addProviders(t *testing.T, minAttempts int, cooldown time.Duration, names ...string) {
	t.Helper()
	for _, n := range names {
		ch, _, _ := strings.Cut(n, "/")
		_, err := b.pool.Exec(context.Background(), `
			WITH p AS (
				INSERT INTO herald.providers (name, channel, driver, circuit_min_attempts, circuit_cooldown)
				VALUES ($1, $2, 'discard', $3, make_interval(secs => $4)) RETURNING name
			), pacing AS (INSERT INTO herald.provider_pacing (provider) SELECT name FROM p)
			INSERT INTO herald.provider_circuits (provider) SELECT name FROM p`,
			n, ch, minAttempts, cooldown.Seconds())
		require.NoError(t, err)
	}
}

// countingDeliverer delivers with outcome and counts its calls.
func countingDeliverer(n *atomic.Int64, class channel.Class) channel.Deliverer {
	return channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		n.Add(1)
		if class == channel.Transient {
			return channel.Outcome{Class: channel.Transient, Classification: "http_503", Message: "unavailable"}
		}
		return channel.Outcome{Class: class}
	})
}

func TestDispatcher_ProviderPickedPerRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 20, 30*time.Second, "sms/ke", "sms/uk")
	var ke, uk atomic.Int64
	b.start(t, &Config{Plane: &Plane{
		Providers: map[string]*Provider{
			"sms/ke": {Name: "sms/ke", Channel: "sms", Deliverer: countingDeliverer(&ke, channel.Delivered)},
			"sms/uk": {Name: "sms/uk", Channel: "sms", Deliverer: countingDeliverer(&uk, channel.Delivered)},
		},
		PickFunc: func(in routing.PickInput) (routing.Decision, error) {
			if strings.HasPrefix(in.Destination, "+254") {
				return routing.Decision{Provider: "sms/ke"}, nil
			}
			return routing.Decision{Provider: "sms/uk"}, nil
		},
	}})
	keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"}, routeSpec{channel: "sms", ref: "+447911123456"})
	require.Equal(t, []string{"sms/ke"}, b.waitStatus(t, keys[0], "published").Providers)
	require.Equal(t, []string{"sms/uk"}, b.waitStatus(t, keys[1], "published").Providers)
	require.EqualValues(t, 1, ke.Load())
	require.EqualValues(t, 1, uk.Load())
}

func TestDispatcher_NoRuleIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 20, 30*time.Second, "sms/ke")
	var ke atomic.Int64
	b.start(t, &Config{Plane: &Plane{
		Providers: map[string]*Provider{"sms/ke": {Name: "sms/ke", Channel: "sms", Deliverer: countingDeliverer(&ke, channel.Delivered)}},
		PickFunc: func(in routing.PickInput) (routing.Decision, error) {
			return routing.Decision{}, &routing.NoRouteError{Channel: in.Channel, Destination: channel.MaskAddress(in.Destination)}
		},
	}})
	keys := b.insert(t, routeSpec{channel: "sms", ref: "+447911123456"})
	r := b.waitStatus(t, keys[0], "dead_letter")
	require.Equal(t, ClassNoRoute, r.LastErrorClassification)
	dl := b.deadLetter(t, keys[0])
	require.Equal(t, ClassNoRoute, dl.FailureClassification)
	require.Equal(t, (&routing.NoRouteError{}).Hint(), dl.RecoveryHint)
	require.Zero(t, ke.Load(), "a route without a route is never delivered")
}

func TestDispatcher_TransientFailsOverAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1000, 30*time.Second, "sms/main", "sms/backup")
	var main, backup atomic.Int64
	b.start(t, &Config{
		// A backoff of an hour: only an immediate failover publishes in time.
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
	keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	r := b.waitStatus(t, keys[0], "published")
	require.Equal(t, []string{"sms/main", "sms/backup"}, r.Providers, "the attempt history names both providers")
	require.EqualValues(t, 2, r.AttemptCount)
	require.EqualValues(t, 1, main.Load())
	require.EqualValues(t, 1, backup.Load())
}

func TestDispatcher_AllProvidersFailing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1000, 30*time.Second, "sms/main", "sms/backup")
	var main, backup atomic.Int64
	b.start(t, &Config{
		Channels: map[string]ChannelConfig{"sms": {
			Deliverer:   countingDeliverer(new(atomic.Int64), channel.Delivered),
			MaxAttempts: 3,
			Backoff:     BackoffConfig{Base: 10 * time.Millisecond, Cap: 10 * time.Millisecond},
		}},
		Plane: &Plane{
			Providers: map[string]*Provider{
				"sms/main":   {Name: "sms/main", Channel: "sms", Deliverer: countingDeliverer(&main, channel.Transient)},
				"sms/backup": {Name: "sms/backup", Channel: "sms", Deliverer: countingDeliverer(&backup, channel.Transient)},
			},
			PickFunc: failoverPick("sms/main", "sms/backup"),
		},
	})
	keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	r := b.waitStatus(t, keys[0], "dead_letter")
	require.Equal(t, []string{"sms/main", "sms/backup", "sms/main"}, r.Providers)
	require.Equal(t, "sms/main", b.deadLetter(t, keys[0]).Provider)
}

func TestCircuit_OpensFailsOverCloses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 4, 2*time.Second, "sms/main", "sms/backup")
	var main, backup atomic.Int64
	var mainDown atomic.Bool
	mainDown.Store(true)
	mainDeliverer := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		main.Add(1)
		if mainDown.Load() {
			return channel.Outcome{Class: channel.Transient, Classification: "http_503"}
		}
		return channel.Outcome{Class: channel.Delivered}
	})
	b.start(t, &Config{Plane: &Plane{
		Providers: map[string]*Provider{
			"sms/main":   {Name: "sms/main", Channel: "sms", Deliverer: mainDeliverer},
			"sms/backup": {Name: "sms/backup", Channel: "sms", Deliverer: countingDeliverer(&backup, channel.Delivered)},
		},
		PickFunc: failoverPick("sms/main", "sms/backup"),
	}})
	circuit := func() string {
		var s string
		require.NoError(t, b.pool.QueryRow(context.Background(),
			`SELECT state FROM herald.provider_circuits WHERE provider = 'sms/main'`).Scan(&s))
		return s
	}
	// Failures in the bucket of the circuit's row creation do not count:
	// wait for the next two-second bucket, then fail enough routes.
	time.Sleep(2100 * time.Millisecond)
	for i := 0; i < 6; i++ {
		keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
		b.waitStatus(t, keys[0], "published")
	}
	require.Eventually(t, func() bool { return circuit() == "open" }, 10*time.Second, 20*time.Millisecond)
	opened := main.Load()
	// While open, routes go straight to the backup: main is not tried.
	keys := b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	require.Eventually(t, func() bool {
		return b.route(t, keys[0]).Status == "published"
	}, 10*time.Second, 10*time.Millisecond)
	if circuit() == "open" {
		require.Equal(t, []string{"sms/backup"}, b.route(t, keys[0]).Providers)
		require.Equal(t, opened, main.Load())
	}
	mainDown.Store(false)
	require.Eventually(t, func() bool { return circuit() == "closed" }, 10*time.Second, 20*time.Millisecond)
	var events []string
	rows, err := b.pool.Query(context.Background(),
		`SELECT event FROM herald.provider_events WHERE provider = 'sms/main' ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var e string
		require.NoError(t, rows.Scan(&e))
		events = append(events, e)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"circuit_opened", "circuit_closed"}, events[:2])
	// Closed again, main takes routes again.
	keys = b.insert(t, routeSpec{channel: "sms", ref: "+254712345678"})
	require.Equal(t, []string{"sms/main"}, b.waitStatus(t, keys[0], "published").Providers)
	// Every process adds its counts to the shared health a second later.
	require.Eventually(t, func() bool {
		var delivered, transient int64
		err := b.pool.QueryRow(context.Background(),
			`SELECT sum(delivered), sum(transient) FROM herald.provider_health WHERE provider = 'sms/main'`).Scan(&delivered, &transient)
		return err == nil && transient >= 4 && delivered >= 1
	}, 5*time.Second, 50*time.Millisecond)
}

// smsServer is a loopback SMS provider that records when each message
// arrived and answers with an id.
type smsServer struct {
	*httptest.Server
	mu    sync.Mutex
	times []time.Time
}

func newSMSServer(t *testing.T) *smsServer {
	t.Helper()
	s := &smsServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		n := len(s.times)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": n})
	}))
	t.Cleanup(s.Close)
	return s
}

// maxPerSecond is the most messages s received in any one-second window.
func (s *smsServer) maxPerSecond() (most, total int) {
	s.mu.Lock()
	times := slices.Clone(s.times)
	s.mu.Unlock()
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	j := 0
	for i := range times {
		for times[i].Sub(times[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	return most, len(times)
}

func (s *smsServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

func smsProvider(t *testing.T, name, url string, capPerSecond int) *Provider {
	t.Helper()
	d, err := sms.New(sms.Config{URL: url, APIKey: "key"})
	require.NoError(t, err)
	return &Provider{Name: name, Channel: "sms", Deliverer: d, CapPerSecond: capPerSecond, Concurrency: 8}
}

// waitPublished waits until n routes are published.
func (b *testBundle) waitPublished(t *testing.T, n int) {
	t.Helper()
	var got int
	ok := assert.Eventually(t, func() bool {
		err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM herald.routes WHERE status = 'published'`).Scan(&got)
		return err == nil && got == n
	}, 30*time.Second, 20*time.Millisecond, "published: %d of %d", got, n)
	if !ok {
		rows, _ := b.pool.Query(context.Background(), `SELECT status || ' ' || last_error_classification || ' ' || count(*) FROM herald.routes GROUP BY status, last_error_classification`)
		for rows.Next() {
			var line string
			_ = rows.Scan(&line)
			t.Log(line)
		}
		rows.Close()
		t.FailNow()
	}
}

// countRouteWrites makes the test database count every row version
// written to herald.routes per route (a trigger of the test's own), and
// returns a function that reads the mean count of the routes whose
// providers are want.
func (b *testBundle) countRouteWrites(t *testing.T) func(want string) float64 {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		CREATE TABLE public.route_writes (notification_id text, route_id text, n int, PRIMARY KEY (notification_id, route_id));
		CREATE FUNCTION public.count_route_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.route_writes VALUES (NEW.notification_id, NEW.route_id, 1)
			ON CONFLICT (notification_id, route_id) DO UPDATE SET n = route_writes.n + 1;
			RETURN NULL;
		END $$;
		CREATE TRIGGER count_route_write AFTER INSERT OR UPDATE ON herald.routes
			FOR EACH ROW EXECUTE FUNCTION public.count_route_write();`)
	require.NoError(t, err)
	return func(want string) float64 {
		var mean float64
		require.NoError(t, b.pool.QueryRow(context.Background(), `
			SELECT avg(w.n)::float8 FROM public.route_writes w
			JOIN herald.routes r USING (notification_id, route_id)
			WHERE r.providers = ARRAY[$1::text]`, want).Scan(&mean))
		return mean
	}
}

func TestCap_HoldsAcrossDispatchers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addProviders(t, 1000, 30*time.Second, "sms/capped", "sms/free")
	_, err := b.pool.Exec(context.Background(), `UPDATE herald.providers SET cap_per_second = 40 WHERE name = 'sms/capped'`)
	require.NoError(t, err)
	capped, free := newSMSServer(t), newSMSServer(t)
	plane := func() *Plane {
		return &Plane{
			Providers: map[string]*Provider{
				"sms/capped": smsProvider(t, "sms/capped", capped.URL, 40),
				"sms/free":   smsProvider(t, "sms/free", free.URL, 0),
			},
			PickFunc: func(in routing.PickInput) (routing.Decision, error) {
				if strings.HasPrefix(in.Destination, "+254") {
					return routing.Decision{Provider: "sms/capped"}, nil
				}
				return routing.Decision{Provider: "sms/free"}, nil
			},
		}
	}
	writes := b.countRouteWrites(t)
	for range 3 {
		b.start(t, &Config{Plane: plane()})
	}
	// 120 capped routes (three seconds of cap) beside 300 uncapped.
	var specs []routeSpec
	for range 120 {
		specs = append(specs, routeSpec{channel: "sms", ref: "+254712345678"})
	}
	for range 300 {
		specs = append(specs, routeSpec{channel: "sms", ref: "+447911123456"})
	}
	began := time.Now()
	b.insert(t, specs...)
	require.Eventually(t, func() bool { return free.count() == 300 }, 20*time.Second, 10*time.Millisecond)
	freeDone := time.Since(began)
	require.Less(t, capped.count(), 120, "the uncapped provider's routes finished while the capped backlog still waited")
	b.waitPublished(t, 420)
	most, total := capped.maxPerSecond()
	require.Equal(t, 120, total)
	t.Logf("capped provider: at most %d messages in any one second (cap 40)", most)
	require.LessOrEqual(t, most, 40, "the capped provider received more than its cap in one second")
	freeRows, cappedRows := writes("sms/free"), writes("sms/capped")
	t.Logf("uncapped: %.2f rows written per route; capped: %.2f; uncapped 300 done in %s beside the capped backlog",
		freeRows, cappedRows, freeDone.Round(time.Millisecond))
	require.LessOrEqual(t, cappedRows, freeRows+1, "waiting for the cap costs at most one write per route")
	var throttled int64
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT coalesce(sum(throttled), 0) FROM herald.provider_health WHERE provider = 'sms/capped'`).Scan(&throttled))
	require.Positive(t, throttled)
}
