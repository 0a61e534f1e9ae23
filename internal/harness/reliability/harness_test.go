package reliability_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

var long = flag.Bool("long", os.Getenv("HERALD_LONG") == "1", "run the longer reliability suites (env HERALD_LONG=1)")

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// testSecret signs the webhooks the suites' deliverers send.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// scale picks the quick or the long figure.
func scale(quick, longer int) int {
	if *long {
		return longer
	}
	return quick
}

// receiver is a loopback webhook endpoint that counts every request per
// path (one path per route) and answers as its behave function says.
type receiver struct {
	url string
	// behave decides the answer to the n-th request (1-based) for path;
	// nil answers 204.
	behave func(w http.ResponseWriter, r *http.Request, path string, n int) bool

	mu       sync.Mutex
	requests map[string]int         // every request, per path
	acked    map[string]int         // requests answered 2xx, per path
	times    map[string][]time.Time // request arrival times, per path
	total    int                    // every request
	arrived  chan struct{}          // closed and replaced at every request
}

func newReceiver(t *testing.T, behave func(w http.ResponseWriter, r *http.Request, path string, n int) bool) *receiver {
	t.Helper()
	rc := &receiver{behave: behave, requests: map[string]int{}, acked: map[string]int{}, times: map[string][]time.Time{},
		arrived: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	rc.url = "http://" + ln.Addr().String()
	return rc
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	rc.mu.Lock()
	rc.requests[path]++
	n := rc.requests[path]
	rc.times[path] = append(rc.times[path], time.Now())
	rc.total++
	close(rc.arrived)
	rc.arrived = make(chan struct{})
	rc.mu.Unlock()
	ok := true
	if rc.behave != nil {
		ok = rc.behave(w, r, path, n)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
	if ok {
		rc.mu.Lock()
		rc.acked[path]++
		rc.mu.Unlock()
	}
}

// requestsSoFar returns how many requests have arrived.
func (rc *receiver) requestsSoFar() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.total
}

// awaitRequests waits until n requests in all have arrived; it returns
// ctx's error if ctx ends first.
func (rc *receiver) awaitRequests(ctx context.Context, n int) error {
	for {
		rc.mu.Lock()
		total, arrived := rc.total, rc.arrived
		rc.mu.Unlock()
		if total >= n {
			return nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// requireRequests waits up to timeout for n requests in all, failing the
// test if they do not come: what a fault waits for, so that it strikes
// while deliveries are under way.
func (rc *receiver) requireRequests(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := rc.awaitRequests(ctx, n); err != nil {
		t.Fatalf("%d requests of %d arrived within %s", rc.requestsSoFar(), n, timeout)
	}
}

// counts returns the number of paths acked at least once, the duplicate
// acks (acks beyond the first, over all paths) and all requests.
func (rc *receiver) counts() (delivered, duplicates, requests int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, n := range rc.acked {
		if n > 0 {
			delivered++
		}
		duplicates += max(n-1, 0)
	}
	for _, n := range rc.requests {
		requests += n
	}
	return delivered, duplicates, requests
}

func (rc *receiver) ackedFor(path string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.acked[path]
}

func (rc *receiver) timesFor(path string) []time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]time.Time(nil), rc.times[path]...)
}

// producer submits intents through the public client, one webhook route
// per intent at rc.url + "/" + prefix + "/" + i, retrying a batch whose
// submit failed (the idempotency key makes that safe).
type producer struct {
	client *herald.Client
	prefix string
	url    string
}

func newProducer(t *testing.T, pool *pgxpool.Pool, url, prefix string) *producer {
	t.Helper()
	c, err := herald.NewClient(pool, nil)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &producer{client: c, prefix: prefix, url: url}
}

func (p *producer) path(i int) string { return fmt.Sprintf("/%s/%d", p.prefix, i) }

func (p *producer) intent(i int) *herald.Intent {
	return &herald.Intent{
		NotificationType: "reliability.ping",
		Producer:         "reliability",
		IdempotencyKey:   fmt.Sprintf("%s-%d", p.prefix, i),
		Audience:         herald.Audience{Webhook: []string{p.url + p.path(i)}},
		Channels:         []string{"webhook"},
		Content:          herald.Content{Webhook: json.RawMessage(`{"i":` + fmt.Sprint(i) + `}`)},
	}
}

// submit submits intents [from, to) in batches of batch, retrying failed
// batches until ctx ends; it returns the number of failed submit calls.
func (p *producer) submit(ctx context.Context, from, to, batch int) (retries int, err error) {
	for i := from; i < to; i += batch {
		ins := make([]*herald.Intent, 0, batch)
		for j := i; j < min(i+batch, to); j++ {
			ins = append(ins, p.intent(j))
		}
		for {
			res, err := p.client.SubmitMany(ctx, ins)
			if err == nil {
				for _, r := range res {
					if r.Err != nil {
						return retries, fmt.Errorf("intent refused: %w", r.Err)
					}
				}
				break
			}
			if ctx.Err() != nil {
				return retries, ctx.Err()
			}
			retries++
			time.Sleep(50 * time.Millisecond)
		}
	}
	return retries, nil
}

// waitTerminal waits until no route is open (next_attempt_at set), reading
// through pool, retrying through database outages.
func waitTerminal(t *testing.T, pool *pgxpool.Pool, timeout time.Duration) {
	t.Helper()
	q := benchstore.New()
	var n int64
	if !poll(timeout, 50*time.Millisecond, func() bool {
		var err error
		n, err = q.BenchRouteCountOpen(context.Background(), pool)
		return err == nil && n == 0
	}) {
		t.Fatalf("%d routes still open after %s", n, timeout)
	}
}

// poll calls cond every interval until it returns true, and reports
// whether it did within timeout. cond runs on the caller's goroutine, so
// unlike require.Eventually's it may call require.
func poll(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// verdict compares the database's routes with what rc counted: routes
// published but never acked, or not published, are lost.
type verdict struct {
	routes, published, lost, duplicates, requests int
	byStatus                                      map[string]int
}

func judge(t *testing.T, pool *pgxpool.Pool, rc *receiver, url string) verdict {
	t.Helper()
	rows, err := benchstore.New().BenchRouteOutcomes(context.Background(), pool)
	require.NoError(t, err)
	v := verdict{byStatus: map[string]int{}}
	for _, r := range rows {
		v.routes++
		v.byStatus[r.Status]++
		path := strings.TrimPrefix(r.RecipientRef, url)
		if r.Status == "published" {
			v.published++
		}
		if r.Status != "published" || rc.ackedFor(path) == 0 {
			v.lost++
		}
	}
	_, v.duplicates, v.requests = rc.counts()
	return v
}
