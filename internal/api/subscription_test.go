package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testSecret is a valid whsec_ secret: the base64 of 24 bytes.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestCallbackSubscription_OwnAndNeverTheSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		a := b.do(t, m, "/v1/callback-subscription", nil, "")
		require.Equal(t, http.StatusUnauthorized, a.status, "%s is authenticated first", m)
	}
	a := b.do(t, "GET", "/v1/callback-subscription", nil, b.shopKey)
	require.Equal(t, http.StatusNotFound, a.status)

	a = b.do(t, "PUT", "/v1/callback-subscription", map[string]any{"url": "https://shop.example.com/status",
		"events": []string{"delivered", "dead_lettered"}, "secret": testSecret}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.NotContains(t, string(a.body), testSecret)
	var s CallbackSubscription
	a.json(t, &s)
	require.Equal(t, "https://shop.example.com/status", s.URL)
	require.Equal(t, []string{"dead_lettered", "delivered"}, s.Events)
	require.Equal(t, "secret", s.Auth)

	a = b.do(t, "GET", "/v1/callback-subscription", nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.NotContains(t, string(a.body), testSecret)
	var got CallbackSubscription
	a.json(t, &got)
	require.Equal(t, s, got)

	// A bearer token replaces the secret; GET says which is set, not what.
	token := "tok_" + strings.Repeat("z", 20)
	a = b.do(t, "PUT", "/v1/callback-subscription", map[string]any{"url": "https://shop.example.com/status",
		"bearer_token": token}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = b.do(t, "GET", "/v1/callback-subscription", nil, b.shopKey)
	require.NotContains(t, string(a.body), token)
	a.json(t, &got)
	require.Equal(t, "bearer_token", got.Auth)
	require.Empty(t, got.Events)

	// mall has none: shop's is not its to read or delete.
	a = b.do(t, "GET", "/v1/callback-subscription", nil, b.mallKey)
	require.Equal(t, http.StatusNotFound, a.status)
	a = b.do(t, "DELETE", "/v1/callback-subscription", nil, b.mallKey)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.callback_subscriptions WHERE producer = 'shop'`))

	// Refusals name the field and never quote the secret.
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"url": "ftp://x", "secret": testSecret}, "url"},
		{map[string]any{"url": "https://x.example.com/", "events": []string{"nope"}, "secret": testSecret}, "events"},
		{map[string]any{"url": "https://x.example.com/", "secret": "whsec_c2hvcnQ="}, "secret"},
		{map[string]any{"url": "https://x.example.com/", "bearer_token": "short"}, "bearer_token"},
		{map[string]any{"url": "https://x.example.com/"}, ""},
		{map[string]any{"url": "https://x.example.com/", "secret": testSecret, "bearer_token": token}, ""},
	} {
		a = b.do(t, "PUT", "/v1/callback-subscription", c.body, b.shopKey)
		require.Equal(t, http.StatusBadRequest, a.status, "%v: %s", c.body, a.body)
		p := a.problem(t)
		require.Equal(t, c.field, p.Field, "%v: %s", c.body, a.body)
		require.NotContains(t, string(a.body), "c2hvcnQ")
	}
	a = b.do(t, "GET", "/v1/callback-subscription", nil, b.shopKey)
	a.json(t, &got)
	require.Equal(t, "bearer_token", got.Auth, "a refused PUT changes nothing")

	a = b.do(t, "DELETE", "/v1/callback-subscription", nil, b.shopKey)
	require.Equal(t, http.StatusNoContent, a.status)
	a = b.do(t, "DELETE", "/v1/callback-subscription", nil, b.shopKey)
	require.Equal(t, http.StatusNotFound, a.status)
}

// An intent's callback_url is refused while the producer has no
// subscription, and accepted once it subscribed through the API.
func TestSubmit_CallbackURLNeedsASubscription(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	intent := func(key string) map[string]any {
		return map[string]any{"notification_type": "order.shipped", "idempotency_key": key, "channels": []string{"sms"},
			"audience": map[string]any{"sms": []string{"+14155550123"}}, "content": map[string]any{"sms": map[string]any{"body": "hi"}},
			"callback_url": "https://shop.example.com/this-one", "metadata": map[string]string{"order_id": "9"}}
	}
	a := b.do(t, "POST", "/v1/notifications", intent("k1"), b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	p := a.problem(t)
	require.Equal(t, "callback_url_needs_subscription", string(p.Code))
	require.Equal(t, "callback_url", p.Field)
	require.Contains(t, p.Detail, "PUT /v1/callback-subscription")
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))

	// In a batch, only the intent with the callback_url is refused.
	plain := intent("k2")
	delete(plain, "callback_url")
	a = b.do(t, "POST", "/v1/notifications/batch", map[string]any{"intents": []any{intent("k1"), plain}}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var out struct {
		Results []BatchResult `json:"results"`
	}
	a.json(t, &out)
	require.Equal(t, http.StatusBadRequest, out.Results[0].Status)
	require.Equal(t, http.StatusCreated, out.Results[1].Status)

	a = b.do(t, "PUT", "/v1/callback-subscription", map[string]any{"url": "https://shop.example.com/status",
		"secret": testSecret}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = b.do(t, "POST", "/v1/notifications", intent("k1"), b.shopKey)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records WHERE callback_url <> '' AND metadata->>'order_id' = '9'`))
}

// Metadata a raw door refuses: values that are not strings, and NUL.
func TestSubmit_NonStringMetadataRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for i, meta := range []any{
		map[string]any{"n": 1},
		map[string]any{"o": map[string]any{"a": "b"}},
		map[string]any{"l": []string{"a"}},
		"a string",
		map[string]any{"nul": "a\x00b"},
		map[string]any{"huge": strings.Repeat("x", 513)},
	} {
		in := map[string]any{"notification_type": "order.shipped", "idempotency_key": "m" + string(rune('a'+i)),
			"channels": []string{"sms"}, "audience": map[string]any{"sms": []string{"+14155550123"}},
			"content": map[string]any{"sms": map[string]any{"body": "hi"}}, "metadata": meta}
		a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
		require.Equal(t, http.StatusBadRequest, a.status, "%v: %s", meta, a.body)
		require.True(t, strings.HasPrefix(a.problem(t).Field, "metadata"), "%v: %s", meta, a.body)
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))
}
