package callback_test

// End to end on a real Postgres and real loopback HTTP: producers submit
// through the Go client, an engine delivers their SMS routes (a test
// Deliverer) and the callbacks the database creates (this package's
// Deliverer, through engine.New), and a producer's endpoint records what it
// receives. The delivery status a receipts matcher would set is set with an
// UPDATE, the test's own SQL like every statement here that reads or moves
// rows to check them.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// secret is the producers' subscription secret in the tests.
var secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("a callback key of 32 bytes......"))

// received is one callback as the endpoint got it.
type received struct {
	event, notificationID, routeID, webhookID string
	data                                      map[string]any
}

// endpoint is a producer's callback endpoint: it answers 503 to the first
// failFirst requests (all of them while down is set), checks every
// signature, and records the callbacks it accepted, in order.
type endpoint struct {
	t         *testing.T
	srv       *httptest.Server
	mu        sync.Mutex
	failFirst int
	down      bool
	requests  int
	got       []received
}

func newEndpoint(t *testing.T, failFirst int) *endpoint {
	e := &endpoint{t: t, failFirst: failFirst}
	key, err := webhook.ParseSecret(secret)
	require.NoError(t, err)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.requests++
		if e.down || e.requests <= e.failFirst {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		id := r.Header.Get(webhook.HeaderID)
		ts, err := strconv.ParseInt(r.Header.Get(webhook.HeaderTimestamp), 10, 64)
		if err != nil ||
			webhook.Sign([][]byte{key}, id, ts, body) != r.Header.Get(webhook.HeaderSignature) {
			e.t.Errorf("callback with a bad signature: %q", r.Header.Get(webhook.HeaderSignature))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var msg struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			e.t.Errorf("callback body is not JSON: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ev, _ := msg.Data["event"].(string)
		if msg.Type != "route."+ev {
			e.t.Errorf("callback type %q for event %q", msg.Type, ev)
		}
		nid, _ := msg.Data["notification_id"].(string)
		rid, _ := msg.Data["route_id"].(string)
		e.got = append(e.got, received{event: ev, notificationID: nid, routeID: rid, webhookID: id, data: msg.Data})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) setDown(down bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = down
}

func (e *endpoint) callbacks() []received {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]received(nil), e.got...)
}

// events returns, per route id, the events received in order.
func (e *endpoint) events() map[string][]string {
	out := map[string][]string{}
	for _, c := range e.callbacks() {
		out[c.routeID] = append(out[c.routeID], c.event)
	}
	return out
}

type testBundle struct {
	pool   *pgxpool.Pool
	client *herald.Client
	reg    *prometheus.Registry
}

// setup starts an engine whose sms channel publishes every route, with the
// callback channel allowed onto loopback and retrying fast.
func setup(t *testing.T, maxAttempts int) *testBundle {
	t.Helper()
	pool := pgtemp.NewPool(t)
	reg := prometheus.NewRegistry()
	e, err := engine.New(pool, &engine.Config{
		Dispatch: dispatch.Config{
			Channels: map[string]dispatch.ChannelConfig{
				channel.SMS: {Deliverer: channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
					return channel.Outcome{Class: channel.Delivered}
				})},
			},
			PollInterval: 50 * time.Millisecond,
		},
		Callbacks: engine.Callbacks{
			AllowPrivate: true,
			MaxAttempts:  maxAttempts,
			Backoff:      dispatch.BackoffConfig{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond},
			OrderRetry:   20 * time.Millisecond,
		},
		Registry: reg,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	c, err := herald.NewClient(pool, nil)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &testBundle{pool: pool, client: c, reg: reg}
}

// subscribe gives producer a subscription to url (the engine's login may
// set another producer's).
func (tb *testBundle) subscribe(t *testing.T, producer, url string, events ...string) {
	t.Helper()
	if events == nil {
		events = []string{}
	}
	_, err := store.New().CallbackSubscriptionSet(context.Background(), tb.pool, store.CallbackSubscriptionSetParams{
		Url: url, Events: events, Secret: &secret, ForProducer: &producer,
	})
	require.NoError(t, err)
}

func (tb *testBundle) submit(t *testing.T, producer, key, callbackURL string, phones ...string) *herald.Receipt {
	t.Helper()
	r, err := tb.client.Submit(context.Background(), &herald.Intent{
		NotificationType: "order.shipped", Producer: producer, IdempotencyKey: key,
		Channels: []string{"sms"}, Audience: herald.Audience{SMS: phones},
		Content:   herald.Content{SMS: &herald.SMSContent{Body: "shipped"}},
		RequestID: "req-" + key, TraceID: "trace-" + key, CallbackURL: callbackURL,
	})
	require.NoError(t, err)
	return r
}

// waitRoutes waits until every route of notification nid has status.
func (tb *testBundle) waitRoutes(t *testing.T, nid, status string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var left int
		require.NoError(t, tb.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND status <> $2`, nid, status).Scan(&left))
		return left == 0
	}, 10*time.Second, 20*time.Millisecond)
}

// setDeliveryStatus does what the receipts matcher does.
func (tb *testBundle) setDeliveryStatus(t *testing.T, nid, rid, status string) {
	t.Helper()
	_, err := tb.pool.Exec(context.Background(), `UPDATE herald.routes
		SET delivery_status = $3, delivery_status_at = now(), delivery_error = CASE WHEN $3 = 'delivered' THEN '' ELSE 'EXPIRED_AT_CARRIER' END
		WHERE notification_id = $1 AND route_id = $2`, nid, rid, status)
	require.NoError(t, err)
}

func (tb *testBundle) callbackCount(t *testing.T, producer string) int {
	t.Helper()
	var n int
	require.NoError(t, tb.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM herald.records WHERE producer = $1 AND 'callback' = ANY (channels)`, producer).Scan(&n))
	return n
}

func TestDeliverer_OncePerEventInRouteOrder(t *testing.T) {
	t.Parallel()
	tb := setup(t, 50)
	ep := newEndpoint(t, 4)
	tb.subscribe(t, "shop", ep.srv.URL+"/herald")

	r := tb.submit(t, "shop", "order-1", "", "+14155550101", "+14155550102")
	require.Len(t, r.RouteIDs, 2)
	tb.waitRoutes(t, r.NotificationID, "published")
	// The receipts arrive while the endpoint still fails: the delivered and
	// undelivered callbacks exist before their published ones got through.
	tb.setDeliveryStatus(t, r.NotificationID, r.RouteIDs[0], "delivered")
	tb.setDeliveryStatus(t, r.NotificationID, r.RouteIDs[1], "undelivered")

	want := map[string][]string{
		r.RouteIDs[0]: {"published", "delivered"},
		r.RouteIDs[1]: {"published", "undelivered"},
	}
	require.Eventually(t, func() bool {
		got := ep.events()
		return len(got[r.RouteIDs[0]]) >= 2 && len(got[r.RouteIDs[1]]) >= 2
	}, 20*time.Second, 20*time.Millisecond)
	// Published first on each route, and each event exactly once (the
	// endpoint acknowledged each, so none was sent twice).
	require.Equal(t, want, ep.events())

	// What the payload carries.
	for _, c := range ep.callbacks() {
		require.Equal(t, r.NotificationID, c.notificationID)
		require.Equal(t, "sms", c.data["channel"])
		require.Equal(t, "order.shipped", c.data["notification_type"])
		require.Equal(t, "req-order-1", c.data["request_id"])
		require.Equal(t, "trace-order-1", c.data["trace_id"])
		require.True(t, strings.HasPrefix(c.data["recipient_ref"].(string), "+1415555010"))
		require.Equal(t, "published", c.data["status"])
		require.NotEmpty(t, c.data["occurred_at"])
		require.NotEmpty(t, c.data["published_at"])
		switch c.event {
		case "published":
			require.Nil(t, c.data["error"])
		case "undelivered":
			require.Equal(t, "undelivered", c.data["delivery_status"])
			require.Equal(t, "EXPIRED_AT_CARRIER", c.data["error"].(map[string]any)["message"])
		}
	}

	// At most one callback per route and event: the same status again, or
	// back and forth, creates none.
	require.Equal(t, 4, tb.callbackCount(t, "shop"))
	tb.setDeliveryStatus(t, r.NotificationID, r.RouteIDs[0], "unknown")
	tb.setDeliveryStatus(t, r.NotificationID, r.RouteIDs[0], "delivered")
	require.Equal(t, 4, tb.callbackCount(t, "shop"))

	// The producer reads its callbacks as its own notifications; they were
	// created unwatched, so they report nothing themselves.
	var watched int
	require.NoError(t, tb.pool.QueryRow(context.Background(), `SELECT count(*) FROM herald.routes r
		JOIN herald.records rec USING (notification_id)
		WHERE rec.producer = 'shop' AND r.channel = 'callback' AND r.notify_producer`).Scan(&watched))
	require.Zero(t, watched)
	// Each is published once its completion is written, which follows the
	// endpoint's acknowledgement (the last one may still be on its way).
	require.Eventually(t, func() bool {
		var open int
		require.NoError(t, tb.pool.QueryRow(context.Background(), `SELECT count(*) FROM herald.routes r
			JOIN herald.records rec USING (notification_id)
			WHERE rec.producer = 'shop' AND r.channel = 'callback' AND r.status <> 'published'`).Scan(&open))
		return open == 0
	}, 20*time.Second, 20*time.Millisecond)

	// The attempts are counted under channel callback.
	families, err := tb.reg.Gather()
	require.NoError(t, err)
	outcomes := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "herald_route_attempts_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["channel"] == channel.Callback {
				outcomes[labels["outcome"]] += m.GetCounter().GetValue()
			}
		}
	}
	require.Equal(t, 4.0, outcomes["delivered"], "outcomes: %v", outcomes)
	require.GreaterOrEqual(t, outcomes["transient"], 4.0, "outcomes: %v", outcomes)
}

func TestDeliverer_FollowsSubscriptionAndURL(t *testing.T) {
	t.Parallel()
	tb := setup(t, 20)
	sub := newEndpoint(t, 0)
	own := newEndpoint(t, 0)
	tb.subscribe(t, "shop", sub.srv.URL, "dead_lettered", "delivered")

	// Per intent: the intent's callback_url, signed with the subscription's
	// secret, with the subscription's events only.
	r := tb.submit(t, "shop", "order-2", own.srv.URL+"/order-2", "+14155550103")
	tb.waitRoutes(t, r.NotificationID, "published")
	tb.setDeliveryStatus(t, r.NotificationID, r.RouteIDs[0], "delivered")
	require.Eventually(t, func() bool { return len(own.callbacks()) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "delivered", own.callbacks()[0].event)
	require.Empty(t, sub.callbacks())

	// A producer without a subscription or a callback_url pays nothing:
	// its routes are not watched, and no callback is created.
	q := tb.submit(t, "quiet", "order-3", "", "+14155550104")
	tb.waitRoutes(t, q.NotificationID, "published")
	var watched bool
	require.NoError(t, tb.pool.QueryRow(context.Background(),
		`SELECT bool_or(notify_producer) FROM herald.routes WHERE notification_id = $1`, q.NotificationID).Scan(&watched))
	require.False(t, watched)
	require.Zero(t, tb.callbackCount(t, "quiet"))

	// A callback_url without a subscription is refused at submit: its
	// callbacks would have nothing to be signed with.
	_, err := tb.client.Submit(context.Background(), &herald.Intent{
		NotificationType: "order.shipped", Producer: "nosub", IdempotencyKey: "order-4",
		Channels: []string{"sms"}, Audience: herald.Audience{SMS: []string{"+14155550105"}},
		Content: herald.Content{SMS: &herald.SMSContent{Body: "shipped"}}, CallbackURL: own.srv.URL + "/order-4",
	})
	var verr *herald.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, herald.CodeCallbackURLNeedsSubscription, verr.Code())
	// A subscription deleted after the submit (here in the same
	// transaction) leaves callbacks with nothing to be signed with: they
	// are dead-lettered with a hint.
	ctx := context.Background()
	tb.subscribe(t, "nosub", own.srv.URL)
	tx, err := tb.pool.Begin(ctx)
	require.NoError(t, err)
	n, err := tb.client.SubmitTx(ctx, tx, &herald.Intent{
		NotificationType: "order.shipped", Producer: "nosub", IdempotencyKey: "order-4",
		Channels: []string{"sms"}, Audience: herald.Audience{SMS: []string{"+14155550105"}},
		Content: herald.Content{SMS: &herald.SMSContent{Body: "shipped"}}, CallbackURL: own.srv.URL + "/order-4",
	})
	require.NoError(t, err)
	_, err = store.New().CallbackSubscriptionDelete(ctx, tx, &[]string{"nosub"}[0])
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	tb.waitRoutes(t, n.NotificationID, "published")
	require.Eventually(t, func() bool {
		var hint string
		err := tb.pool.QueryRow(context.Background(), `SELECT recovery_hint FROM herald.failed_callbacks_view
			WHERE producer = 'nosub' AND classification = 'callback_no_subscription' AND notification_id = $1`,
			n.NotificationID).Scan(&hint)
		return err == nil && strings.Contains(hint, "callback_subscription_set")
	}, 10*time.Second, 20*time.Millisecond)
}

func TestDeliverer_DownEndpointDeadLettered(t *testing.T) {
	t.Parallel()
	tb := setup(t, 3)
	ep := newEndpoint(t, 0)
	ep.setDown(true)
	tb.subscribe(t, "shop", ep.srv.URL)

	r := tb.submit(t, "shop", "order-5", "", "+14155550106")
	tb.waitRoutes(t, r.NotificationID, "published")
	tb.setDeliveryStatus(t, r.NotificationID, r.RouteIDs[0], "delivered")
	// Both callbacks die: published after its attempts, delivered after
	// waiting behind it and then failing too.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, tb.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM herald.failed_callbacks_view WHERE producer = 'shop' AND notification_id = $1`,
			r.NotificationID).Scan(&n))
		return n == 2
	}, 20*time.Second, 20*time.Millisecond)
	require.Empty(t, ep.callbacks())

	ep.setDown(false)
	op, err := operator.New(tb.pool, nil)
	require.NoError(t, err)
	res, err := op.Replay(context.Background(), operator.Filter{Channel: channel.Callback}, operator.ReplayOpts{Actor: "test", Reason: "endpoint is back"})
	require.NoError(t, err)
	require.Equal(t, 2, res.Moved)
	require.Eventually(t, func() bool { return len(ep.callbacks()) == 2 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string][]string{r.RouteIDs[0]: {"published", "delivered"}}, ep.events())
	require.Equal(t, 2, tb.callbackCount(t, "shop"))
}
