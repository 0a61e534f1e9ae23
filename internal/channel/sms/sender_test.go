package sms

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/httpservetest"
	"github.com/heraldhq/herald/internal/secret"
)

// rawProvider is a loopback SMS provider that keeps each request's body
// and accepts them all.
type rawProvider struct {
	server *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func startRawProvider(t *testing.T) *rawProvider {
	t.Helper()
	p := &rawProvider{}
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.bodies = append(p.bodies, string(b))
		p.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"id": "p1"})
	}))
	t.Cleanup(p.server.Close)
	return p
}

func (p *rawProvider) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[len(p.bodies)-1]
}

func (p *rawProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

func senderMsg(c Content) *channel.Message {
	raw, _ := json.Marshal(c)
	return &channel.Message{NotificationID: "n1", RouteID: "r1", Attempt: 1, Address: numAccept, Content: raw}
}

// The intent's sender is sent as the request's from, instead of the
// provider's default; a flash SMS carries the provider's flash field.
func TestTheIntentsSenderAndFlashAreSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := startRawProvider(t)
	d, err := New(Config{URL: p.server.URL, APIKey: testAPIKey, From: testSender, FlashField: "flash"})
	require.NoError(t, err)

	require.Equal(t, channel.Delivered, d.Deliver(ctx, senderMsg(Content{Body: "hi"})).Class)
	require.JSONEq(t, `{"to":"`+numAccept+`","from":"Herald","body":"hi"}`, p.last())
	require.Equal(t, channel.Delivered, d.Deliver(ctx, senderMsg(Content{Body: "hi", From: "ACME"})).Class)
	require.JSONEq(t, `{"to":"`+numAccept+`","from":"ACME","body":"hi"}`, p.last())
	require.Equal(t, channel.Delivered, d.Deliver(ctx, senderMsg(Content{Body: "hi", From: "ACME", Flash: true})).Class)
	require.JSONEq(t, `{"to":"`+numAccept+`","from":"ACME","body":"hi","flash":true}`, p.last())

	// A form provider with its own flash spelling (Vonage's message-class).
	form, err := New(Config{URL: p.server.URL, APIKey: testAPIKey, Format: FormatForm, FlashField: "message-class", FlashValue: `"0"`})
	require.NoError(t, err)
	require.Equal(t, channel.Delivered, form.Deliver(ctx, senderMsg(Content{Body: "hi", From: "+447700900123", Flash: true})).Class)
	v, err := url.ParseQuery(p.last())
	require.NoError(t, err)
	require.Equal(t, url.Values{"to": {numAccept}, "from": {"+447700900123"}, "body": {"hi"}, "message-class": {"0"}}, v)
}

// A flash SMS routed to a provider without flash_field is not sent at
// all: a normal SMS would be stored on the handset, which is what flash
// is meant to avoid. The outcome is Permanent with a recovery hint.
func TestAFlashSMSToAProviderWithoutFlashIsNotSentAsANormalSMS(t *testing.T) {
	t.Parallel()
	p := startRawProvider(t)
	d, err := New(Config{URL: p.server.URL, APIKey: testAPIKey, Provider: "sms/cheap"})
	require.NoError(t, err)
	out := d.Deliver(context.Background(), senderMsg(Content{Body: "code 1234", Flash: true}))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, ClassFlashUnsupported, out.Classification)
	require.Contains(t, out.Message, "sms/cheap")
	require.Contains(t, out.RecoveryHint, "flash_field")
	require.Zero(t, p.count(), "nothing reached the provider")
}

func TestSettingsCheckFlashValue(t *testing.T) {
	t.Parallel()
	anyKey := func(secret.Secret) error { return nil }
	s := Settings{URL: "https://sms.example/send", FlashField: "flash", FlashValue: "not json"}
	require.EqualError(t, s.Check(anyKey), `flash_value: must be a JSON value, e.g. true, 0 or "1"`)
	s = Settings{URL: "https://sms.example/send", FlashValue: "0"}
	require.EqualError(t, s.Check(anyKey), "flash_value: given without flash_field")
	s = Settings{URL: "https://sms.example/send", FlashField: "message-class", FlashValue: "0"}
	require.NoError(t, s.Check(anyKey))
	s.APIKey = secret.Secret{Env: "SMS_KEY"}
	cfg, err := s.Config(func(string) string { return "k" })
	require.NoError(t, err)
	require.Equal(t, "message-class", cfg.FlashField)
}

// A round of n deliveries at once leaves its n connections open for the
// next: the second round opens none, whether the pool is sized by the
// caller's concurrency or left to the deliveries in flight.
func TestConnectionsAreKeptForTheNextRound(t *testing.T) {
	const n = 100
	for _, concurrency := range []int{n, 0} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			b := httpservetest.NewBarrier(t, n, func(w http.ResponseWriter) {
				writeJSON(w, http.StatusOK, map[string]string{"id": "p1"})
			})
			d, err := New(Config{URL: b.URL, APIKey: "k", Concurrency: concurrency})
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })
			b.RequireConnectionsKept(t, func(int) {
				out := d.Deliver(t.Context(), senderMsg(Content{Body: "hi"}))
				require.Equal(t, channel.Delivered, out.Class, out.Message)
			})
		})
	}
}
