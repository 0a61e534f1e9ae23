package dispatch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// testSecret is a Standard Webhooks secret for the test deliverers.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

type testBundle struct {
	pool *pgxpool.Pool
	q    *store.Queries
	seq  atomic.Int64
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{pool: pgtemp.NewPool(t), q: store.New()}
}

// routeSpec is one notification with one route, as a fixture.
type routeSpec struct {
	channel     string
	ref         string
	maxAttempts int32
	priority    int16
	expiresAt   *time.Time
	sendAt      *time.Time
	producer    string // "shop" when empty
	payload     string // the default payload's channels when empty
}

type routeKey struct{ notificationID, routeID string }

// insert stores one record per spec, each with one route, through the
// same statement the client uses.
func (b *testBundle) insert(t testing.TB, specs ...routeSpec) []routeKey {
	t.Helper()
	var p store.RecordInsertManyParams
	p.IdempotencyWindowSeconds = 86400
	keys := make([]routeKey, len(specs))
	ts := func(tp *time.Time) time.Time {
		if tp == nil {
			return time.Time{} // not set
		}
		return *tp
	}
	payload := `{"email":{"subject":"Your order shipped","text":"It is on its way."},"sms":{"body":"Order shipped"},"webhook":{"order":9}}`
	for i, s := range specs {
		n := b.seq.Add(1)
		nid := fmt.Sprintf("ntf_%d_%d", time.Now().UnixNano(), n)
		rid := fmt.Sprintf("%s:%06d", s.channel, n)
		keys[i] = routeKey{nid, rid}
		p.NotificationIds = append(p.NotificationIds, nid)
		p.NotificationTypes = append(p.NotificationTypes, "order.shipped")
		p.Producers = append(p.Producers, cmp.Or(s.producer, "shop"))
		p.AudienceKinds = append(p.AudienceKinds, "addresses")
		p.RecipientUserIds = append(p.RecipientUserIds, []byte(`[]`))
		p.PayloadJsons = append(p.PayloadJsons, cmp.Or(s.payload, payload))
		p.IdempotencyKeys = append(p.IdempotencyKeys, nid)
		p.RequestFingerprints = append(p.RequestFingerprints, "fp")
		p.RequestIds = append(p.RequestIds, "req-1")
		p.TraceIds = append(p.TraceIds, "trace-1")
		p.OccurredAts = append(p.OccurredAts, time.Now())
		p.ChannelLists = append(p.ChannelLists, s.channel)
		p.Priorities = append(p.Priorities, s.priority)
		p.SendAts = append(p.SendAts, ts(s.sendAt))
		p.ExpiresAts = append(p.ExpiresAts, ts(s.expiresAt))
		p.CallbackUrls = append(p.CallbackUrls, "")
		p.RouteNotificationIds = append(p.RouteNotificationIds, nid)
		p.RouteIds = append(p.RouteIds, rid)
		p.RouteChannels = append(p.RouteChannels, s.channel)
		p.RouteRecipientRefs = append(p.RouteRecipientRefs, s.ref)
		p.RouteMaxAttempts = append(p.RouteMaxAttempts, s.maxAttempts)
		p.RoutePriorities = append(p.RoutePriorities, s.priority)
		p.RouteSendAts = append(p.RouteSendAts, ts(s.sendAt))
		p.RouteExpiresAts = append(p.RouteExpiresAts, ts(s.expiresAt))
		p.RouteSmsEncodings = append(p.RouteSmsEncodings, "")
		p.RouteSmsSegments = append(p.RouteSmsSegments, 0)
	}
	_, err := b.q.RecordInsertMany(context.Background(), b.pool, p)
	require.NoError(t, err)
	return keys
}

// route reads one route.
func (b *testBundle) route(t testing.TB, k routeKey) store.HeraldRoute {
	t.Helper()
	rows, err := b.q.RouteListByNotification(context.Background(), b.pool, k.notificationID)
	require.NoError(t, err)
	for _, r := range rows {
		if r.RouteID == k.routeID {
			return r
		}
	}
	require.FailNow(t, "route not found", "%v", k)
	return store.HeraldRoute{}
}

// waitStatus waits until the route has status and returns it.
func (b *testBundle) waitStatus(t *testing.T, k routeKey, status string) store.HeraldRoute {
	t.Helper()
	var r store.HeraldRoute
	require.Eventually(t, func() bool {
		r = b.route(t, k)
		return r.Status == status
	}, 15*time.Second, 5*time.Millisecond, "route %v never reached %s (last: %s)", k, status, r.Status)
	return r
}

// newDispatcher returns a Dispatcher on the bundle's database, closed
// when the test ends if it never ran.
func (b *testBundle) newDispatcher(t *testing.T, cfg *Config) *Dispatcher {
	t.Helper()
	d, err := New(b.pool, cfg)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d
}

// start runs a dispatcher until the test ends.
func (b *testBundle) start(t *testing.T, cfg *Config) *Dispatcher {
	t.Helper()
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	d := b.newDispatcher(t, cfg)
	d.signals.Init()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return d
}

// awaitMoment reads the signals of d (started by b.start) until want,
// failing the test after ten seconds.
func awaitMoment(t *testing.T, d *Dispatcher, want moment) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-d.signals.C():
			if got == want {
				return
			}
		case <-timeout:
			require.FailNow(t, "the dispatcher never signalled", "%+v", want)
		}
	}
}

// sink is a loopback webhook receiver answering a scripted status per
// request (the last one repeats) and recording when each request came.
type sink struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	times    []time.Time
	headers  []http.Header
}

func newSink(t *testing.T, statuses ...int) *sink {
	t.Helper()
	s := &sink{statuses: statuses}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.times)
		s.times = append(s.times, time.Now())
		s.headers = append(s.headers, r.Header.Clone())
		st := s.statuses[min(n, len(s.statuses)-1)]
		s.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) requests() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

func webhookDeliverer(t *testing.T) channel.Deliverer {
	t.Helper()
	d, err := webhook.New(webhook.Config{Secrets: []string{testSecret}, AllowPrivate: true, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// maxJitter puts every backoff at its ceiling, so gaps are predictable.
func maxJitter() float64 { return 1 }

func TestDispatcher_RetriesWithBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newSink(t, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusOK)
	base := 150 * time.Millisecond
	b.start(t, &Config{Channels: map[string]ChannelConfig{
		channel.Webhook: {Deliverer: webhookDeliverer(t), Backoff: BackoffConfig{Base: base, RandFunc: maxJitter}},
	}})
	k := b.insert(t, routeSpec{channel: channel.Webhook, ref: s.URL + "/hook"})[0]

	r := b.waitStatus(t, k, "published")
	require.EqualValues(t, 3, r.AttemptCount)
	require.NotNil(t, r.PublishedAt)
	require.Nil(t, r.NextAttemptAt)
	require.Equal(t, "http_502", r.LastErrorClassification, "the last failure stays on record")

	times := s.requests()
	require.Len(t, times, 3)
	// Backoff ceilings are base then 2·base; jitter is pinned at the top.
	require.GreaterOrEqual(t, times[1].Sub(times[0]), base)
	require.GreaterOrEqual(t, times[2].Sub(times[1]), 2*base)
	// webhook-id is stable across retries.
	require.Equal(t, s.headers[0].Get("webhook-id"), s.headers[2].Get("webhook-id"))
}

func TestDispatcher_GoneIsDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newSink(t, http.StatusGone)
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.Webhook: {Deliverer: webhookDeliverer(t)}}})
	k := b.insert(t, routeSpec{channel: channel.Webhook, ref: s.URL})[0]

	r := b.waitStatus(t, k, "dead_letter")
	require.EqualValues(t, 1, r.AttemptCount)
	require.NotNil(t, r.DeadLetteredAt)
	require.Len(t, s.requests(), 1)
	dl := b.deadLetter(t, k)
	require.Equal(t, "http_410", dl.FailureClassification)
	require.NotEmpty(t, dl.RecoveryHint)
	require.EqualValues(t, DefaultMaxAttempts, dl.MaxAttempts)
}

func TestDispatcher_DeadLetterLogHasNoAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newSink(t, http.StatusGone)
	var logs syncBuffer
	b.start(t, &Config{
		Channels: map[string]ChannelConfig{channel.Webhook: {Deliverer: webhookDeliverer(t)}},
		Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	k := b.insert(t, routeSpec{channel: channel.Webhook, ref: s.URL})[0]
	b.waitStatus(t, k, "dead_letter")

	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "route dead-lettered") {
				return json.Unmarshal([]byte(l), &line) == nil
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, k.notificationID, line["notification_id"])
	require.Equal(t, k.routeID, line["route_id"])
	require.Equal(t, channel.Webhook, line["channel"])
	require.EqualValues(t, 1, line["attempt"])
	require.Equal(t, "trace-1", line["trace_id"])
	require.NotContains(t, logs.String(), s.URL, "the recipient's address is never logged")
}

// syncBuffer is a bytes.Buffer safe for the dispatcher's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (b *testBundle) deadLetter(t *testing.T, k routeKey) benchstore.HeraldDeadLetter {
	t.Helper()
	dls, err := benchstore.New().DeadLetterListByNotification(context.Background(), b.pool, k.notificationID)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	return dls[0]
}

func TestDispatcher_ExhaustedFillsDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newSink(t, http.StatusServiceUnavailable)
	b.start(t, &Config{Channels: map[string]ChannelConfig{
		channel.Webhook: {Deliverer: webhookDeliverer(t), MaxAttempts: 3, Backoff: BackoffConfig{Base: 10 * time.Millisecond}},
	}})
	ks := b.insert(t,
		routeSpec{channel: channel.Webhook, ref: s.URL},                 // channel default: 3
		routeSpec{channel: channel.Webhook, ref: s.URL, maxAttempts: 2}, // its own budget
	)

	for i, want := range []int32{3, 2} {
		r := b.waitStatus(t, ks[i], "dead_letter")
		require.Equal(t, want, r.AttemptCount)
		dl := b.deadLetter(t, ks[i])
		require.Equal(t, ks[i].notificationID, dl.NotificationID)
		require.Equal(t, ks[i].routeID, dl.RouteID)
		require.Equal(t, channel.Webhook, dl.Channel)
		require.Equal(t, s.URL, dl.RecipientRef)
		require.Equal(t, want, dl.FinalAttemptCount)
		require.Equal(t, want, dl.MaxAttempts, "the effective budget is recorded")
		require.Equal(t, "http_503", dl.FailureClassification)
		require.Contains(t, dl.FailureMessage, fmt.Sprintf("gave up after %d attempts", want))
		require.Contains(t, dl.RecoveryHint, "replay")
		require.False(t, dl.CreatedAt.IsZero())
		require.Equal(t, "http_503", r.LastErrorClassification)
		require.NotEmpty(t, r.LastErrorMessage)
		require.NotNil(t, r.LastErrorAt)
	}
	require.Len(t, s.requests(), 5)
}

func TestDispatcher_CanceledNeverAttempted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newSink(t, http.StatusOK)
	ks := b.insert(t, routeSpec{channel: channel.Webhook, ref: s.URL}, routeSpec{channel: channel.Webhook, ref: s.URL + "/other"})
	_, err := b.q.RouteCancelByNotification(context.Background(), b.pool, store.RouteCancelByNotificationParams{NotificationID: ks[0].notificationID, Actor: "test"})
	require.NoError(t, err)
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.Webhook: {Deliverer: webhookDeliverer(t)}}})

	b.waitStatus(t, ks[1], "published")
	r := b.route(t, ks[0])
	require.Equal(t, "canceled", r.Status)
	require.Zero(t, r.AttemptCount)
	require.Len(t, s.requests(), 1)
}

func TestDispatcher_ExpiredIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newSink(t, http.StatusOK)
	past := time.Now().Add(-time.Minute)
	k := b.insert(t, routeSpec{channel: channel.Webhook, ref: s.URL, expiresAt: &past})[0]
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.Webhook: {Deliverer: webhookDeliverer(t)}}})

	r := b.waitStatus(t, k, "dead_letter")
	require.Equal(t, ClassExpired, r.LastErrorClassification)
	require.Equal(t, ClassExpired, b.deadLetter(t, k).FailureClassification)
	require.Empty(t, s.requests())
}

func TestDispatcher_UserRoutesResolveOrSkip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, u := range []store.RecipientUpsertParams{
		{UserID: "42", Email: "zoe@example.com", Locale: "fr-FR", OptedOut: []string{}},
		{UserID: "43", Email: "max@example.com", OptedOut: []string{channel.Email}},
		{UserID: "44", Phone: "+33612345678", OptedOut: []string{}},
	} {
		u.Owner = new(string) // the shared directory: every producer's routes resolve through it
		require.NoError(t, b.q.RecipientUpsert(ctx, b.pool, u))
	}
	var mu sync.Mutex
	var got []channel.Message
	record := channel.DelivererFunc(func(_ context.Context, m *channel.Message) channel.Outcome {
		mu.Lock()
		got = append(got, *m)
		mu.Unlock()
		return channel.Outcome{Class: channel.Delivered, ProviderMessageID: "prov-1"}
	})
	ks := b.insert(t,
		routeSpec{channel: channel.Email, ref: "user:42"},
		routeSpec{channel: channel.Email, ref: "user:43"},
		routeSpec{channel: channel.Email, ref: "user:44"},
		routeSpec{channel: channel.Email, ref: "user:45"},
	)
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.Email: {Deliverer: record}}})

	r := b.waitStatus(t, ks[0], "published")
	require.Equal(t, "zoe@example.com", r.ResolvedEmail)
	require.Equal(t, "fr-FR", r.ResolvedLocale)
	require.Equal(t, "prov-1", r.ProviderMessageID)
	require.Equal(t, ClassOptedOut, b.waitStatus(t, ks[1], "skipped").LastErrorClassification)
	require.Equal(t, channel.ClassNoAddress, b.waitStatus(t, ks[2], "skipped").LastErrorClassification)
	r = b.waitStatus(t, ks[3], "skipped")
	require.Equal(t, ClassUnknownRecipient, r.LastErrorClassification)
	require.NotNil(t, r.SkippedAt)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1, "only the resolvable route reaches the channel")
	require.Equal(t, "zoe@example.com", got[0].Address)
	require.Equal(t, "fr-FR", got[0].Locale)
	require.Equal(t, 1, got[0].Attempt)
	require.Equal(t, "trace-1", got[0].TraceID)
	require.JSONEq(t, `{"subject":"Your order shipped","text":"It is on its way."}`, string(got[0].Content))
}

func TestDispatcher_SkipOutcomeSkipsRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	skip := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		return channel.NoAddress(channel.SMS)
	})
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: skip}}})
	r := b.waitStatus(t, k, "skipped")
	require.Equal(t, channel.ClassNoAddress, r.LastErrorClassification)
}

// claimOne claims up to max routes of ch at now, as a dispatcher would.
func claim(t *testing.T, d *Dispatcher, ch string, max int, now time.Time) []store.RouteClaimDueRow {
	t.Helper()
	rows, err := d.q.RouteClaimDue(context.Background(), d.pool, store.RouteClaimDueParams{
		Now: &now, LeaseSeconds: 60, Max: int32(max), Channel: ch,
	})
	require.NoError(t, err)
	return rows
}

// completeClaim writes the outcome of the claim c of an sms route as the
// completer would: status, with an hour's backoff if it is "failed".
func completeClaim(d *Dispatcher, c store.RouteClaimDueRow, status string) {
	d.completer.flush(context.Background(), d.completer.progs[0], []completion{{
		channel: channel.SMS, notificationID: c.NotificationID, routeID: c.RouteID, tid: c.RouteTid,
		attempt: c.AttemptCount, leaseUntil: *c.LeaseUntil, status: status, classification: "http_503", message: "late", maxAttempts: 10,
		delay: time.Hour, metricOutcome: "transient",
	}})
}

func TestComplete_StaleChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	now := time.Now().Add(time.Second)

	first := claim(t, d, channel.SMS, 10, now)
	require.Len(t, first, 1)
	require.EqualValues(t, 1, first[0].AttemptCount)
	require.Empty(t, claim(t, d, channel.SMS, 10, now.Add(30*time.Second)), "leased")
	// The lease (60s) expires: another dispatcher claims attempt 2 and
	// publishes it.
	second := claim(t, d, channel.SMS, 10, now.Add(61*time.Second))
	require.Len(t, second, 1)
	require.EqualValues(t, 2, second[0].AttemptCount)

	completeClaim(d, second[0], "published")
	before := b.route(t, k)
	require.Equal(t, "published", before.Status)

	// The first worker finally reports its (failed) attempt: fenced out.
	completeClaim(d, first[0], "failed")
	after := b.route(t, k)
	require.Equal(t, before, after)
	require.EqualValues(t, 1, d.Stats().Stale)

	// A late completion of an attempt whose route is still claimed by a
	// newer attempt is fenced out too.
	k2 := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345679"})[0]
	now = time.Now().Add(time.Second)
	old := claim(t, d, channel.SMS, 10, now)
	require.Len(t, old, 1)
	require.Len(t, claim(t, d, channel.SMS, 10, now.Add(61*time.Second)), 1)
	d.completer.flush(context.Background(), d.completer.progs[0], []completion{{channel: channel.SMS, notificationID: k2.notificationID,
		routeID: k2.routeID, attempt: 1, leaseUntil: *old[0].LeaseUntil, status: "dead_letter", classification: "x",
		message: "x", maxAttempts: 1}})
	r := b.route(t, k2)
	require.Equal(t, "claimed", r.Status)
	require.EqualValues(t, 2, r.AttemptCount)
	require.EqualValues(t, 2, d.Stats().Stale)
	dls, err := benchstore.New().DeadLetterListByNotification(context.Background(), b.pool, k2.notificationID)
	require.NoError(t, err)
	require.Empty(t, dls)
}

// A completion reaches its route by the tuple id the claim returned. A
// route written since its claim by something that leaves the claim's fence
// alone (here a bare update, as a receipt's or an operator's write would
// be) has a new tuple id: its completion is still written, found by its
// primary key, and not counted stale. A tuple id that now holds another
// route matches nothing there, and the completion is written to its own.
func TestComplete_FindsMovedRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	keys := b.insert(t,
		routeSpec{channel: channel.SMS, ref: "+33612345678"},
		routeSpec{channel: channel.SMS, ref: "+33612345679"},
		routeSpec{channel: channel.SMS, ref: "+33612345670"},
	)
	ctx := context.Background()
	claimed := claim(t, d, channel.SMS, 10, time.Now().Add(time.Second))
	require.Len(t, claimed, 3)
	byKey := map[routeKey]store.RouteClaimDueRow{}
	for _, c := range claimed {
		require.True(t, c.RouteTid.Valid, "the claim returns each route's tuple id")
		byKey[routeKey{c.NotificationID, c.RouteID}] = c
	}

	// Moved: written since its claim, fence untouched.
	moved := byKey[keys[0]]
	_, err := b.pool.Exec(ctx, `UPDATE herald.routes SET updated_at = updated_at
		WHERE notification_id = $1 AND route_id = $2`, moved.NotificationID, moved.RouteID)
	require.NoError(t, err)
	var now pgtype.TID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT ctid FROM herald.routes
		WHERE notification_id = $1 AND route_id = $2`, moved.NotificationID, moved.RouteID).Scan(&now))
	require.NotEqual(t, moved.RouteTid, now, "the update gave the route a new tuple id")

	// Swapped: the second route's completion carries the third's tuple id.
	second, third := byKey[keys[1]], byKey[keys[2]]
	swapped := second
	swapped.RouteTid = third.RouteTid

	completeClaim(d, moved, "published")
	completeClaim(d, swapped, "published")
	require.Equal(t, "published", b.route(t, keys[0]).Status)
	require.Equal(t, "published", b.route(t, keys[1]).Status)
	require.Equal(t, "claimed", b.route(t, keys[2]).Status, "another route's tid did not complete it")
	require.Zero(t, d.Stats().Stale)

	completeClaim(d, third, "published")
	require.Equal(t, "published", b.route(t, keys[2]).Status)
	require.Zero(t, d.Stats().Stale)
}

// A claim lost in a database crash (its asynchronous commit never reached
// disk) leaves the route as it was; the next claim takes the same attempt
// number. The lost claim's worker must not complete the new claim: the
// lease_until fence tells the two apart where the attempt cannot. Releasing
// a lease undoes a claim in the same way, so it stands in for the crash.
func TestComplete_UndoneClaimIsStale(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	now := time.Now().Add(time.Second)

	lost := claim(t, d, channel.SMS, 10, now)
	require.Len(t, lost, 1)
	require.NoError(t, d.release(channel.SMS, lost))
	again := claim(t, d, channel.SMS, 10, now.Add(time.Second))
	require.Len(t, again, 1)
	require.Equal(t, lost[0].AttemptCount, again[0].AttemptCount, "the attempt number repeats")
	require.NotEqual(t, *lost[0].LeaseUntil, *again[0].LeaseUntil)

	completeClaim(d, lost[0], "failed")
	r := b.route(t, k)
	require.Equal(t, "claimed", r.Status, "the undone claim's completion is fenced out")
	require.EqualValues(t, 1, d.Stats().Stale)

	completeClaim(d, again[0], "published")
	require.Equal(t, "published", b.route(t, k).Status)
}

// The claim commits with synchronous_commit off for its own transaction
// only: inside the claim's transaction the setting is off, and the pooled
// connection's next statement (a completion, say) commits synchronously
// again.
func TestClaim_AsyncCommitStaysInItsTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t,
		routeSpec{channel: channel.SMS, ref: "+33612345678"},
		routeSpec{channel: channel.SMS, ref: "+33612345679"},
	)
	ctx := context.Background()
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	// The harness's cluster runs with synchronous_commit off; a production
	// server's default is on. SHOW and SET are server settings: no table
	// for sqlc.
	_, err = conn.Exec(ctx, "SET synchronous_commit = on")
	require.NoError(t, err)
	show := func(db store.DBTX) string {
		var setting string
		require.NoError(t, db.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting))
		return setting
	}
	claimAt := time.Now().Add(time.Second)
	params := store.RouteClaimDueParams{
		Now: &claimAt, LeaseSeconds: 60, Max: 1, Channel: channel.SMS,
	}

	// Inside an explicit transaction the claim's setting can be seen
	// before the commit it governs.
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	rows, err := store.New().RouteClaimDue(ctx, tx, params)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "off", show(tx), "the claim's own transaction commits asynchronously")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, "on", show(conn))

	// As the dispatcher runs it: one statement, its own transaction.
	rows, err = store.New().RouteClaimDue(ctx, conn, params)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "on", show(conn))
}

func TestClaim_TransactionalFirstThenOldest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	future := time.Now().Add(time.Hour)
	// Separate statements: each route is due at its own insert's now().
	bulkOldest := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345601", priority: 1})[0]
	older := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345602", priority: 0})[0]
	newer := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345603", priority: 0})[0]
	b.insert(t,
		routeSpec{channel: channel.SMS, ref: "+33612345604", priority: 0, sendAt: &future},
		routeSpec{channel: channel.Email, ref: "a@example.com", priority: 0},
	)
	now := time.Now().Add(time.Second)
	var order []string
	for range 4 {
		for _, r := range claim(t, d, channel.SMS, 1, now) {
			order = append(order, r.RouteID)
		}
	}
	require.Equal(t, []string{older.routeID, newer.routeID, bulkOldest.routeID}, order, "future and other channels are not claimed")
}

func TestLease_ReleasedIsDueAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	now := time.Now().Add(time.Second)
	rows := claim(t, d, channel.SMS, 10, now)
	require.Len(t, rows, 1)
	require.NoError(t, d.release(channel.SMS, rows))
	r := b.route(t, k)
	require.Equal(t, "pending", r.Status)
	require.Zero(t, r.AttemptCount)
	require.NotNil(t, r.NextAttemptAt)
	require.EqualValues(t, 1, d.Stats().Released)
	require.Len(t, claim(t, d, channel.SMS, 10, time.Now().Add(time.Second)), 1, "due again at once")
}

func TestShutdown_LetsInFlightFinish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{})
	slow := channel.DelivererFunc(func(ctx context.Context, _ *channel.Message) channel.Outcome {
		close(started)
		time.Sleep(200 * time.Millisecond)
		return channel.Outcome{Class: channel.Delivered}
	})
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: slow}}, ShutdownTimeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-started
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, "published", b.route(t, k).Status, "the delivery in flight finished and its outcome was written")
}

func TestShutdown_GraceCancelsStuckAsTransient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{})
	stuck := channel.DelivererFunc(func(ctx context.Context, _ *channel.Message) channel.Outcome {
		close(started)
		<-ctx.Done()
		return channel.Outcome{Class: channel.Transient, Classification: channel.ClassCanceled, Message: "canceled"}
	})
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: stuck}}, ShutdownTimeout: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-started
	cancel()
	require.NoError(t, <-done)
	r := b.route(t, k)
	require.Equal(t, "failed", r.Status)
	require.Equal(t, channel.ClassCanceled, r.LastErrorClassification)
}

// A completion slower than the grace period is still written at
// shutdown: an operator holds the route's row for half a second after its
// delivery, five grace periods, and the outcome is there once Run returns
// instead of the route coming due again (a second delivery) when its lease
// ends.
func TestShutdown_WritesSlowOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	locked := make(chan pgx.Tx, 1)
	deliver := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		tx, err := b.pool.Begin(ctx)
		if err == nil {
			// A row lock, as an operator's UPDATE in a transaction takes.
			_, err = tx.Exec(ctx, `SELECT 1 FROM herald.routes WHERE notification_id = $1 FOR UPDATE`, k.notificationID)
		}
		if err != nil {
			return channel.Outcome{Class: channel.Permanent, Message: err.Error()}
		}
		locked <- tx
		return channel.Outcome{Class: channel.Delivered}
	})
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: deliver}},
		ShutdownTimeout: 100 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	tx := <-locked
	cancel()
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-done)
	require.Equal(t, "published", b.route(t, k).Status)
}

func TestNew_RefusesBadConfigNamingField(t *testing.T) {
	t.Parallel()
	pool := &pgxpool.Pool{}
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"NoChannels":  {Config{}, "Channels"},
		"NoDeliverer": {Config{Channels: map[string]ChannelConfig{"sms": {}}}, `Channels["sms"].Deliverer`},
		"ShortLease": {Config{Channels: map[string]ChannelConfig{"sms": {Deliverer: channel.Discard, Timeout: time.Minute, Lease: time.Second}}},
			`Channels["sms"]: lease: 1s must exceed timeout 1m0s`},
		// The configuration file's rules, held for a Go caller too.
		"CapBelowBase": {Config{Channels: map[string]ChannelConfig{"sms": {Deliverer: channel.Discard, Backoff: BackoffConfig{Base: time.Minute, Cap: time.Second}}}},
			`Channels["sms"]: backoff.cap: must not be below backoff.base`},
		"HugeConcurrency": {Config{Channels: map[string]ChannelConfig{"sms": {Deliverer: channel.Discard, Concurrency: 10001}}},
			`Channels["sms"]: concurrency: must be between 1 and 10000`},
		"TinyPoll": {Config{Channels: map[string]ChannelConfig{"sms": {Deliverer: channel.Discard}}, PollInterval: time.Microsecond}, "PollInterval"},
		"TinyLockTimeout": {Config{Channels: map[string]ChannelConfig{"sms": {Deliverer: channel.Discard}}, LockTimeout: time.Microsecond},
			"LockTimeout must be at least 1ms"},
		"NegativeStallTimeout": {Config{Channels: map[string]ChannelConfig{"sms": {Deliverer: channel.Discard}}, StallTimeout: -time.Second},
			"StallTimeout"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := New(pool, &tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestShutdown_ReleasesUnstartedClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var attempts atomic.Int32
	counting := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		attempts.Add(1)
		return channel.Outcome{Class: channel.Delivered}
	})
	ks := b.insert(t,
		routeSpec{channel: channel.SMS, ref: "+33612345678"},
		routeSpec{channel: channel.SMS, ref: "+33612345679"},
		routeSpec{channel: channel.SMS, ref: "+33612345670"},
	)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: counting}}})
	ctx, cancel := context.WithCancel(context.Background())
	// SIGTERM lands between a claim and the start of its deliveries.
	d.afterClaim = func(n int) {
		if n > 0 {
			cancel()
		}
	}
	require.NoError(t, d.Run(ctx))

	require.Zero(t, attempts.Load())
	require.EqualValues(t, 3, d.Stats().Released)
	for _, k := range ks {
		r := b.route(t, k)
		require.Equal(t, "pending", r.Status)
		require.Zero(t, r.AttemptCount, "the attempt that never started is handed back")
		require.NotNil(t, r.NextAttemptAt)
	}
}

func TestDispatcher_RetryAfterIsBackoffFloor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	b.start(t, &Config{Channels: map[string]ChannelConfig{
		channel.Webhook: {Deliverer: webhookDeliverer(t), Backoff: BackoffConfig{Base: time.Millisecond}},
	}})
	k := b.insert(t, routeSpec{channel: channel.Webhook, ref: srv.URL})[0]

	r := b.waitStatus(t, k, "failed")
	require.Equal(t, "http_429", r.LastErrorClassification)
	require.NotNil(t, r.LastErrorAt)
	require.GreaterOrEqual(t, r.NextAttemptAt.Sub(*r.LastErrorAt), 120*time.Second)
	require.EqualValues(t, 1, r.AttemptCount)
}

func TestClaim_NeverExceedsFreeSlots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const concurrency = 4
	release := make(chan struct{})
	var inFlight, peak atomic.Int32
	blocking := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		inFlight.Add(-1)
		return channel.Outcome{Class: channel.Delivered}
	})
	specs := make([]routeSpec, 100)
	for i := range specs {
		specs[i] = routeSpec{channel: channel.SMS, ref: "+33612345678"}
	}
	ks := b.insert(t, specs...)
	d := b.start(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: blocking, Concurrency: concurrency}}})

	require.Eventually(t, func() bool { return inFlight.Load() == concurrency }, 10*time.Second, 5*time.Millisecond)
	// The loop waits for a slot: one that over-claimed would have claimed
	// before it got here.
	awaitMoment(t, d, moment{signalFull, channel.SMS})
	require.EqualValues(t, concurrency, d.Stats().Claimed, "a backlog is left in the database, not pulled into memory")
	close(release)
	for _, k := range ks {
		b.waitStatus(t, k, "published")
	}
	require.EqualValues(t, concurrency, peak.Load())
}

// The in-flight gauge and Stats.InHand count a route from its claim until
// its outcome is written, and nothing after.
func TestStats_InFlightUntilOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := metrics.New(nil)
	started := make(chan struct{}, 3)
	release := make(chan struct{})
	held := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		started <- struct{}{}
		<-release
		return channel.Outcome{Class: channel.Delivered}
	})
	keys := b.insert(t,
		routeSpec{channel: channel.SMS, ref: "+33612345671"},
		routeSpec{channel: channel.SMS, ref: "+33612345672"},
		routeSpec{channel: channel.SMS, ref: "+33612345673"},
	)
	d := b.start(t, &Config{Metrics: m, Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: held, Concurrency: 5}}})
	for range keys {
		<-started
	}
	gauge := m.RoutesInFlight.WithLabelValues(channel.SMS)
	require.Equal(t, 3.0, testutil.ToFloat64(gauge))
	require.EqualValues(t, 3, d.Stats().InHand)

	close(release)
	for _, k := range keys {
		b.waitStatus(t, k, "published")
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(gauge) == 0 }, 5*time.Second, 5*time.Millisecond)
	require.Zero(t, d.Stats().InHand)
}

// TestClaim_QuickDeliveriesFullBatches: a channel whose deliveries
// end long before a claim does (here, at once) claims full batches under
// a backlog; it used to claim for the slots free the moment it had
// launched the last batch, about half of them, so that its claims
// alternated between the two halves of its slots. A slow channel keeps
// claiming for the slots it has (TestClaim_WaitsOnlyForQuickDeliveries).
func TestClaim_QuickDeliveriesFullBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const routes, full = 2400, 40
	specs := make([]routeSpec, routes)
	for i := range specs {
		specs[i] = routeSpec{channel: channel.SMS, ref: "+33612345678"}
	}
	b.insert(t, specs...)
	var mu sync.Mutex
	var sizes []int
	d := b.newDispatcher(t, &Config{
		Channels:  map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard, Concurrency: full}},
		BatchSize: full,
	})
	d.afterClaim = func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if n > 0 {
			sizes = append(sizes, n)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	b.waitPublished(t, routes)
	cancel()
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	// The first claims run before the loop has timed a claim and a
	// delivery, and a loaded machine (or the race detector) delays some
	// deliveries past a quarter of a claim: a claim is not always full,
	// but claims average most of one. Claiming for the slots free at once
	// averaged half of one (the loop alternated between a quarter and
	// three quarters of its slots).
	mean := float64(routes) / float64(len(sizes))
	require.GreaterOrEqual(t, mean, 0.75*full, "claim sizes: %v", sizes)
}

// TestClaim_WaitsOnlyForQuickDeliveries: a saturated loop waits for a full
// claim's worth of slots only while its deliveries hold their slots less
// than a quarter of a claim's time, and then for at most that quarter;
// otherwise it claims for the slots it has, down to a quarter of them.
func TestClaim_WaitsOnlyForQuickDeliveries(t *testing.T) {
	t.Parallel()
	l := newChannelLoop(&Dispatcher{batchSize: 100}, channel.SMS, "", ChannelConfig{Concurrency: 40})
	require.False(t, l.quick(), "no claim timed yet")
	l.claimTime = 2 * time.Millisecond
	l.turn.Store(int64(100 * time.Microsecond))
	require.True(t, l.quick(), "deliveries of 100µs against claims of 2ms")
	l.turn.Store(int64(time.Millisecond))
	require.False(t, l.quick(), "deliveries of 1ms against claims of 2ms: waiting would idle the free slots")
	l.turn.Store(int64(30 * time.Millisecond))
	require.False(t, l.quick(), "a provider's round trip")
	require.Equal(t, 40, l.full(), "a claim takes at most the concurrency")
	require.Equal(t, 10, l.lowWater())

	// gather returns as soon as the slots it wants are free, and with
	// what is free when its wait ends.
	for range 30 {
		l.slots <- struct{}{}
	}
	go func() {
		for range 20 {
			<-l.slots
			l.freed <- struct{}{}
		}
	}()
	require.Equal(t, 30, l.gather(context.Background(), 30, time.Minute))
	require.Equal(t, 30, l.gather(context.Background(), 40, time.Millisecond))
}

func TestEWMA_MovesAnEighth(t *testing.T) {
	t.Parallel()
	require.Equal(t, 8*time.Millisecond, ewma(0, 8*time.Millisecond), "the first sample is the mean")
	require.Equal(t, 9*time.Millisecond, ewma(8*time.Millisecond, 16*time.Millisecond))
	require.Equal(t, 7*time.Millisecond, ewma(8*time.Millisecond, 0))
}
