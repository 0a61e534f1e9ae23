package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestDocument_IsOpenAPI31MatchingRouter(t *testing.T) {
	t.Parallel()
	ok, errs := openAPIValidator(t).ValidateDocument()
	require.True(t, ok, "openapi.json: %s", describe(errs))
	require.Contains(t, string(OpenAPI()), `"openapi": "3.1.0"`)

	var documented []string
	for path, ops := range readDoc(t).Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(documented)
	patterns := slices.Sorted(slices.Values(endpointPatterns()))
	require.Equal(t, documented, patterns, "every route is documented, every documented operation routed")
	// And the router really has them: each pattern routes to itself.
	s, err := New(&Config{Pool: &pgxpool.Pool{}})
	require.NoError(t, err)
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		path = strings.NewReplacer("{id}", "n1", "{user_id}", "u1").Replace(path)
		req, err := http.NewRequest(method, path, nil)
		require.NoError(t, err)
		_, got := s.mux.Handler(req)
		require.Equal(t, p, got)
	}
}

func TestDocument_ProblemCodesAreHeraldtypes(t *testing.T) {
	t.Parallel()
	var problem struct {
		Properties struct {
			Code struct {
				Enum []heraldtype.Code `json:"enum"`
			} `json:"code"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(readDoc(t).Components.Schemas["Problem"], &problem))
	require.Equal(t, Codes(), problem.Properties.Code.Enum)
}

func TestServer_DatabaseDownIs503(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// A pool on a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := b.apiPool.Config().Copy()
	host, port, _ := net.SplitHostPort(addr)
	cfg.ConnConfig.Host = host
	fmt.Sscan(port, &cfg.ConnConfig.Port)
	cfg.ConnConfig.ConnectTimeout = time.Second
	dead, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(dead.Close)
	b.server, err = New(&Config{Pool: dead, ReadyFunc: func(context.Context) error { return nil }})
	require.NoError(t, err)
	b.http.Config.Handler = b.server.Handler()

	for _, e := range endpoints() {
		var body any
		switch e[0] + " " + e[1] {
		case "POST /v1/notifications":
			body = intent("shop", "d")
		case "POST /v1/notifications/batch":
			body = map[string]any{"intents": []any{intent("shop", "d")}}
		case "PUT /v1/recipients/u1":
			body = map[string]any{"email": "ann@example.com"}
		}
		a := b.do(t, e[0], e[1], body, b.shopKey)
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%s %s: %s", e[0], e[1], a.body)
		require.Equal(t, CodeUnavailable, a.problem(t).Code)
		require.Equal(t, "2", a.header.Get("Retry-After"))
	}
	// Bad input is not looked at before the key authenticated, which needs
	// the database: still 503 (never 500), and still 4xx once it is back.
	a := b.do(t, "POST", "/v1/notifications", "{", b.shopKey)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	for _, path := range []string{"/healthz", "/readyz"} {
		a := b.do(t, "GET", path, nil, "")
		require.Equal(t, http.StatusServiceUnavailable, a.status)
		var h Health
		a.json(t, &h)
		require.False(t, h.Database)
	}
}

func TestServer_ServesHealthReadyAndDocument(t *testing.T) {
	t.Parallel()
	notReady := errors.New("migrations pending: run herald migrate up")
	var ready error
	var mu sync.Mutex
	b := setup(t, func(c *Config) {
		c.ReadyFunc = func(context.Context) error { mu.Lock(); defer mu.Unlock(); return ready }
	})
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/healthz", nil, "").status)
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/readyz", nil, "").status)
	mu.Lock()
	ready = notReady
	mu.Unlock()
	a := b.do(t, "GET", "/readyz", nil, "")
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Contains(t, string(a.body), "migrations pending")
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/healthz", nil, "").status)
	a = b.do(t, "GET", "/openapi.json", nil, "")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, OpenAPI(), a.body)
}

func TestServer_Unknown404WrongMethod405(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.do(t, "GET", "/v2/things", nil, b.shopKey)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, CodeNotFound, a.problem(t).Code)
	a = b.do(t, "DELETE", "/v1/notifications", nil, b.shopKey)
	require.Equal(t, http.StatusMethodNotAllowed, a.status)
	require.Equal(t, CodeMethodNotAllowed, a.problem(t).Code)
	require.Equal(t, "GET, POST", a.header.Get("Allow"))
}

func TestServer_LogsAndCountsRequests(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	b := setup(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
	a := b.do(t, "POST", "/v1/notifications", intent("shop", "log"), b.shopKey, "X-Request-Id: req-1")
	require.Equal(t, http.StatusCreated, a.status)
	b.do(t, "GET", "/v1/notifications/nope", nil, b.shopKey)
	var line map[string]any
	for l := range strings.Lines(buf.String()) {
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		if line["request_id"] == "req-1" {
			break
		}
	}
	require.Equal(t, "req-1", line["request_id"])
	require.Equal(t, "shop", line["producer"])
	require.Equal(t, float64(201), line["status"])
	require.Equal(t, "POST /v1/notifications", line["endpoint"])
	require.Contains(t, line, "duration_ms")
	require.NotContains(t, buf.String(), "+14155550123", "no address in the logs")
	require.Equal(t, 1.0, testutil.ToFloat64(b.server.metrics.APIRequests.WithLabelValues("POST /v1/notifications", "201")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.server.metrics.APIRequests.WithLabelValues("GET /v1/notifications/{id}", "404")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.server.metrics.IntentsAccepted.WithLabelValues("shop", "accepted")))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestServe_FinishesInFlightOnStop(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := Listen(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- b.server.Serve(ctx, ln) }()

	// Hold the submit in the database: a lock its insert waits for.
	lock, err := b.admin.Begin(ctx)
	require.NoError(t, err)
	_, err = lock.Exec(ctx, `LOCK TABLE herald.records IN EXCLUSIVE MODE`)
	require.NoError(t, err)
	b.http.URL = "http://" + ln.Addr().String()
	got := make(chan answer, 1)
	go func() { got <- b.do(t, "POST", "/v1/notifications", intent("shop", "inflight"), b.shopKey) }()
	require.Eventually(t, func() bool {
		// pg_locks is the cluster's, and the test databases, made from one
		// template, share herald.records' oid: this database's only.
		return b.count(t, `SELECT count(*) FROM pg_locks WHERE relation = 'herald.records'::regclass AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) > 0
	}, 10*time.Second, 10*time.Millisecond)
	cancel() // stop serving; the request is in flight
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	}, 10*time.Second, 10*time.Millisecond, "no new connections once stopping")
	require.NoError(t, lock.Rollback(context.Background()))
	a := <-got
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.NoError(t, <-served)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records`))
}
