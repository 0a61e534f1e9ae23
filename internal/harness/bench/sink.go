package bench

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/channel"
)

// sink is the bench channel: every attempt takes the configured latency and
// fails transiently with the configured share; it counts attempts and
// deliveries, and tells a waiting pick-up probe when a delivery starts.
type sink struct {
	latency   time.Duration
	failShare float64

	attempts  atomic.Int64
	delivered atomic.Int64
	// ids numbers the message ids the sink gives as sms/bench.
	ids atomic.Int64
	// picked receives the start time of probe deliveries (content marked
	// with probeMarker); sends never block.
	picked chan time.Time
	// requests counts the HTTP requests the sink's servers received;
	// rejected those that were not the request herald's driver makes
	// (checkWebhook, checkSMS), answered 400 without an attempt, and
	// rejection says why the last one was.
	requests, rejected atomic.Int64
	rejection          atomic.Pointer[string]
}

// accept counts an HTTP request and checks it with check; a request that
// fails the check is answered 400 (a permanent failure to both engines)
// and accept returns false.
func (s *sink) accept(w http.ResponseWriter, r *http.Request, body []byte, check func(*http.Request, []byte) error) bool {
	s.requests.Add(1)
	if err := check(r, body); err != nil {
		s.rejected.Add(1)
		why := err.Error()
		s.rejection.Store(&why)
		w.WriteHeader(http.StatusBadRequest)
		return false
	}
	return true
}

func newSink(latency time.Duration, failShare float64) *sink {
	return &sink{latency: latency, failShare: failShare, picked: make(chan time.Time, 1)}
}

// attempt is one delivery attempt; it reports whether it succeeded.
func (s *sink) attempt(ctx context.Context, probe bool) bool {
	if probe {
		select {
		case s.picked <- time.Now():
		default:
		}
	}
	s.attempts.Add(1)
	if s.latency > 0 {
		t := time.NewTimer(s.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
	if s.failShare > 0 && rand.Float64() < s.failShare {
		return false
	}
	s.delivered.Add(1)
	return true
}

// drainPicked empties picked before a probe.
func (s *sink) drainPicked() {
	for {
		select {
		case <-s.picked:
		default:
			return
		}
	}
}

// Deliver implements channel.Deliverer.
func (s *sink) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	if !s.attempt(ctx, msg != nil && isProbe(msg.Content)) {
		return channel.Outcome{Class: channel.Transient, Classification: "bench_failure", Message: "bench: injected transient failure"}
	}
	return channel.Outcome{Class: channel.Delivered, Classification: "bench"}
}

// serveHTTP runs the sink as a loopback webhook receiver (2xx delivered,
// 503 injected failure, 400 not herald's request) for herald's serve
// processes and River's HTTP worker, and returns its URL and a stop
// function.
func (s *sink) serveHTTP() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if !s.accept(w, r, body, checkWebhook) {
				return
			}
			if !s.attempt(r.Context(), isProbe(body)) {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/hook", func() { _ = srv.Close() }, nil
}

// probeMarker marks a probe's content, so the sink can tell a probe's
// delivery from the workload's. It is only the key, because jsonb (River's
// args) rewrites the spacing around it.
const probeMarker = `"probe"`

// isProbe reports whether content (or a webhook body holding it) is a
// probe's.
func isProbe(content []byte) bool { return bytes.Contains(content, []byte(probeMarker)) }

// probePayload returns a probe's content of n bytes (n >= 24).
func probePayload(n int) []byte {
	const frame = `{"probe":true,"pad":""}`
	n = max(n, len(frame))
	return []byte(`{"probe":true,"pad":"` + strings.Repeat("x", n-len(frame)) + `"}`)
}
