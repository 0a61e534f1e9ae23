package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// serveOnLoopback serves b's server with its own http.Server (Serve, with
// the Config's timeouts) on 127.0.0.1, and points b's client at it.
func serveOnLoopback(t *testing.T, b *testBundle) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := Listen(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- b.server.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	b.http.URL = "http://" + ln.Addr().String()
	return ln.Addr().String()
}

// trickle is a request body that sends its first bytes, then nothing
// until the test ends.
type trickle struct {
	first []byte
	stop  <-chan struct{}
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.first) > 0 {
		n := copy(p, r.first)
		r.first = r.first[n:]
		return n, nil
	}
	<-r.stop
	return 0, io.EOF
}

func (r *trickle) Close() error { return nil }

func TestServer_SlowBodyIs408(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	b := setup(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.ReadTimeout, c.WriteTimeout = 300*time.Millisecond, time.Minute
	})
	addr := serveOnLoopback(t, b)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })

	// A raw client: headers, a few bytes of the body, then nothing.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000\r\nX-Request-Id: slow-1\r\n\r\n{\"notif", b.shopKey)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute))) // a bound on a broken test, not an assertion
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	_, _ = io.Copy(io.Discard, resp.Body)
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the server closes the slow client's connection")

	// Through the document-checking client: each endpoint with a body.
	for _, e := range [][2]string{
		{"POST", "/v1/notifications"}, {"POST", "/v1/notifications/batch"},
		{"POST", "/v1/notifications/n1/cancel"}, {"PUT", "/v1/recipients/u1"},
		{"PUT", "/v1/callback-subscription"},
	} {
		req, err := http.NewRequest(e[0], b.http.URL+e[1], &trickle{first: []byte(`{"a`), stop: stop})
		require.NoError(t, err)
		req.ContentLength = 1000
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+b.shopKey)
		resp, err := b.client.Do(req)
		if err != nil { // the connection was closed before the answer could be read: also a slow client cut off
			t.Logf("%s %s: %v", e[0], e[1], err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s %s: %s", e[0], e[1], body)
		var p Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, CodeRequestTimeout, p.Code)
	}

	// Logged as what it is, counted under its status.
	var line map[string]any
	for l := range strings.Lines(logs.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		require.NotEqual(t, "ERROR", m["level"], "a slow client is no error of the server's: %s", l)
		if m["request_id"] == "slow-1" {
			line = m
		}
	}
	require.NotNil(t, line, "%s", logs.String())
	require.Equal(t, "WARN", line["level"])
	require.Equal(t, float64(http.StatusRequestTimeout), line["status"])
	require.Contains(t, line["err"], "client too slow")
	require.NotContains(t, logs.String(), "database")
	counted := testutil.ToFloat64(b.server.metrics.APIRequests.WithLabelValues("POST /v1/notifications", "408"))
	require.GreaterOrEqual(t, counted, 1.0)
	require.Zero(t, testutil.ToFloat64(b.server.metrics.APIRequests.WithLabelValues("POST /v1/notifications", "503")))
}

func TestServer_ClosesIdleKeepAlive(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	addr := serveOnLoopback(t, b)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute))) // a bound on a broken test
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, _ = io.Copy(io.Discard, resp.Body)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle keep-alive connection is closed by the server")
}

func TestAuthGuard_FailuresGet429Early(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.AuthFailureRate, c.AuthFailureBurst = 0.01, 5 })
	for i := range 5 {
		a := b.do(t, "GET", "/v1/notifications", nil, NewSecret())
		require.Equal(t, http.StatusUnauthorized, a.status, "failure %d", i)
	}
	acquired := b.apiPool.Stat().AcquireCount()
	for _, e := range endpoints() {
		var body any
		if e[2] != "" {
			body = e[2]
		}
		for _, key := range []string{NewSecret(), b.shopKey} { // the address is held back, whatever the key
			a := b.do(t, e[0], e[1], body, key)
			require.Equal(t, http.StatusTooManyRequests, a.status, "%s %s: %s", e[0], e[1], a.body)
			require.Equal(t, CodeRateLimited, a.problem(t).Code)
			require.Equal(t, "100", a.header.Get("Retry-After"))
		}
	}
	require.Equal(t, acquired, b.apiPool.Stat().AcquireCount(), "no database work for a held-back address")

	// Another address is not held back: 127.0.0.2 reaches the same server.
	other := &http.Client{Transport: &checkingTransport{t: t, next: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext,
	}}}
	req, err := http.NewRequest("GET", b.http.URL+"/v1/notifications", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.shopKey)
	resp, err := other.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestRateLimit_UnknownKeysGetNoBucket(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.RateLimit, c.RateBurst, c.AuthFailureBurst = 0.5, 1, 1000 })
	for range 20 {
		require.Equal(t, http.StatusUnauthorized, b.do(t, "GET", "/v1/notifications", nil, NewSecret()).status)
	}
	b.server.limiter.mu.Lock()
	n := len(b.server.limiter.buckets)
	b.server.limiter.mu.Unlock()
	require.Zero(t, n, "a key nobody holds takes no memory")
}

func TestAuthGuard_HoldsFixedNumberOfAddresses(t *testing.T) {
	t.Parallel()
	g := newAuthGuard(1, 2, 100)
	now := time.Now()
	var last netip.Prefix
	for i := range 10000 {
		last = clientAddr(fmt.Sprintf("10.%d.%d.%d:4000", i>>16&255, i>>8&255, i&255))
		g.failed(last, now)
		g.failed(last, now)
	}
	require.Equal(t, 100, g.tracked())
	blocked, wait := g.blocked(last, now)
	require.True(t, blocked)
	require.Equal(t, time.Second, wait)
	blocked, _ = g.blocked(clientAddr("10.0.0.0:4000"), now)
	require.False(t, blocked, "the least recently failed address was forgotten")
	blocked, _ = g.blocked(last, now.Add(time.Second))
	require.False(t, blocked, "a token came back")

	// IPv6 addresses of one /64 share a bucket; IPv4-mapped ones are IPv4.
	require.Equal(t, clientAddr("[2001:db8::1]:1"), clientAddr("[2001:db8::ffff:2]:2"))
	require.NotEqual(t, clientAddr("[2001:db8::1]:1"), clientAddr("[2001:db8:0:1::1]:1"))
	require.Equal(t, clientAddr("1.2.3.4:5"), clientAddr("[::ffff:1.2.3.4]:5"))
}

func TestAuth_401BeforeValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.AuthFailureBurst = 1000 })
	huge := `{"intents":[` + strings.Repeat(" ", 300<<10) + `]}`
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/notifications", "{"},
		{"POST", "/v1/notifications", map[string]any{"notification_type": "x y"}},
		{"POST", "/v1/notifications", `{"notification_type":"` + strings.Repeat("a", 300<<10) + `"}`},
		{"POST", "/v1/notifications/batch", `{"intents":[]}`},
		{"POST", "/v1/notifications/batch", huge},
		{"GET", "/v1/notifications?limit=0", nil},
		{"GET", "/v1/notifications?after=not-a-cursor", nil},
		{"GET", "/v1/notifications/%00", nil},
		{"POST", "/v1/notifications/%00/cancel", `{"reason":`},
		{"POST", "/v1/notifications/n1/cancel", `{"why":"no"}`},
		{"PUT", "/v1/recipients/u1", `{"email":"not an address"}`},
		{"PUT", "/v1/recipients/%00", `{}`},
		{"DELETE", "/v1/recipients/%ff", nil},
	} {
		for _, key := range []string{"", NewSecret(), "hk_\xff"} {
			a := b.do(t, c.method, c.path, c.body, key)
			require.Equal(t, http.StatusUnauthorized, a.status, "%s %s key %q: %s", c.method, c.path, key, a.body)
			p := a.problem(t)
			require.Equal(t, CodeUnauthorized, p.Code)
			require.Empty(t, p.Errors)
			require.Empty(t, p.Field)
		}
	}
}

func TestServer_BadUTF8OrNULIs400(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	sms := `"notification_type":"a","channels":["sms"],"audience":{"sms":["+14155550123"]}`
	for _, c := range []struct {
		name, method, path string
		body               any
		headers            []string
		field              string
	}{
		{"NotificationIDNUL", "GET", "/v1/notifications/%00", nil, nil, "id"},
		{"NotificationIDInvalidUTF8", "GET", "/v1/notifications/%ff", nil, nil, "id"},
		{"NotificationIDNULInside", "GET", "/v1/notifications/n%00n", nil, nil, "id"},
		{"CancelIDNUL", "POST", "/v1/notifications/%00/cancel", nil, nil, "id"},
		{"CancelIDInvalidUTF8", "POST", "/v1/notifications/%c3%28/cancel", nil, nil, "id"},
		{"CancelReasonNUL", "POST", "/v1/notifications/n1/cancel", `{"reason":"a\u0000b"}`, nil, "reason"},
		{"DeleteUserIDNUL", "DELETE", "/v1/recipients/%00", nil, nil, "user_id"},
		{"DeleteUserIDInvalidUTF8", "DELETE", "/v1/recipients/%ff%fe", nil, nil, "user_id"},
		{"PutUserIDNUL", "PUT", "/v1/recipients/%00", `{}`, nil, "user_id"},
		{"PutUserIDInvalidUTF8", "PUT", "/v1/recipients/%ff", `{}`, nil, "user_id"},
		{"PutEmailNUL", "PUT", "/v1/recipients/u1", `{"email":"a\u0000@example.com"}`, nil, "email"},
		{"CursorNUL", "GET", "/v1/notifications?after=" + encodeCursor(time.Now(), "n\x00"), nil, nil, "after"},
		{"CursorInvalidUTF8", "GET", "/v1/notifications?after=" + encodeCursor(time.Now(), "\xff"), nil, nil, "after"},
		{"IdempotencyKeyHeaderInvalidUTF8", "POST", "/v1/notifications",
			`{` + sms + `,"content":{"sms":{"body":"x"}}}`, []string{"Idempotency-Key: k\xff"}, "idempotency_key"},
		{"BodyTextNUL", "POST", "/v1/notifications",
			`{"idempotency_key":"k",` + sms + `,"content":{"sms":{"body":"x\u0000"}}}`, nil, "content.sms.body"},
		{"BodyKeyNUL", "POST", "/v1/notifications",
			`{"idempotency_key":"k\u0000",` + sms + `,"content":{"sms":{"body":"x"}}}`, nil, "idempotency_key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := b.do(t, c.method, c.path, c.body, b.shopKey, c.headers...)
			require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
			p := a.problem(t)
			require.Equal(t, c.field, p.Field, "%s", a.body)
			require.Contains(t, []heraldtype.Code{heraldtype.CodeInvalidField, heraldtype.CodeInvalidEmail}, p.Code)
		})
	}
	// A key that is not text is no key: 401, not the database's error.
	a := b.do(t, "GET", "/v1/notifications", nil, "hk_\xff\xfe")
	require.Equal(t, http.StatusUnauthorized, a.status, "%s", a.body)
}
