package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/harness/httpservetest"
	"github.com/heraldhq/herald/internal/httpserve"
)

// lockedLog is a log sink safe to read while the engine writes.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func TestListeners_CutOffSlowAndIdle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.applyRouting(t, `
providers:
  - name: sms/acme
    driver: sms-http
    sms_http: {url: "http://127.0.0.1:1/send", api_key: {env: ACME_KEY}}
    receipts: {token: {env: ACME_RECEIPTS}}
rules:
  sms:
    - name: all
      providers: [sms/acme]
`)
	short := httpserve.Config{ReadTimeout: 300 * time.Millisecond, WriteTimeout: time.Minute, IdleTimeout: 300 * time.Millisecond}
	logs := &lockedLog{}
	e, err := New(b.pool, &Config{
		Logger:         slog.New(slog.NewJSONHandler(logs, nil)),
		GetenvFunc:     env(map[string]string{"ACME_KEY": "k", "ACME_RECEIPTS": "r3ceipts"}),
		ReceiptsAddr:   "127.0.0.1:0",
		ReceiptsServer: short,
		Registry:       prometheus.NewRegistry(),
		MetricsAddr:    "127.0.0.1:0",
		MetricsServer:  short,
		Dispatch: dispatch.Config{
			Channels: map[string]dispatch.ChannelConfig{"webhook": {Deliverer: &closingDeliverer{}}},
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	require.Eventually(t, func() bool { // the engine has read the provider's receipts settings
		resp, err := http.Post("http://"+e.ReceiptsAddr().String()+"/receipts/sms/acme?token=r3ceipts", "application/json", nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)

	for _, c := range []struct {
		name, addr, slow, idle string
		slowStatus             int
	}{
		{"Receipts", e.ReceiptsAddr().String(),
			"POST /receipts/sms/acme HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer r3ceipts\r\nContent-Length: 1000\r\n\r\n{\"id\"",
			"POST /receipts/nobody HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", http.StatusRequestTimeout},
		// The metrics endpoint reads no body: it answers, and the rest of the body is
		// waited for only until the read timeout.
		{"Metrics", e.MetricsAddr().String(),
			"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"id\"",
			"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusMethodNotAllowed},
	} {
		t.Run(c.name+"SlowBody", func(t *testing.T) {
			conn, err := net.Dial("tcp", c.addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = fmt.Fprint(conn, c.slow)
			require.NoError(t, err)
			require.Equal(t, c.slowStatus, httpservetest.UntilClosed(t, conn))
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
	var slow map[string]any
	for l := range strings.Lines(logs.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		require.NotEqual(t, "ERROR", m["level"], "%s", l)
		if strings.HasPrefix(fmt.Sprint(m["msg"]), "client too slow") {
			slow = m
		}
	}
	require.NotNil(t, slow, "the slow receipt is logged as a slow client: %s", logs)
	require.Equal(t, "WARN", slow["level"])
	require.Equal(t, "sms/acme", slow["provider"])
}
