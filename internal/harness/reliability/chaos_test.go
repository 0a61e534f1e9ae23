package reliability_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// scenario is one kind of provider behaviour and the class every route
// facing it must end in.
type scenario struct {
	name string
	// answer handles the n-th request of a route; it reports whether it
	// answered 2xx.
	answer func(w http.ResponseWriter, r *http.Request, n int) bool
	// status, attempts (exact, or 0 for "at least minAttempts") and
	// classification are what the route must end with.
	status         string
	attempts       int
	minAttempts    int
	classification string
}

const (
	chaosTimeout     = 400 * time.Millisecond
	chaosMaxAttempts = 4
)

func ok(w http.ResponseWriter) bool { w.WriteHeader(http.StatusNoContent); return true }

// hang outlasts the deliverer's timeout, then gives up on the request.
func hang(r *http.Request) bool {
	select {
	case <-r.Context().Done():
	case <-time.After(3 * chaosTimeout):
	}
	return false
}

// reset closes the connection without an answer.
func reset(w http.ResponseWriter) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
	return false
}

func status(w http.ResponseWriter, code int) bool { w.WriteHeader(code); return false }

var scenarios = []scenario{
	{name: "ok", answer: func(w http.ResponseWriter, _ *http.Request, _ int) bool { return ok(w) },
		status: "published", attempts: 1},
	{name: "timeout-once", answer: func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 1 {
			return hang(r)
		}
		return ok(w)
	}, status: "published", attempts: 2},
	{name: "reset-once", answer: func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n == 1 {
			return reset(w)
		}
		return ok(w)
	}, status: "published", attempts: 2},
	{name: "throttled", answer: func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			return status(w, http.StatusTooManyRequests)
		}
		return ok(w)
	}, status: "published", attempts: 2},
	{name: "5xx-burst", answer: func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n <= chaosMaxAttempts-1 {
			return status(w, http.StatusServiceUnavailable)
		}
		return ok(w)
	}, status: "published", attempts: chaosMaxAttempts},
	{name: "5xx-forever", answer: func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		return status(w, http.StatusInternalServerError)
	}, status: "dead_letter", attempts: chaosMaxAttempts, classification: "http_500"},
	{name: "hang-forever", answer: func(_ http.ResponseWriter, r *http.Request, _ int) bool { return hang(r) },
		status: "dead_letter", attempts: chaosMaxAttempts, classification: "timeout"},
	{name: "gone", answer: func(w http.ResponseWriter, _ *http.Request, _ int) bool { return status(w, http.StatusGone) },
		status: "dead_letter", attempts: 1, classification: "http_410"},
	{name: "bad-request", answer: func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		return status(w, http.StatusBadRequest)
	}, status: "dead_letter", attempts: 1, classification: "http_400"},
}

func TestServe_ProviderChaosEndsRoutesInClass(t *testing.T) {
	t.Parallel()
	byName := map[string]scenario{}
	for _, s := range scenarios {
		byName[s.name] = s
	}
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, path string, n int) bool {
		name := strings.Split(strings.TrimPrefix(path, "/"), "/")[0]
		return byName[name].answer(w, r, n)
	})
	dbURL := pgtemp.NewDatabase(t)
	e := startEngine(t, dbURL, engineConfig{concurrency: 32, timeout: chaosTimeout, maxAttempts: chaosMaxAttempts, appName: "herald-chaos"})
	perScenario := scale(15, 200)
	ctx := context.Background()
	for _, s := range scenarios {
		_, err := newProducer(t, e.pool, rc.url, s.name).submit(ctx, 0, perScenario, perScenario)
		require.NoError(t, err)
	}
	waitTerminal(t, e.pool, 2*time.Minute)

	rows, err := benchstore.New().BenchRouteOutcomes(ctx, e.pool)
	require.NoError(t, err)
	require.Len(t, rows, perScenario*len(scenarios))
	counts := map[string]map[string]int{}
	for _, r := range rows {
		path := strings.TrimPrefix(r.RecipientRef, rc.url)
		name := strings.Split(strings.TrimPrefix(path, "/"), "/")[0]
		s := byName[name]
		if counts[name] == nil {
			counts[name] = map[string]int{}
		}
		counts[name][r.Status]++
		require.Equal(t, s.status, r.Status, "route %s", path)
		if s.attempts > 0 {
			require.EqualValues(t, s.attempts, r.AttemptCount, "route %s", path)
		}
		if s.classification != "" {
			require.Equal(t, s.classification, r.LastErrorClassification, "route %s", path)
		}
		if s.status == "published" {
			require.Equal(t, 1, rc.ackedFor(path), "route %s acked once", path)
		}
		if name == "throttled" {
			ts := rc.timesFor(path)
			require.Len(t, ts, 2)
			require.GreaterOrEqual(t, ts[1].Sub(ts[0]), 900*time.Millisecond, "Retry-After: 1 honoured for %s", path)
		}
	}
	v := judge(t, e.pool, rc, rc.url)
	for _, s := range scenarios {
		t.Logf("chaos %-13s routes=%d outcome=%v", s.name, perScenario, counts[s.name])
	}
	t.Logf("chaos: routes=%d requests=%d published=%d dead_letter=%d duplicates=%d", v.routes, v.requests, v.published, v.byStatus["dead_letter"], v.duplicates)
	require.Zero(t, v.duplicates)
	fmt.Printf("reliability chaos: routes=%d requests=%d published=%d dead_letter=%d duplicates=%d lost=0\n",
		v.routes, v.requests, v.published, v.byStatus["dead_letter"], v.duplicates)
}
