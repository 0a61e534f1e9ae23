package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/schema"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

type testBundle struct {
	pool    *pgxpool.Pool
	metrics *metrics.Metrics
	server  *httptest.Server
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtemp.NewPool(t)
	reg := metrics.NewRegistry()
	m := metrics.New(reg)
	reg.MustRegister(metrics.NewBacklogCollector(pool, &metrics.BacklogCollectorConfig{
		Channels: []string{"email", "sms", "webhook"},
	}))
	h, err := metrics.NewHandler(&metrics.HandlerConfig{Pool: pool, Gatherer: reg})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testBundle{pool: pool, metrics: m, server: srv}
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, url+"/metrics")
	require.Equal(t, http.StatusOK, code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	return fams
}

// gauge returns the value of family's series whose channel label is channel.
func gauge(t *testing.T, fam *dto.MetricFamily, channel string) float64 {
	t.Helper()
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "channel" && l.GetValue() == channel {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("%s has no series for channel %q", fam.GetName(), channel)
	return 0
}

// seedRoutes inserts one notification with a route per (channel, due) pair,
// all pending. Test-only SQL: the intake's insert does this for real.
func seedRoutes(t *testing.T, pool *pgxpool.Pool, due map[string][]time.Time) {
	t.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
			payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at,
			idempotency_expires_at)
		VALUES ('n1', 'order.shipped', 'shop', 'users', '{}', 'k1', 'fp', now(), now(), now(), now() + interval '1 day')`)
	require.NoError(t, err)
	i := 0
	for ch, times := range due {
		for _, at := range times {
			i++
			_, err := pool.Exec(ctx, `
				INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
					max_attempts, next_attempt_at, created_at, updated_at)
				VALUES ('n1', $1::text, $2::text, 'user:u1', 'pending', 0, $3::timestamptz, now(), now())`,
				"r"+string(rune('a'+i)), ch, at)
			require.NoError(t, err)
		}
	}
}

func TestHandler_ExposesEveryFamily(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	seedRoutes(t, b.pool, map[string][]time.Time{
		"email": {now.Add(-90 * time.Second), now.Add(-10 * time.Second), now.Add(time.Hour)},
		"sms":   {now.Add(time.Hour)},
	})
	b.metrics.Intent("shop", "accepted")
	b.metrics.Attempt("email", "delivered")
	b.metrics.Published("email", 120*time.Millisecond)
	b.metrics.DeadLetter("sms", "permanent")
	b.metrics.Maintenance("finished_retention", 3, nil)
	b.metrics.InFlight("email", 3)
	b.metrics.InFlight("email", -1)

	fams := scrape(t, b.server.URL)
	for _, name := range []string{
		"herald_intents_total",
		"herald_route_attempts_total",
		"herald_delivery_latency_seconds",
		"herald_dead_letters_total",
		"herald_backlog_routes",
		"herald_lag_seconds",
		"herald_backlog_up",
		"herald_maintenance_runs_total",
		"herald_maintenance_rows_total",
		"herald_routes_in_flight",
		"go_goroutines",
	} {
		require.Contains(t, fams, name)
	}
	require.Equal(t, dto.MetricType_HISTOGRAM, fams["herald_delivery_latency_seconds"].GetType())
	require.Equal(t, 1.0, fams["herald_backlog_up"].GetMetric()[0].GetGauge().GetValue())

	backlog, lag := fams["herald_backlog_routes"], fams["herald_lag_seconds"]
	require.Equal(t, 3.0, gauge(t, backlog, "email"))
	require.Equal(t, 1.0, gauge(t, backlog, "sms"))
	require.Equal(t, 0.0, gauge(t, backlog, "webhook"), "configured channels report zero")
	require.InDelta(t, 90, gauge(t, lag, "email"), 30)
	require.Equal(t, 0.0, gauge(t, lag, "sms"), "nothing overdue: no lag")
}

func TestBacklogCollector_DownWhenQueryFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool, err := pgxpool.New(context.Background(), pgtemp.NewDatabase(t))
	require.NoError(t, err)
	pool.Close() // every query now fails at once
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewBacklogCollector(pool, nil))
	h, err := metrics.NewHandler(&metrics.HandlerConfig{Pool: b.pool, Gatherer: reg})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	fams := scrape(t, srv.URL)
	require.Equal(t, 0.0, fams["herald_backlog_up"].GetMetric()[0].GetGauge().GetValue())
	require.NotContains(t, fams, "herald_backlog_routes")
}

func TestHandler_HealthyOnMigratedDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := get(t, b.server.URL+path)
		require.Equal(t, http.StatusOK, code, path)
		var chk metrics.Check
		require.NoError(t, json.Unmarshal(body, &chk))
		require.True(t, chk.OK)
		require.True(t, chk.Database)
	}
}

func TestHandler_ReadyzWaitsForMigration(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := schema.NewMigrator(b.pool, nil).DownOne(context.Background())
	require.NoError(t, err)

	code, body := get(t, b.server.URL+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	var chk metrics.Check
	require.NoError(t, json.Unmarshal(body, &chk))
	require.False(t, chk.OK)
	require.True(t, chk.Database)
	require.NotNil(t, chk.SchemaCurrent)
	require.False(t, *chk.SchemaCurrent)
	require.Contains(t, chk.Error, "migrations pending")

	code, _ = get(t, b.server.URL+"/healthz")
	require.Equal(t, http.StatusOK, code, "the process is alive: healthz stays OK")
}

func TestHandler_HealthzNeedsDatabase(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: bind one and close it.
	ln := httptest.NewServer(http.NotFoundHandler())
	addr := ln.Listener.Addr().String()
	ln.Close()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@"+addr+"/none?sslmode=disable&connect_timeout=1")
	require.NoError(t, err)
	defer pool.Close()
	h, err := metrics.NewHandler(&metrics.HandlerConfig{Pool: pool, Gatherer: metrics.NewRegistry(), CheckTimeout: time.Second})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := get(t, srv.URL+path)
		require.Equal(t, http.StatusServiceUnavailable, code, path)
		var chk metrics.Check
		require.NoError(t, json.Unmarshal(body, &chk))
		require.False(t, chk.Database)
		require.Contains(t, chk.Error, "database")
	}
}

func TestNewHandler_NamesMissingField(t *testing.T) {
	t.Parallel()
	_, err := metrics.NewHandler(&metrics.HandlerConfig{Gatherer: metrics.NewRegistry()})
	require.ErrorContains(t, err, "Pool")
}

func TestHandler_ReadyzReportsStall(t *testing.T) {
	t.Parallel()
	pool := pgtemp.NewPool(t)
	var stalled atomic.Pointer[error]
	h, err := metrics.NewHandler(&metrics.HandlerConfig{Pool: pool, Gatherer: metrics.NewRegistry(),
		ProgressFunc: func() error {
			if p := stalled.Load(); p != nil {
				return *p
			}
			return nil
		}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	readyz := func() (int, metrics.Check) {
		code, body := get(t, srv.URL+"/readyz")
		var chk metrics.Check
		require.NoError(t, json.Unmarshal(body, &chk))
		return code, chk
	}

	code, chk := readyz()
	require.Equal(t, http.StatusOK, code)
	require.NotNil(t, chk.Dispatching)
	require.True(t, *chk.Dispatching)

	why := errors.New(`dispatcher is not making progress: channel loop "sms": no success for 12s`)
	stalled.Store(&why)
	code, chk = readyz()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.False(t, chk.OK)
	require.True(t, chk.Database, "the database answers: only the dispatcher is stuck")
	require.False(t, *chk.Dispatching)
	require.Equal(t, why.Error(), chk.Error)
	code, _ = get(t, srv.URL+"/healthz")
	require.Equal(t, http.StatusOK, code, "alive: a restart would not release someone else's lock")

	stalled.Store(nil)
	code, chk = readyz()
	require.Equal(t, http.StatusOK, code)
	require.True(t, *chk.Dispatching)
}
