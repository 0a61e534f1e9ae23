package api

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rateFieldsOf returns an answer's rate-limit fields, after checking that
// the X-RateLimit fields say what the IETF ones say.
func rateFieldsOf(t *testing.T, a answer) (policy, state string) {
	t.Helper()
	policy, state = a.header.Get("RateLimit-Policy"), a.header.Get("RateLimit")
	var name string
	var r, reset int
	_, err := fmt.Sscanf(state, "%q;r=%d;t=%d", &name, &r, &reset)
	require.NoError(t, err, "RateLimit: %q", state)
	var q, w int
	_, err = fmt.Sscanf(policy, "%q;q=%d;w=%d", &name, &q, &w)
	require.NoError(t, err, "RateLimit-Policy: %q", policy)
	require.Equal(t, strconv.Itoa(q), a.header.Get("X-RateLimit-Limit"))
	require.Equal(t, strconv.Itoa(r), a.header.Get("X-RateLimit-Remaining"))
	at, err := strconv.ParseInt(a.header.Get("X-RateLimit-Reset"), 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix()+int64(reset), at, 2, "X-RateLimit-Reset is RateLimit's t from now")
	return policy, state
}

// TestRateLimit_FieldsCountDownToThe429 drives one key through its bucket
// of 3 (refilling one request per 100 s, so that the test's own time does
// not refill it), then one client address through its failed
// authentications: each answer says what is left, and each 429 says 0
// with its Retry-After.
func TestRateLimit_FieldsCountDownToThe429(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) {
		c.RateLimit, c.RateBurst = 0.01, 3
		c.AuthFailureRate, c.AuthFailureBurst = 0.01, 2
	})
	for i, want := range []string{`"key";r=2;t=100`, `"key";r=1;t=200`, `"key";r=0;t=300`} {
		a := b.do(t, "GET", "/v1/notifications?limit=1", nil, b.shopKey)
		require.Equal(t, http.StatusOK, a.status, "request %d: %s", i, a.body)
		policy, state := rateFieldsOf(t, a)
		require.Equal(t, `"key";q=3;w=300`, policy)
		require.Equal(t, want, state, "request %d", i)
	}
	a := b.do(t, "GET", "/v1/notifications", nil, b.shopKey)
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, "100", a.header.Get("Retry-After"))
	policy, state := rateFieldsOf(t, a)
	require.Equal(t, `"key";q=3;w=300`, policy)
	require.Equal(t, `"key";r=0;t=300`, state)
	// An answer that is not a success carries them too, once the key
	// authenticated: another key, with a bad parameter.
	a = b.do(t, "GET", "/v1/notifications?limit=0", nil, b.mallKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	_, state = rateFieldsOf(t, a)
	require.Equal(t, `"key";r=2;t=100`, state, "each key has its own bucket")

	// Failed authentications count down per address, and the 429 that
	// holds the address back says so.
	for i, want := range []string{`"auth-failures";r=1;t=100`, `"auth-failures";r=0;t=200`} {
		a := b.do(t, "GET", "/v1/notifications", nil, NewSecret())
		require.Equal(t, http.StatusUnauthorized, a.status)
		policy, state := rateFieldsOf(t, a)
		require.Equal(t, `"auth-failures";q=2;w=200`, policy)
		require.Equal(t, want, state, "failure %d", i)
	}
	a = b.do(t, "GET", "/v1/notifications", nil, b.shopKey)
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, "100", a.header.Get("Retry-After"))
	_, state = rateFieldsOf(t, a)
	require.Equal(t, `"auth-failures";r=0;t=200`, state)
}

// TestRateLimit_FieldsOnlyWhereALimitApplies: without a limit of keys an
// authenticated answer has none, and a request without a key (which
// counts as no failure) and the health checks have none either.
func TestRateLimit_FieldsOnlyWhereALimitApplies(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, a := range []answer{
		b.do(t, "GET", "/v1/notifications", nil, b.shopKey),
		b.do(t, "GET", "/v1/notifications", nil, ""),
		b.do(t, "GET", "/healthz", nil, ""),
	} {
		for _, k := range []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			require.Empty(t, a.header.Get(k), "%s on a %d", k, a.status)
		}
	}
}

// TestRateState_RefillsToFull follows both buckets on a clock of the
// test's own: taken, emptied, refused, and full again once their time has
// passed.
func TestRateState_RefillsToFull(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := newLimiter(1, 2)
	key := sha256.Sum256([]byte("k"))
	require.Equal(t, rateState{policy: keyPolicy, quota: 2, window: 2, remaining: 2}, l.state(key, t0), "no bucket: full")
	l.taken(key, t0)
	require.Equal(t, rateState{policy: keyPolicy, quota: 2, window: 2, remaining: 1, reset: time.Second}, l.state(key, t0))
	ok, _, _ := l.allowKnown(key, t0)
	require.True(t, ok)
	require.Equal(t, rateState{policy: keyPolicy, quota: 2, window: 2, remaining: 0, reset: 2 * time.Second}, l.state(key, t0))
	ok, wait, _ := l.allowKnown(key, t0)
	require.False(t, ok)
	require.Equal(t, time.Second, wait)
	require.Equal(t, 0, l.state(key, t0).remaining, "a refused request takes nothing")
	require.Equal(t, 1, l.state(key, t0.Add(1500*time.Millisecond)).remaining)
	require.Equal(t, rateState{policy: keyPolicy, quota: 2, window: 2, remaining: 2}, l.state(key, t0.Add(2*time.Second)), "reset")

	g := newAuthGuard(0.5, 3, 10)
	addr := netip.MustParsePrefix("192.0.2.1/32")
	g.failed(addr, t0)
	require.Equal(t, rateState{policy: authFailurePolicy, quota: 3, window: 6, remaining: 2, reset: 2 * time.Second}, g.state(addr, t0))
	require.Equal(t, 3, g.state(addr, t0.Add(2*time.Second)).remaining, "reset")

	h := http.Header{}
	setRateFields(h, rateState{policy: keyPolicy, quota: 400, window: 2, remaining: 399, reset: 2500 * time.Millisecond}, t0)
	require.Equal(t, `"key";q=400;w=2`, h.Get("RateLimit-Policy"))
	require.Equal(t, `"key";r=399;t=3`, h.Get("RateLimit"))
	require.Equal(t, "400", h.Get("X-RateLimit-Limit"))
	require.Equal(t, "399", h.Get("X-RateLimit-Remaining"))
	require.Equal(t, strconv.FormatInt(t0.Unix()+3, 10), h.Get("X-RateLimit-Reset"))
}

// TestDocument_LimitedAnswersShowRateLimitFields: each authenticated
// operation's successes, 401 and 429 name the five fields, so that a new
// operation cannot ship without them.
func TestDocument_LimitedAnswersShowRateLimitFields(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			Security  *[]any `json:"security"`
			Responses map[string]struct {
				Headers map[string]struct {
					Ref string `json:"$ref"`
				} `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(OpenAPI(), &doc))
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if op.Security != nil && len(*op.Security) == 0 {
				continue
			}
			for code, resp := range op.Responses {
				if code[0] != '2' && code != "401" && code != "429" {
					continue
				}
				for _, h := range []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
					require.Equal(t, "#/components/headers/"+h, resp.Headers[h].Ref, "%s %s %s", method, path, code)
				}
			}
		}
	}
}
