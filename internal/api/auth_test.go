package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// endpoints is one request of each authenticated endpoint.
func endpoints() [][3]string {
	return [][3]string{
		{"POST", "/v1/notifications", `{}`},
		{"POST", "/v1/notifications/batch", `{"intents":[{}]}`},
		{"GET", "/v1/notifications", ""},
		{"GET", "/v1/notifications/n1", ""},
		{"POST", "/v1/notifications/n1/cancel", ""},
		{"GET", "/v1/recipients/u1", ""},
		{"PUT", "/v1/recipients/u1", `{}`},
		{"DELETE", "/v1/recipients/u1", ""},
		{"GET", "/v1/callback-subscription", ""},
		{"PUT", "/v1/callback-subscription", `{}`},
		{"DELETE", "/v1/callback-subscription", ""},
	}
}

func TestAuth_NoKeyIs401KeysRotate(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	for _, e := range endpoints() {
		for _, key := range []string{"", NewSecret()} {
			var body any
			if e[2] != "" {
				body = e[2]
			}
			a := b.do(t, e[0], e[1], body, key)
			require.Equal(t, http.StatusUnauthorized, a.status, "%s %s: %s", e[0], e[1], a.body)
			require.Equal(t, CodeUnauthorized, a.problem(t).Code)
			require.Contains(t, a.header.Get("WWW-Authenticate"), "Bearer")
		}
	}
	// Rotation: a second key works beside the first, then the first is revoked.
	keys, err := ListKeys(ctx, b.admin, "shop")
	require.NoError(t, err)
	next, err := CreateKey(ctx, b.admin, "shop", "ops", "rotation")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "a"), b.shopKey).status)
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "b"), next.Secret).status)
	_, err = RevokeKey(ctx, b.admin, "shop", keys[0].ID, "ops", "rotated")
	require.NoError(t, err)
	a := b.do(t, "GET", "/v1/notifications", nil, b.shopKey)
	require.Equal(t, http.StatusUnauthorized, a.status)
	a = b.do(t, "GET", "/v1/notifications", nil, next.Secret)
	require.Equal(t, http.StatusOK, a.status)
	var l List
	a.json(t, &l)
	require.Len(t, l.Notifications, 2)
	// The key that served was touched.
	keys, err = ListKeys(ctx, b.admin, "shop")
	require.NoError(t, err)
	require.NotNil(t, keys[1].LastUsedAt)
}

func TestRateLimit_OverRateIs429WithRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.RateLimit, c.RateBurst = 0.5, 1 })
	for _, e := range endpoints() {
		// A key of its own for each endpoint: a key gets its bucket once it
		// authenticated, and its later requests meet the limit before any
		// database work.
		k, err := CreateKey(context.Background(), b.admin, "shop", "test", "rate")
		require.NoError(t, err)
		key := k.Secret
		var body any
		if e[2] != "" {
			body = e[2]
		}
		b.do(t, e[0], e[1], body, key)
		a := b.do(t, e[0], e[1], body, key)
		require.Equal(t, http.StatusTooManyRequests, a.status, "%s %s", e[0], e[1])
		require.Equal(t, CodeRateLimited, a.problem(t).Code)
		require.Equal(t, "2", a.header.Get("Retry-After"))
	}
	// Another key has its own bucket.
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "x"), b.shopKey).status)
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/v1/notifications", nil, b.mallKey).status)
}
