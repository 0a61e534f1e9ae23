package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/httpservetest"
)

// newSecret returns a fresh secret in the whsec_ format.
func newSecret(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// verifySignature is the receiver's side of the Standard Webhooks spec,
// written from the spec rather than from the package's Sign: it rebuilds
// "id.timestamp.body", HMACs it with the secret's decoded key, and accepts
// the request if any "v1," entry of the space-separated header matches and
// the timestamp is within five minutes.
func verifySignature(secret string, header http.Header, body []byte, now time.Time) error {
	id := header.Get("webhook-id")
	tsText := header.Get("webhook-timestamp")
	sigHeader := header.Get("webhook-signature")
	if id == "" || tsText == "" || sigHeader == "" {
		return errors.New("missing webhook headers")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("bad timestamp: %w", err)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside tolerance")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("bad secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + tsText + "." + string(body)))
	want := mac.Sum(nil)
	for _, entry := range strings.Fields(sigHeader) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

// received is one request as the test receiver saw it.
type received struct {
	header http.Header
	body   []byte
}

// testBundle is a receiver on loopback and a Deliverer allowed to reach it.
type testBundle struct {
	deliverer *Deliverer
	server    *httptest.Server
	secret    string

	mu       sync.Mutex
	requests []received
	// respond writes the receiver's answer; default 204.
	respond func(w http.ResponseWriter, r *http.Request)
}

func (b *testBundle) got() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.requests...)
}

func setup(t *testing.T, mutate func(*Config)) *testBundle {
	t.Helper()
	b := &testBundle{secret: newSecret(t)}
	b.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.requests = append(b.requests, received{header: r.Header.Clone(), body: body})
		respond := b.respond
		b.mu.Unlock()
		if respond != nil {
			respond(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(b.server.Close)
	cfg := Config{Secrets: []string{b.secret}, AllowPrivate: true, Timeout: 2 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	b.deliverer = d
	return b
}

func (b *testBundle) setRespond(f func(w http.ResponseWriter, r *http.Request)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.respond = f
}

func testMessage(address string) *channel.Message {
	return &channel.Message{
		NotificationID:   "ntf_123",
		RouteID:          "rte_456",
		NotificationType: "order.shipped",
		Attempt:          1,
		Address:          address,
		Content:          json.RawMessage(`{"order_id":9,"carrier":"DHL"}`),
		AcceptedAt:       time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC),
	}
}

func TestDeliver_SignsPerStandardWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.UserAgent = "herald-test/1" })

	out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL+"/hooks/orders"))
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	require.Equal(t, "http_204", out.Classification)

	reqs := b.got()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.NoError(t, verifySignature(b.secret, r.header, r.body, time.Now()))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "herald-test/1", r.header.Get("User-Agent"))
	require.True(t, strings.HasPrefix(r.header.Get("webhook-id"), "msg_"))

	var body struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.body, &body))
	require.Equal(t, "order.shipped", body.Type)
	require.Equal(t, "2025-03-01T12:30:00Z", body.Timestamp)
	require.JSONEq(t, `{"order_id":9,"carrier":"DHL"}`, string(body.Data))

	t.Run("TamperedBodyFailsVerification", func(t *testing.T) {
		t.Parallel()
		require.Error(t, verifySignature(b.secret, r.header, append([]byte(nil), append(r.body, ' ')...), time.Now()))
	})
	t.Run("OtherSecretFailsVerification", func(t *testing.T) {
		t.Parallel()
		require.Error(t, verifySignature(newSecret(t), r.header, r.body, time.Now()))
	})
}

func TestDeliver_WebhookIDStableAcrossRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)

	msg := testMessage(b.server.URL)
	require.Equal(t, channel.Delivered, b.deliverer.Deliver(t.Context(), msg).Class)
	retry := *msg
	retry.Attempt = 2
	require.Equal(t, channel.Delivered, b.deliverer.Deliver(t.Context(), &retry).Class)
	other := *msg
	other.RouteID = "rte_789"
	require.Equal(t, channel.Delivered, b.deliverer.Deliver(t.Context(), &other).Class)

	reqs := b.got()
	require.Len(t, reqs, 3)
	require.Equal(t, reqs[0].header.Get("webhook-id"), reqs[1].header.Get("webhook-id"))
	require.NotEqual(t, reqs[0].header.Get("webhook-id"), reqs[2].header.Get("webhook-id"))
	require.Equal(t, MessageID("ntf_123", "rte_456"), reqs[0].header.Get("webhook-id"))
	for _, r := range reqs {
		require.NoError(t, verifySignature(b.secret, r.header, r.body, time.Now()))
	}
}

func TestDeliver_SignsWithEverySecret(t *testing.T) {
	t.Parallel()
	oldSecret, newSecretValue := newSecret(t), newSecret(t)
	b := setup(t, func(c *Config) { c.Secrets = []string{newSecretValue, oldSecret} })

	require.Equal(t, channel.Delivered, b.deliverer.Deliver(t.Context(), testMessage(b.server.URL)).Class)
	r := b.got()[0]

	entries := strings.Fields(r.header.Get("webhook-signature"))
	require.Len(t, entries, 2)
	for _, e := range entries {
		require.True(t, strings.HasPrefix(e, "v1,"), e)
	}
	// A receiver still on the old secret and one already on the new one
	// both accept the request.
	require.NoError(t, verifySignature(oldSecret, r.header, r.body, time.Now()))
	require.NoError(t, verifySignature(newSecretValue, r.header, r.body, time.Now()))
	require.Error(t, verifySignature(b.secret, r.header, r.body, time.Now()))
}

func TestDeliver_ClassifiesStatusCodes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.setRespond(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.WriteHeader(code)
	})

	tests := []struct {
		code  int
		class channel.Class
		hint  string
	}{
		{200, channel.Delivered, ""},
		{202, channel.Delivered, ""},
		{400, channel.Permanent, "rejected the payload"},
		{401, channel.Permanent, "signatures"},
		{403, channel.Permanent, "signatures"},
		{404, channel.Permanent, "does not exist"},
		{408, channel.Transient, ""},
		{410, channel.Permanent, "gone for good"},
		{413, channel.Permanent, "larger than"},
		{422, channel.Permanent, "rejected the payload"},
		{429, channel.Transient, ""},
		{500, channel.Transient, ""},
		{502, channel.Transient, ""},
		{503, channel.Transient, ""},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			t.Parallel()
			out := b.deliverer.Deliver(t.Context(), testMessage(fmt.Sprintf("%s/hook?code=%d&token=s3cr3t", b.server.URL, tt.code)))
			require.Equal(t, tt.class, out.Class)
			require.Equal(t, "http_"+strconv.Itoa(tt.code), out.Classification)
			require.NotContains(t, out.Message, "s3cr3t")
			require.NotContains(t, out.Message, "/hook")
			if tt.hint != "" {
				require.Contains(t, out.RecoveryHint, tt.hint)
			}
		})
	}
}

func TestDeliver_HonoursRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.setRespond(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", r.URL.Query().Get("after"))
		w.WriteHeader(http.StatusServiceUnavailable)
	})

	t.Run("Seconds", func(t *testing.T) {
		t.Parallel()
		out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL+"?after=120"))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, 120*time.Second, out.RetryAfter)
	})
	t.Run("HTTPDate", func(t *testing.T) {
		t.Parallel()
		when := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
		out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL+"?after="+strings.ReplaceAll(when, " ", "+")))
		require.Equal(t, channel.Transient, out.Class)
		require.InDelta(t, 90*time.Second, out.RetryAfter, float64(3*time.Second))
	})
	t.Run("Garbage", func(t *testing.T) {
		t.Parallel()
		out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL+"?after=soon"))
		require.Equal(t, channel.Transient, out.Class)
		require.Zero(t, out.RetryAfter)
	})
}

func TestDeliver_DoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	t.Cleanup(target.Close)
	b := setup(t, nil)
	b.setRespond(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/new-hook?token=abc", http.StatusPermanentRedirect)
	})

	out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, "http_308", out.Classification)
	require.Contains(t, out.RecoveryHint, target.URL)
	require.NotContains(t, out.RecoveryHint, "token=abc")
	require.Zero(t, hits.Load())
}

func TestDeliver_TimeoutIsTransient(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}

	t.Run("ConfigTimeout", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *Config) { c.Timeout = 200 * time.Millisecond })
		b.setRespond(slow)
		start := time.Now()
		out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, channel.ClassTimeout, out.Classification)
		require.Less(t, time.Since(start), 2*time.Second)
	})
	t.Run("ContextDeadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *Config) { c.Timeout = time.Minute })
		b.setRespond(slow)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		out := b.deliverer.Deliver(ctx, testMessage(b.server.URL))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, channel.ClassTimeout, out.Classification)
		require.Less(t, time.Since(start), 2*time.Second)
	})
}

func TestDeliver_ConnectionRefusedIsTransient(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	b := setup(t, nil)

	out := b.deliverer.Deliver(t.Context(), testMessage("http://"+addr+"/hook"))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, channel.ClassConnectionRefused, out.Classification)
}

func TestDeliver_ConnectionResetIsTransient(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.setRespond(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0)
			_ = conn.Close()
		}
	})

	out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL))
	require.Equal(t, channel.Transient, out.Class)
	require.Contains(t, []string{channel.ClassConnectionReset, channel.ClassNetwork}, out.Classification)
}

func TestDeliver_GuardsPrivateDestinations(t *testing.T) {
	t.Parallel()

	t.Run("LoopbackDeniedByDefault", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *Config) { c.AllowPrivate = false })
		out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL))
		require.Equal(t, channel.Permanent, out.Class)
		require.Equal(t, ClassDestinationDenied, out.Classification)
		require.Contains(t, out.Message, "loopback")
		require.NotEmpty(t, out.RecoveryHint)
		require.Empty(t, b.got(), "no request may reach a denied destination")
	})
	t.Run("HostNameResolvingToLoopbackDenied", func(t *testing.T) {
		t.Parallel()
		// The check runs on the address resolved at dial time, not on the
		// URL's text, which is what defeats DNS rebinding.
		b := setup(t, func(c *Config) { c.AllowPrivate = false })
		_, port, err := net.SplitHostPort(b.server.Listener.Addr().String())
		require.NoError(t, err)
		out := b.deliverer.Deliver(t.Context(), testMessage("http://localhost:"+port+"/hook"))
		require.Equal(t, channel.Permanent, out.Class)
		require.Equal(t, ClassDestinationDenied, out.Classification)
		require.Empty(t, b.got())
	})
	t.Run("AllowListedHostAllowed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *Config) {
			c.AllowPrivate = false
			c.AllowHosts = []string{"127.0.0.1"}
		})
		out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
		require.Len(t, b.got(), 1)
	})
	t.Run("DenyCIDRsBeatAllowPrivate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *Config) {
			c.AllowPrivate = true
			c.DenyCIDRs = []string{"127.0.0.0/8"}
		})
		out := b.deliverer.Deliver(t.Context(), testMessage(b.server.URL))
		require.Equal(t, channel.Permanent, out.Class)
		require.Equal(t, ClassDestinationDenied, out.Classification)
		require.Empty(t, b.got())
	})
}

func TestGuard_DeniesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	g, err := newGuard(false, nil, nil)
	require.NoError(t, err)

	tests := []struct {
		ip     string
		denied bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"192.168.1.1", true},
		{"fd00::1", true},
		{"169.254.169.254", true}, // cloud metadata service
		{"fe80::1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"100.100.100.200", true}, // carrier-grade NAT range, also a metadata address
		{"255.255.255.255", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped loopback
		{"::ffff:169.254.169.254", true},
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"8.8.8.8", false},
		{"93.184.215.14", false},
		{"2606:4700:4700::1111", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
	}
	for _, tt := range tests {
		t.Run(strings.NewReplacer(".", "_", ":", "_").Replace(tt.ip), func(t *testing.T) {
			t.Parallel()
			reason := g.denied(netip.MustParseAddr(tt.ip), false)
			if tt.denied {
				require.NotEmpty(t, reason)
			} else {
				require.Empty(t, reason)
			}
		})
	}
}

func TestDeliver_RejectsBadContentUnsent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	msg := testMessage(b.server.URL)
	msg.Content = json.RawMessage(`{"card":"4111111111111111",`)

	out := b.deliverer.Deliver(t.Context(), msg)
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, channel.ClassBadContent, out.Classification)
	require.NotContains(t, out.Message, "4111")
	require.Empty(t, b.got())

	t.Run("EmptyContentSendsNullData", func(t *testing.T) {
		t.Parallel()
		msg := testMessage(b.server.URL)
		msg.Content = nil
		require.Equal(t, channel.Delivered, b.deliverer.Deliver(t.Context(), msg).Class)
	})
}

func TestDeliver_ClassifiesAddresses(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)

	tests := []struct {
		name           string
		address        string
		class          channel.Class
		classification string
	}{
		{"Empty", "", channel.Skip, channel.ClassNoAddress},
		{"NotAURL", "not a url", channel.Permanent, channel.ClassInvalidDestination},
		{"WrongScheme", "ftp://example.com/x", channel.Permanent, channel.ClassInvalidDestination},
		{"NoHost", "https:///path", channel.Permanent, channel.ClassInvalidDestination},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := b.deliverer.Deliver(t.Context(), testMessage(tt.address))
			require.Equal(t, tt.class, out.Class)
			require.Equal(t, tt.classification, out.Classification)
		})
	}
}

func TestDeliver_SafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)

	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			msg := testMessage(b.server.URL)
			msg.RouteID = fmt.Sprintf("rte_%d", i)
			out := b.deliverer.Deliver(t.Context(), msg)
			require.Equal(t, channel.Delivered, out.Class, out.Message)
		})
	}
	wg.Wait()
	reqs := b.got()
	require.Len(t, reqs, 32)
	for _, r := range reqs {
		require.NoError(t, verifySignature(b.secret, r.header, r.body, time.Now()))
	}
}

func TestNew_ValidatesConfig(t *testing.T) {
	t.Parallel()
	good := newSecret(t)

	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"NoSecrets", Config{}, "Secrets"},
		{"SecretWithoutPrefix", Config{Secrets: []string{strings.TrimPrefix(good, "whsec_")}}, "Secrets[0]"},
		{"SecretNotBase64", Config{Secrets: []string{good, "whsec_!!!notbase64"}}, "Secrets[1]"},
		{"SecretTooShort", Config{Secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))}}, "at least 16 bytes"},
		{"NegativeTimeout", Config{Secrets: []string{good}, Timeout: -1}, "Timeout"},
		{"BadCIDR", Config{Secrets: []string{good}, DenyCIDRs: []string{"10.0.0.0/33"}}, "DenyCIDRs[0]"},
		{"EmptyAllowHost", Config{Secrets: []string{good}, AllowHosts: []string{" "}}, "AllowHosts[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), strings.TrimPrefix(good, "whsec_"))
		})
	}
}

func TestDeliver_NilMessageDoesNotPanic(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	out := b.deliverer.Deliver(t.Context(), nil)
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, channel.ClassBadContent, out.Classification)
}

// A round of n deliveries at once to one receiver leaves its n connections
// open for the next: the second round opens none, whether the pool is
// sized by the caller's concurrency or left to its bound over all hosts.
func TestDeliver_KeepsConnectionsForTheNextRound(t *testing.T) {
	t.Parallel()
	const n = 100
	for _, concurrency := range []int{n, 0} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			b := httpservetest.NewBarrier(t, n, func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) })
			d, err := New(Config{Secrets: []string{newSecret(t)}, AllowPrivate: true, Concurrency: concurrency})
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })
			b.RequireConnectionsKept(t, func(i int) {
				msg := testMessage(b.URL)
				msg.RouteID = fmt.Sprintf("rte_%d", i)
				out := d.Deliver(t.Context(), msg)
				require.Equal(t, channel.Delivered, out.Class, out.Message)
			})
		})
	}
}
