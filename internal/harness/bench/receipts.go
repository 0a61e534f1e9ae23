package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
)

// The provider and receipts modes' provider: sms/bench, an sms-http
// provider whose server is the bench's sink.
const (
	benchProvider = "sms/bench"
	// The provider's credentials are environment references, as a real
	// file's are; the bench's engine resolves them (engineParams.Getenv).
	benchSMSKeyEnv        = "HERALD_BENCH_SMS_KEY"
	benchReceiptsTokenEnv = "HERALD_BENCH_RECEIPTS_TOKEN"
	benchSMSKey           = "bench-sms-key"
	benchReceiptsToken    = "bench-receipts-token"
	benchActor            = "herald-bench"
	// receiptSenders is how many receipts the sink posts at once: a
	// provider's pool of connections to herald's endpoint.
	receiptSenders = 16
	// receiptRetry is how soon a receipt the endpoint did not take is
	// posted again.
	receiptRetry = 100 * time.Millisecond
)

// benchGetenv resolves the provider file's references for the engine.
func benchGetenv(name string) string {
	switch name {
	case benchSMSKeyEnv:
		return benchSMSKey
	case benchReceiptsTokenEnv:
		return benchReceiptsToken
	}
	return ""
}

// providerFile returns the providers file of the provider mode, with
// receipts settings when receipts: sms/bench at url, the only provider of
// channel sms. Its circuit opens only when every attempt fails, so that
// -fail-share never parks the bench.
func providerFile(url string, receipts bool) (*routing.File, error) {
	rc := ""
	if receipts {
		rc = fmt.Sprintf("\n    receipts: {token: {env: %s}}", benchReceiptsTokenEnv)
	}
	f, err := routing.Parse(fmt.Appendf(nil, `providers:
  - name: %s
    driver: sms-http
    timeout: 30s
    circuit: {failure_ratio: 1}
    sms_http: {url: %q, api_key: {env: %s}, from: HERALD}%s
rules:
  sms:
    - name: bench
      providers: [%s]
`, benchProvider, url, benchSMSKeyEnv, rc, benchProvider))
	if err != nil {
		return nil, fmt.Errorf("the bench's providers file: %w", err)
	}
	return f, nil
}

// applyProvider writes the provider file to the database, as `herald
// providers apply -f` does; the engine loads it when it starts.
func applyProvider(ctx context.Context, pool *pgxpool.Pool, url string, receipts bool) error {
	f, err := providerFile(url, receipts)
	if err != nil {
		return err
	}
	if _, err := routing.Apply(ctx, pool, f, benchActor, &routing.ApplyOpts{Reason: "herald bench"}); err != nil {
		return fmt.Errorf("apply the bench's provider: %w", err)
	}
	return nil
}

// serveProvider runs the sink as sms/bench's server: it reads the
// sms-http driver's request, answers 200 with a message id (503 for an
// injected failure, 400 for a request that is not the driver's), and,
// with rs set, hands the id to rs, which posts its receipt later. It
// returns the send URL and a stop function.
func (s *sink) serveProvider(rs *receiptSender) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if !s.accept(w, r, body, checkSMS) {
				return
			}
			if !s.attempt(r.Context(), bytes.Contains(body, []byte(smsProbeMarker))) {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			id := "bench-" + strconv.FormatInt(s.ids.Add(1), 36)
			if rs != nil {
				rs.schedule(id)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"` + id + `"}`))
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/sms", func() { _ = srv.Close() }, nil
}

// receiptSender posts delivery receipts to herald's receipts endpoint as a
// provider does: one request per message, delay after the provider
// accepted it, from a few connections at once, again after a failure
// until the endpoint takes it (answers 2xx).
type receiptSender struct {
	delay  time.Duration
	url    string // the endpoint, with the provider's path
	client *http.Client

	mu    sync.Mutex
	queue []pendingReceipt // by due time: the delay is the same for all
	wake  chan struct{}

	// pending counts receipts scheduled and not taken yet; sent those
	// taken; failed the posts the endpoint refused or that failed.
	pending, sent, failed atomic.Int64

	stop context.CancelFunc
	done sync.WaitGroup
}

type pendingReceipt struct {
	id  string
	due time.Time
}

// newReceiptSender returns a sender of receipts delay after acceptance;
// start starts it.
func newReceiptSender(delay time.Duration) *receiptSender {
	return &receiptSender{delay: delay, wake: make(chan struct{}, receiptSenders)}
}

// start starts the senders posting to the receipts endpoint at addr.
func (rs *receiptSender) start(addr string) {
	ctx, cancel := context.WithCancel(context.Background())
	rs.stop = cancel
	rs.url = "http://" + addr + receipt.Path + benchProvider
	rs.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: receiptSenders, MaxConnsPerHost: receiptSenders}}
	for range receiptSenders {
		rs.done.Add(1)
		go func() {
			defer rs.done.Done()
			rs.run(ctx)
		}()
	}
}

// schedule queues the receipt of message id, due delay from now.
func (rs *receiptSender) schedule(id string) {
	rs.pending.Add(1)
	rs.push(pendingReceipt{id: id, due: time.Now().Add(rs.delay)})
}

func (rs *receiptSender) push(p pendingReceipt) {
	rs.mu.Lock()
	rs.queue = append(rs.queue, p)
	rs.mu.Unlock()
	select {
	case rs.wake <- struct{}{}:
	default:
	}
}

func (rs *receiptSender) pop() (pendingReceipt, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.queue) == 0 {
		return pendingReceipt{}, false
	}
	p := rs.queue[0]
	rs.queue[0] = pendingReceipt{}
	rs.queue = rs.queue[1:]
	return p, true
}

// run is one sender: it takes the oldest receipt, waits until it is due,
// and posts it.
func (rs *receiptSender) run(ctx context.Context) {
	for {
		p, ok := rs.pop()
		if !ok {
			select {
			case <-rs.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		if err := pause.For(ctx, time.Until(p.due)); err != nil {
			return
		}
		if rs.post(ctx, p.id) {
			rs.sent.Add(1)
			rs.pending.Add(-1)
			continue
		}
		rs.failed.Add(1)
		p.due = time.Now().Add(receiptRetry)
		rs.push(p)
	}
}

// post sends one receipt: delivered, in the endpoint's default JSON
// fields, with the provider's bearer token.
func (rs *receiptSender) post(ctx context.Context, id string) bool {
	body, _ := json.Marshal(map[string]string{"id": id, "status": "DELIVRD"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rs.url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchReceiptsToken)
	resp, err := rs.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// Close stops the senders; receipts not posted yet stay unsent.
func (rs *receiptSender) Close() {
	if rs.stop == nil {
		return
	}
	rs.stop()
	rs.done.Wait()
	rs.client.CloseIdleConnections()
}
