package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/httpservetest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestServeCmd_BoundsEveryListener(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	admin, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	login, _ := pgtemp.Login(t, admin, "api", "herald_api")
	apiURL, err := url.Parse(dbURL)
	require.NoError(t, err)
	apiURL.User = url.User(login)

	m, _, _ := testMain(map[string]string{
		"DATABASE_URL":                   dbURL,
		"HERALD_CHANNELS_WEBHOOK_DRIVER": "discard",
		"HERALD_API_LISTEN":              "127.0.0.1:0",
		"HERALD_API_DATABASE_URL":        apiURL.String(),
		"HERALD_API_READ_TIMEOUT":        "300ms",
		"HERALD_API_WRITE_TIMEOUT":       "1m",
		"HERALD_API_IDLE_TIMEOUT":        "300ms",
		"HERALD_API_AUTH_FAILURE_BURST":  "3",
		"HERALD_API_AUTH_FAILURE_RATE":   "0.01",
		"HERALD_RECEIPTS_LISTEN":         "127.0.0.1:0",
		"HERALD_RECEIPTS_READ_TIMEOUT":   "300ms",
		"HERALD_RECEIPTS_WRITE_TIMEOUT":  "1m",
		"HERALD_RECEIPTS_IDLE_TIMEOUT":   "300ms",
		"HERALD_METRICS_ADDR":            "127.0.0.1:0",
		"HERALD_METRICS_READ_TIMEOUT":    "300ms",
		"HERALD_METRICS_IDLE_TIMEOUT":    "300ms",
		"HERALD_CONSOLE_LISTEN":          "127.0.0.1:0",
		"HERALD_CONSOLE_READ_TIMEOUT":    "300ms",
		"HERALD_CONSOLE_WRITE_TIMEOUT":   "1m",
		"HERALD_CONSOLE_IDLE_TIMEOUT":    "300ms",
	})
	logs := &lockedBuffer{}
	m.Stderr = logs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "-log-format", "json", "-no-maintenance"}); m.Close() }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	addrs := map[string]string{}
	require.Eventually(t, func() bool {
		for l := range strings.Lines(logs.String()) {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(l), &rec) == nil && strings.HasSuffix(rec.Msg, " listening") {
				addrs[strings.TrimSuffix(rec.Msg, " listening")] = rec.Addr
			}
		}
		return len(addrs) == 4
	}, 30*time.Second, 20*time.Millisecond, "logs: %s", logs)

	for _, c := range []struct {
		name, addr, slow, idle string
		slowStatus             int
	}{
		{"API", addrs["api"],
			"POST /v1/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer hk_someone\r\nContent-Length: 1000\r\nX-Request-Id: slow-api\r\n\r\n{\"notif",
			"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusRequestTimeout},
		{"Receipts", addrs["receipts endpoint"], // no provider sends receipts: 404 without reading the body
			"POST /receipts/sms/acme HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"id\"",
			"POST /receipts/sms/acme HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", http.StatusNotFound},
		{"Metrics", addrs["metrics endpoint"],
			"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"id\"",
			"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusMethodNotAllowed},
		{"Console", addrs["console"], // the sign-in form never arrives: no login given
			"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nuser=",
			"GET /login HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
	} {
		t.Run(c.name+"SlowBody", func(t *testing.T) {
			conn, err := net.Dial("tcp", c.addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = fmt.Fprint(conn, c.slow)
			require.NoError(t, err)
			require.Equal(t, c.slowStatus, httpservetest.UntilClosed(t, conn), "answered, then closed without the rest of the body")
		})
		t.Run(c.name+"IdleKeepAlive", func(t *testing.T) {
			conn, err := net.Dial("tcp", c.addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = fmt.Fprint(conn, c.idle)
			require.NoError(t, err)
			require.NotZero(t, httpservetest.UntilClosed(t, conn), "answered, then closed once idle")
		})
	}

	// Unknown keys from one address: 401 for the burst, then 429.
	for i := range 6 {
		req, err := http.NewRequest("GET", "http://"+addrs["api"]+"/v1/notifications", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", fmt.Sprintf("Bearer hk_unknown%d", i))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if i < 3 {
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
	}

	// The slow API client is a warning about a slow client, not an error.
	var slow map[string]any
	for l := range strings.Lines(logs.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		require.NotEqual(t, "ERROR", rec["level"], "%s", l)
		if rec["request_id"] == "slow-api" {
			slow = rec
		}
	}
	require.NotNil(t, slow, "%s", logs)
	require.Equal(t, "WARN", slow["level"])
	require.Contains(t, slow["err"], "client too slow")
}
