package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	herald "github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/routing"
)

// smsCounter is a loopback SMS provider that records when each message
// came.
type smsCounter struct {
	*httptest.Server
	mu    sync.Mutex
	times []time.Time
}

func newSMSCounter(t *testing.T) *smsCounter {
	t.Helper()
	s := &smsCounter{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		n := len(s.times)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprint(n)})
	}))
	t.Cleanup(s.Close)
	return s
}

// arrivalStretch is the sliding window in which the capped provider's
// counter may see at most the cap. herald spaces its sends 1.1/cap apart
// (internal/dispatch/pace.go); the counter sees arrivals, which the HTTP
// client and the scheduler delay by a wandering amount. With sends 44 ms
// apart at a cap of 25, an 850 ms stretch of arrivals holds at most 25 of
// them for any wander under 250 ms: what a race-instrumented test binary
// on a loaded two-core machine sees, and far beyond what a one-second
// window (under about 56 ms) tolerates. A cap not shared across processes
// doubles the count in every stretch, so it still fails.
const arrivalStretch = 850 * time.Millisecond

// stats returns the messages received, the most in any sliding
// arrivalStretch, and the span from the first to the last.
func (s *smsCounter) stats() (total, most int, span time.Duration) {
	s.mu.Lock()
	times := slices.Clone(s.times)
	s.mu.Unlock()
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	j := 0
	for i := range times {
		for times[i].Sub(times[j]) >= arrivalStretch {
			j++
		}
		most = max(most, i-j+1)
	}
	if len(times) > 1 {
		span = times[len(times)-1].Sub(times[0])
	}
	return len(times), most, span
}

// TestServe_CapHoldsAcrossProcesses runs `herald serve`
// processes with a capped and an uncapped SMS provider from the database:
// the capped provider's own counter never sees more than its cap in any
// second, with one process or three, and the uncapped provider's routes do
// not wait behind the capped backlog.
func TestServe_CapHoldsAcrossProcesses(t *testing.T) {
	t.Parallel()
	const capPerSecond, capped, free = 25, 75, 300
	bin := heraldBinary(t)
	for _, processes := range []int{1, 3} {
		t.Run(fmt.Sprintf("Processes%d", processes), func(t *testing.T) {
			dbURL := pgtemp.NewDatabase(t)
			pool := poolNamed(t, dbURL, "reliability-providers")
			cappedSrv, freeSrv := newSMSCounter(t), newSMSCounter(t)
			f, err := routing.Parse(fmt.Appendf(nil, `
providers:
  - name: sms/capped
    driver: sms-http
    cap_per_second: %d
    sms_http: {url: %q, api_key: {env: RELIABILITY_WEBHOOK_SECRETS}}
  - name: sms/free
    driver: sms-http
    sms_http: {url: %q, api_key: {env: RELIABILITY_WEBHOOK_SECRETS}}
rules:
  sms:
    - name: capped
      match: {prefixes: ["+254"]}
      providers: [sms/capped]
    - name: rest
      providers: [sms/free]
`, capPerSecond, cappedSrv.URL, freeSrv.URL))
			require.NoError(t, err)
			_, err = routing.Apply(context.Background(), pool, f, "reliability", nil)
			require.NoError(t, err)
			for i := range processes {
				startServe(t, bin, dbURL, filepath.Join(t.TempDir(), fmt.Sprintf("serve-%d.log", i)))
			}

			c, err := herald.NewClient(pool, nil)
			require.NoError(t, err)
			t.Cleanup(c.Close)
			submit := func(prefix string, cappedN, freeN int) {
				var ins []*herald.Intent
				for i := range cappedN + freeN {
					phone := "+447911123456"
					if i < cappedN {
						phone = "+254712345678"
					}
					ins = append(ins, &herald.Intent{
						NotificationType: "reliability.sms",
						Producer:         "reliability",
						IdempotencyKey:   fmt.Sprintf("%s-%d", prefix, i),
						Audience:         herald.Audience{SMS: []string{phone}},
						Channels:         []string{"sms"},
						Content:          herald.Content{SMS: &herald.SMSContent{Body: "hello"}},
					})
				}
				res, err := c.SubmitMany(context.Background(), ins)
				require.NoError(t, err)
				for _, r := range res {
					require.NoError(t, r.Err)
				}
			}
			// The uncapped provider alone first (which also waits for the
			// processes to be up): its time for free routes.
			began := time.Now()
			submit("alone", 0, free)
			require.Eventually(t, func() bool { n, _, _ := freeSrv.stats(); return n == free }, 30*time.Second, 10*time.Millisecond)
			aloneDone := time.Since(began)
			// Then beside a capped backlog.
			began = time.Now()
			submit("mixed", capped, free)
			require.Eventually(t, func() bool { n, _, _ := freeSrv.stats(); return n == 2*free }, 30*time.Second, 10*time.Millisecond)
			freeDone := time.Since(began)
			waitTerminal(t, pool, 30*time.Second)
			n, most, span := cappedSrv.stats()
			require.Equal(t, capped, n)
			t.Logf("%d serve process(es): capped provider got %d messages over %s, at most %d in any %s (cap %d a second); %d uncapped routes delivered %s after submit beside the capped backlog (%s alone, the first batch of a fresh process)",
				processes, n, span.Round(time.Millisecond), most, arrivalStretch, capPerSecond, free, freeDone.Round(time.Millisecond), aloneDone.Round(time.Millisecond))
			require.LessOrEqual(t, most, capPerSecond, "the capped provider's own counter saw more than its cap in %s", arrivalStretch)
			require.LessOrEqual(t, float64(n-1)/span.Seconds(), float64(capPerSecond), "the capped provider got more than its cap a second over the run")
			require.Less(t, freeDone, span, "the uncapped routes finished before the capped backlog drained")
		})
	}
}
