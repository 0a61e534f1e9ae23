package demo

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/channel/webhook"
)

// CallbackReceiver is the demo producer's endpoint for herald's status
// callbacks, as a producer would write it: it verifies each request's
// Standard Webhooks signature with the subscription's secret, drops
// repeats by webhook-id, and records each route's events in the order they
// arrive. One request in twenty is answered 503 (before it is recorded),
// so herald retries it.
type CallbackReceiver struct {
	// URL is where it listens; Secret the whsec_ secret the producer
	// subscribed with.
	URL    string
	Secret string

	// Requests counts every request; Refused the 503s; BadSignatures the
	// requests whose signature did not verify (answered 401); Repeats the
	// callbacks received again after a 2xx (same webhook-id).
	Requests, Refused, BadSignatures, Repeats atomic.Int64

	key     []byte
	mu      sync.Mutex
	seen    map[string]bool     // webhook-ids taken
	byRoute map[string][]string // "notification_id route_id" → events in arrival order

	// Metadata: each notification's first callback, and a signal closed
	// (and replaced) whenever a callback is taken.
	firsts map[string]TakenCallback
	taken  chan struct{}
}

// TakenCallback is a notification's first callback as the receiver took
// it: the path it was posted to, its event and the intent's metadata.
type TakenCallback struct {
	Path     string
	Event    string
	Metadata map[string]string
}

// callbackTolerance is how far a callback's webhook-timestamp may be from
// the receiver's clock, as Standard Webhooks libraries check.
const callbackTolerance = 5 * time.Minute

func newCallbackReceiver() *CallbackReceiver {
	key := make([]byte, 24)
	_, _ = rand.Read(key)
	return &CallbackReceiver{
		Secret:  webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key),
		key:     key,
		seen:    map[string]bool{},
		byRoute: map[string][]string{},
		firsts:  map[string]TakenCallback{},
		taken:   make(chan struct{}),
	}
}

// ServeHTTP takes one callback.
func (c *CallbackReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.Requests.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := r.Header.Get("webhook-id")
	if !c.verify(id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body) {
		c.BadSignatures.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if n%20 == 7 {
		c.Refused.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var p struct {
		Data struct {
			Event          string            `json:"event"`
			NotificationID string            `json:"notification_id"`
			RouteID        string            `json:"route_id"`
			Metadata       map[string]string `json:"metadata"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Data.Event == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	if c.seen[id] {
		c.Repeats.Add(1)
	} else {
		c.seen[id] = true
		route := p.Data.NotificationID + " " + p.Data.RouteID
		c.byRoute[route] = append(c.byRoute[route], p.Data.Event)
		if _, ok := c.firsts[p.Data.NotificationID]; !ok {
			c.firsts[p.Data.NotificationID] = TakenCallback{Path: r.URL.Path, Event: p.Data.Event, Metadata: p.Data.Metadata}
		}
		close(c.taken)
		c.taken = make(chan struct{})
	}
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// verify checks the Standard Webhooks signature of one request: one of
// the v1 signatures is the HMAC of id.timestamp.body, and the timestamp is
// recent.
func (c *CallbackReceiver) verify(id, timestamp, signatures string, body []byte) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || id == "" || time.Since(time.Unix(ts, 0)).Abs() > callbackTolerance {
		return false
	}
	want := webhook.Sign([][]byte{c.key}, id, ts, body)
	for _, sig := range strings.Fields(signatures) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// WaitFirst waits until the receiver has taken a callback about
// notification id and returns the first; it returns ctx's error if ctx is
// done first.
func (c *CallbackReceiver) WaitFirst(ctx context.Context, id string) (TakenCallback, error) {
	for {
		c.mu.Lock()
		got, ok := c.firsts[id]
		taken := c.taken
		c.mu.Unlock()
		if ok {
			return got, nil
		}
		select {
		case <-taken:
		case <-ctx.Done():
			return TakenCallback{}, ctx.Err()
		}
	}
}

// WaitEvent waits until the receiver has taken a callback with event
// about notification id; it returns ctx's error if ctx is done first.
func (c *CallbackReceiver) WaitEvent(ctx context.Context, id, event string) error {
	for {
		c.mu.Lock()
		found := false
		for route, evs := range c.byRoute {
			if strings.HasPrefix(route, id+" ") && slices.Contains(evs, event) {
				found = true
				break
			}
		}
		taken := c.taken
		c.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-taken:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Received returns the callbacks taken, by event.
func (c *CallbackReceiver) Received() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for _, evs := range c.byRoute {
		for _, e := range evs {
			out[e]++
		}
	}
	return out
}

// Order returns how many routes the receiver heard about, and how many of
// them broke herald's per-route order: a receipt's event (delivered,
// undelivered, expired) before the route's published, or without it.
func (c *CallbackReceiver) Order() (routes, outOfOrder int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, route := range slices.Sorted(maps.Keys(c.byRoute)) {
		evs := c.byRoute[route]
		published := slices.Index(evs, "published")
		for i, e := range evs {
			if e == "delivered" || e == "undelivered" || (e == "expired" && published >= 0) {
				if published < 0 || i < published {
					outOfOrder++
					break
				}
			}
		}
	}
	return len(c.byRoute), outOfOrder
}
