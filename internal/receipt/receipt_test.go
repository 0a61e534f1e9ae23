package receipt_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/store"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

type testBundle struct {
	pool *pgxpool.Pool
	seq  atomic.Int64
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{pool: pgtemp.NewPool(t)}
}

// publishedRoute stores one published SMS route whose provider took it
// with message id msgID (its receipt key), and returns its notification id.
func (b *testBundle) publishedRoute(t testing.TB, provider, msgID string) string {
	t.Helper()
	n := b.seq.Add(1)
	nid := fmt.Sprintf("ntf_receipt_%d_%d", time.Now().UnixNano(), n)
	now := time.Now()
	_, err := store.New().RecordInsertMany(context.Background(), b.pool, store.RecordInsertManyParams{
		NotificationIds: []string{nid}, NotificationTypes: []string{"otp.sent"}, Producers: []string{"shop"},
		AudienceKinds: []string{"addresses"}, RecipientUserIds: [][]byte{[]byte(`[]`)},
		PayloadJsons: []string{`{"sms":{"body":"hi"}}`}, IdempotencyKeys: []string{nid},
		RequestFingerprints: []string{"fp"}, RequestIds: []string{""}, TraceIds: []string{""},
		OccurredAts: []time.Time{now}, ChannelLists: []string{"sms"}, Priorities: []int16{0},
		SendAts: []time.Time{{}}, ExpiresAts: []time.Time{{}}, IdempotencyWindowSeconds: 86400,
		RouteNotificationIds: []string{nid}, RouteIds: []string{"sms:1"}, RouteChannels: []string{"sms"},
		RouteRecipientRefs: []string{"+254712345678"}, RouteMaxAttempts: []int32{0}, RoutePriorities: []int16{0},
		RouteSendAts: []time.Time{{}}, RouteExpiresAts: []time.Time{{}}, RouteSmsEncodings: []string{"gsm7"},
		RouteSmsSegments: []int16{1}, CallbackUrls: []string{""},
	})
	require.NoError(t, err)
	if msgID != "" {
		b.setKey(t, nid, provider, msgID)
	}
	return nid
}

// setKey publishes the route as its completion would, with its receipt key.
func (b *testBundle) setKey(t testing.TB, nid, provider, msgID string) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		UPDATE herald.routes SET status = 'published', next_attempt_at = NULL, published_at = now(),
			attempt_count = 1, provider_message_id = $2, providers = ARRAY[$3], receipt_key = $3 || ' ' || $2
		WHERE notification_id = $1`, nid, msgID, provider)
	require.NoError(t, err)
}

type delivery struct {
	Status    *string
	Error     string
	Permanent *bool
	Sched     string
}

func (b *testBundle) delivery(t *testing.T, nid string) delivery {
	t.Helper()
	var d delivery
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT delivery_status, delivery_error, delivery_error_permanent, status FROM herald.routes WHERE notification_id = $1`,
		nid).Scan(&d.Status, &d.Error, &d.Permanent, &d.Sched))
	return d
}

func (b *testBundle) store(t *testing.T, provider, id, status, errCode string) int64 {
	t.Helper()
	rid, err := receipt.Store(context.Background(), b.pool, receipt.Receipt{
		Provider: provider, ProviderMessageID: id, Status: status, ErrorCode: errCode, Raw: "raw", Source: receipt.SourceSQL})
	require.NoError(t, err)
	return rid
}

func (b *testBundle) state(t *testing.T, id int64) (state string, status *string) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT state, delivery_status FROM herald.delivery_receipts WHERE id = $1`, id).Scan(&state, &status))
	return state, status
}

// matcher returns a matcher whose clock is *now, for settings rc.
func (b *testBundle) matcher(t *testing.T, rc *routing.Receipts, now *time.Time) *receipt.Matcher {
	t.Helper()
	m, err := receipt.NewMatcher(b.pool, receipt.MatcherConfig{
		ReceiptsFunc: func(string) *routing.Receipts { return rc },
		NowFunc:      func() time.Time { return *now },
	})
	require.NoError(t, err)
	return m
}

func ptr[T any](v T) *T { return &v }

func TestMatcher_SetsStatusIgnoresDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().Add(2 * time.Second) // the receipts below are due by then
	m := b.matcher(t, &routing.Receipts{TemporaryErrors: []string{"T1"}}, &now)
	delivered := b.publishedRoute(t, "sms/acme", "m-1")
	undelivered := b.publishedRoute(t, "sms/acme", "m-2")
	temporary := b.publishedRoute(t, "sms/acme", "m-3")
	upgraded := b.publishedRoute(t, "sms/acme", "m-4")
	r1 := b.store(t, "sms/acme", "m-1", "DELIVRD", "000")
	r1dup := b.store(t, "sms/acme", "m-1", "DELIVRD", "000")
	r2 := b.store(t, "sms/acme", "m-2", "UNDELIV", "P9")
	r3 := b.store(t, "sms/acme", "m-3", "undelivered", "T1")
	r4 := b.store(t, "sms/acme", "m-4", "ENROUTE", "")
	_, err := m.MatchOnce(context.Background())
	require.NoError(t, err)

	require.Equal(t, delivery{Status: ptr("delivered"), Error: "000", Sched: "published"}, b.delivery(t, delivered))
	require.Equal(t, delivery{Status: ptr("undelivered"), Error: "P9", Permanent: ptr(true), Sched: "published"}, b.delivery(t, undelivered))
	require.Equal(t, delivery{Status: ptr("undelivered"), Error: "T1", Permanent: ptr(false), Sched: "published"}, b.delivery(t, temporary))
	require.Equal(t, ptr("unknown"), b.delivery(t, upgraded).Status)
	st, _ := b.state(t, r1)
	require.Equal(t, "matched", st)
	st, _ = b.state(t, r1dup)
	require.Equal(t, "duplicate", st, "the same receipt twice changes nothing")
	for _, id := range []int64{r2, r3, r4} {
		st, _ := b.state(t, id)
		require.Equal(t, "matched", st)
	}

	// unknown is upgraded by a final status; a final one never changes.
	r4b := b.store(t, "sms/acme", "m-4", "DELIVRD", "")
	late := b.store(t, "sms/acme", "m-1", "UNDELIV", "X")
	_, err = m.MatchOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, ptr("delivered"), b.delivery(t, upgraded).Status)
	st, _ = b.state(t, r4b)
	require.Equal(t, "matched", st)
	require.Equal(t, ptr("delivered"), b.delivery(t, delivered).Status, "a final status is never overwritten")
	st, _ = b.state(t, late)
	require.Equal(t, "duplicate", st)

	// The timeline shows each receipt of the notification.
	rows, err := b.pool.Query(context.Background(), `
		SELECT detail FROM herald.notification_timeline($1) WHERE event = 'receipt' ORDER BY at`, delivered)
	require.NoError(t, err)
	var details []string
	for rows.Next() {
		var d string
		require.NoError(t, rows.Scan(&d))
		details = append(details, d)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{
		"DELIVRD from sms/acme: delivered, error 000, matched",
		"DELIVRD from sms/acme: delivered, error 000, duplicate",
		"UNDELIV from sms/acme: undelivered, error X, duplicate",
	}, details)

	// `herald stats` counts them per provider.
	stats, err := store.New().ReceiptStatsSince(context.Background(), b.pool, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Len(t, stats, 1)
	s := stats[0]
	require.Equal(t, []int64{7, 5, 2, 0, 2, 2, 0}, []int64{s.Received, s.Matched, s.Duplicate, s.Unmatched,
		s.Delivered, s.Undelivered, s.Expired})
	require.GreaterOrEqual(t, s.LagP95Seconds, s.LagP50Seconds)
}

func TestMatcher_EarlyMatchedUnknownKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().Add(2 * time.Second) // the receipts below are due by then
	m := b.matcher(t, &routing.Receipts{Window: time.Minute}, &now)
	nid := b.publishedRoute(t, "sms/acme", "") // no receipt key yet
	early := b.store(t, "sms/acme", "m-early", "DELIVRD", "")
	unknown := b.store(t, "sms/acme", "m-nobody", "DELIVRD", "")
	malformed := b.store(t, "sms/acme", "", "DELIVRD", "")
	_, err := m.MatchOnce(context.Background())
	require.NoError(t, err)
	st, _ := b.state(t, early)
	require.Equal(t, "new", st, "kept for another try")
	st, _ = b.state(t, malformed)
	require.Equal(t, "malformed", st)
	require.Nil(t, b.delivery(t, nid).Status)

	// The completion writes the provider's id; the next try matches.
	b.setKey(t, nid, "sms/acme", "m-early")
	now = now.Add(5 * time.Second)
	_, err = m.MatchOnce(context.Background())
	require.NoError(t, err)
	st, _ = b.state(t, early)
	require.Equal(t, "matched", st)
	require.Equal(t, ptr("delivered"), b.delivery(t, nid).Status)

	// Past the window, a receipt nobody claims is set aside, not deleted.
	now = now.Add(2 * time.Minute)
	_, err = m.MatchOnce(context.Background())
	require.NoError(t, err)
	st, _ = b.state(t, unknown)
	require.Equal(t, "unmatched", st)
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM herald.unmatched_receipts_view`).Scan(&n))
	require.Equal(t, 2, n, "the unmatched and the malformed receipt are in the view")
}

func TestHandler_StoresBeforeAnswering(t *testing.T) {
	t.Parallel()
	b := setup(t)
	settings := map[string]*routing.Receipts{
		"sms/acme": {Token: secretEnv("ACME_TOKEN")},
		"sms/get": {Method: "GET", IDField: "msgid", StatusField: "stat", ErrorField: "err",
			Token: secretEnv("GET_TOKEN")},
		"sms/form": {Format: "form", Token: secretEnv("ACME_TOKEN")},
	}
	srv := httptest.NewServer(receipt.Handler(receipt.HandlerConfig{
		Pool:         b.pool,
		ReceiptsFunc: func(p string) *routing.Receipts { return settings[p] },
		GetenvFunc: func(k string) string {
			return map[string]string{"ACME_TOKEN": "s3cret", "GET_TOKEN": "g3t"}[k]
		},
	}))
	t.Cleanup(srv.Close)
	do := func(method, path, token, body string) int {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	count := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM herald.delivery_receipts`).Scan(&n))
		return n
	}
	require.Equal(t, 200, do("POST", "/receipts/sms/acme", "s3cret", `{"id":"m-1","status":"DELIVRD","error":"000"}`))
	require.Equal(t, 200, do("GET", "/receipts/sms/get?msgid=m-2&stat=UNDELIV&err=5&token=g3t", "", ""))
	require.Equal(t, 200, do("POST", "/receipts/sms/form", "s3cret", "id=m-3&status=EXPIRED"))
	require.Equal(t, 200, do("POST", "/receipts/sms/acme", "s3cret", `not json at all`), "kept as malformed")
	require.Equal(t, 4, count())
	var raw string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT raw FROM herald.delivery_receipts WHERE provider = 'sms/get'`).Scan(&raw))
	require.NotContains(t, raw, "g3t", "the token is not stored")
	var id, status, code, source string
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT provider_message_id, status, error_code, source FROM herald.delivery_receipts
		WHERE provider = 'sms/get'`).Scan(&id, &status, &code, &source))
	require.Equal(t, []string{"m-2", "UNDELIV", "5", "http"}, []string{id, status, code, source})

	require.Equal(t, 401, do("POST", "/receipts/sms/acme", "wrong", `{"id":"x","status":"DELIVRD"}`))
	require.Equal(t, 401, do("POST", "/receipts/sms/acme", "", `{"id":"x","status":"DELIVRD"}`))
	require.Equal(t, 404, do("POST", "/receipts/sms/nobody", "s3cret", `{}`))
	require.Equal(t, 405, do("GET", "/receipts/sms/acme?token=s3cret", "", ""))
	require.Equal(t, 413, do("POST", "/receipts/sms/acme", "s3cret", strings.Repeat("x", 70000)))
	require.Equal(t, 4, count(), "nothing refused was stored")

	// A database that cannot store it: 503, so the provider sends it again.
	dead, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(dead.Close)
	down := httptest.NewServer(receipt.Handler(receipt.HandlerConfig{
		Pool:         dead,
		ReceiptsFunc: func(p string) *routing.Receipts { return settings[p] },
		GetenvFunc:   func(string) string { return "s3cret" },
	}))
	t.Cleanup(down.Close)
	resp, err := http.Post(down.URL+"/receipts/sms/acme?token=s3cret", "application/json", strings.NewReader(`{"id":"m","status":"DELIVRD"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
}

func TestMatcher_TemporaryFailureRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().Add(2 * time.Second)
	m := b.matcher(t, &routing.Receipts{RetryTemporary: true, TemporaryErrors: []string{"T1"}}, &now)
	temporary := b.publishedRoute(t, "sms/acme", "m-t")
	permanent := b.publishedRoute(t, "sms/acme", "m-p")
	b.store(t, "sms/acme", "m-t", "UNDELIV", "T1")
	b.store(t, "sms/acme", "m-p", "UNDELIV", "P1")
	_, err := m.MatchOnce(context.Background())
	require.NoError(t, err)

	d := b.delivery(t, temporary)
	require.Equal(t, "failed", d.Sched, "back on the schedule for the next provider")
	require.Nil(t, d.Status, "cleared for the next attempt's receipt")
	require.Equal(t, "T1", d.Error)
	var due bool
	var class string
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT next_attempt_at IS NOT NULL, last_error_classification FROM herald.routes WHERE notification_id = $1`,
		temporary).Scan(&due, &class))
	require.True(t, due)
	require.Equal(t, "undelivered", class)

	d = b.delivery(t, permanent)
	require.Equal(t, "published", d.Sched, "a permanent error stays where it is")
	require.Equal(t, ptr("undelivered"), d.Status)
	require.Equal(t, ptr(true), d.Permanent)
}

// Receipts posted at once are stored in one statement and one commit (a
// group), and each request is answered only once its own receipt is
// stored. A receipt Postgres refuses fails only its own request: the
// group is stored again receipt by receipt, and nothing else is lost.
func TestGroup_StoreTogetherRefusalIsolated(t *testing.T) {
	t.Parallel()
	// Stored for the matcher, and matched as they are stored (a group
	// whose matching fails is stored the plain way).
	for _, matched := range []bool{false, true} {
		name := map[bool]string{false: "Stored", true: "Matched"}[matched]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			concurrentReceiptsStoredTogether(t, matched)
		})
	}
}

func concurrentReceiptsStoredTogether(t *testing.T, matched bool) {
	b := setup(t)
	ctx := context.Background()
	g := receipt.NewGroup(b.pool)
	queued, waitQueued := queuedSignal(t)
	g.SetQueuedFuncs(queued, nil)
	srv := acmeServer(t, b.pool, g, matched)
	post := func(body string) int {
		resp, err := http.Post(srv.URL+"/receipts/sms/acme?token=s3cret", "application/json", strings.NewReader(body))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// hold blocks inserts into delivery_receipts until release, so that
	// the requests that follow the first pile up behind its statement.
	hold := func() (release func()) {
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `LOCK TABLE herald.delivery_receipts IN SHARE MODE`)
		require.NoError(t, err)
		return func() { require.NoError(t, tx.Commit(ctx)) }
	}
	send := func(bodies []string) []int {
		codes := make([]int, len(bodies))
		var wg sync.WaitGroup
		release := hold()
		for i, body := range bodies {
			wg.Go(func() { codes[i] = post(body) })
		}
		func() {
			defer release()
			waitInsertBlocked(t, b.pool, "delivery_receipts")
			waitQueued(len(bodies)) // the rest have reached the group meanwhile
		}()
		wg.Wait()
		return codes
	}

	const n = 20
	var bodies []string
	for i := range n {
		bodies = append(bodies, fmt.Sprintf(`{"id":"g-%d","status":"DELIVRD"}`, i))
	}
	for i, code := range send(bodies) {
		require.Equal(t, http.StatusOK, code, "request %d", i)
	}
	var rows, transactions int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM herald.delivery_receipts
		WHERE provider_message_id LIKE 'g-%'`).Scan(&rows, &transactions))
	require.Equal(t, n, rows)
	require.LessOrEqual(t, transactions, 3, "the receipts that waited behind the first were stored together")

	// One receipt Postgres refuses among good ones. No receipt's bytes
	// are refused (Store keeps them readable), so a trigger refuses it:
	// as a constraint added later, or a full disk for one row, would.
	refuseInsert(t, b.pool, "delivery_receipts", "provider_message_id", "p-bad")
	bodies = bodies[:0]
	for i := range n {
		bodies = append(bodies, fmt.Sprintf(`{"id":"p-%d","status":"DELIVRD"}`, i))
	}
	bodies[n/2] = `{"id":"p-bad","status":"DELIVRD"}`
	codes := send(bodies)
	for i, code := range codes {
		if i == n/2 {
			require.Equal(t, http.StatusServiceUnavailable, code, "the refused receipt: sent again later")
			continue
		}
		require.Equal(t, http.StatusOK, code, "request %d", i)
	}
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.delivery_receipts
		WHERE provider_message_id LIKE 'p-%'`).Scan(&rows))
	require.Equal(t, n-1, rows, "every receipt but the refused one is stored")
}

// Inbound messages share the group commit's failure path with receipts:
// when Postgres refuses one message of a group, the group is stored again
// one message at a time, so only the refused message's sender gets an
// error (and sends it again) and every other message of the group is kept.
func TestGroup_InboundTogetherRefusalIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refuseInsert(t, b.pool, "inbound_messages", "body", "refuse me")

	g := receipt.NewGroup(b.pool)
	queued, waitQueued := queuedSignal(t)
	g.SetQueuedFuncs(nil, queued)
	const n = 20
	errs := make([]error, n)
	// Inserts into inbound_messages wait behind this lock, so that the
	// messages sent after the first pile up and go in one group.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE herald.inbound_messages IN SHARE MODE`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	send := func(i int) {
		body := fmt.Sprintf("mo %d", i)
		if i == n/2 {
			body = "refuse me"
		}
		wg.Go(func() {
			errs[i] = g.StoreInbound(ctx, receipt.Inbound{Provider: "sms/smsc", From: "254700000001",
				To: "447911123456", Body: body})
		})
	}
	// The first message goes alone and waits on the lock; only then are the
	// others sent, so that they, the refused one among them, pile up in the
	// next group. (Sent all at once, the refused message was sometimes the
	// first, alone, and the test failed under -race.)
	send(0)
	waitInsertBlocked(t, b.pool, "inbound_messages")
	for i := 1; i < n; i++ {
		send(i)
	}
	waitQueued(n) // the rest have reached the group meanwhile
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()

	for i, err := range errs {
		if i == n/2 {
			require.ErrorContains(t, err, "refused for the test", "the refused message: its sender is told")
			continue
		}
		require.NoError(t, err, "message %d", i)
	}
	var stored, refused, transactions int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE body LIKE 'mo %'),
			count(*) FILTER (WHERE body = 'refuse me'), count(DISTINCT xmin::text)
		FROM herald.inbound_messages WHERE provider = 'sms/smsc'`).Scan(&stored, &refused, &transactions))
	require.Equal(t, n-1, stored, "every message but the refused one is stored")
	require.Zero(t, refused)
	require.Greater(t, transactions, 2, "the group with the refused message was stored again one by one")
}

// A receipt whose bytes Postgres text cannot hold (not UTF-8, or a NUL) is
// stored all the same, readable, and answered 200: refused, it would come
// back at every retry of its sender and never be matched. Its id and
// status, read from the bytes as they came, match as any other's. So is
// an inbound message's body.
func TestStore_KeepsUnstorableTextReadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	srv := acmeEndpoint(t, b.pool)
	resp, err := http.Post(srv.URL+"/receipts/sms/acme?token=s3cret", "application/json",
		strings.NewReader("{\"id\":\"u-1\",\"status\":\"DELIVRD\",\"note\":\"caf\xe9!\"}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var id, status, raw string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT provider_message_id, status, raw FROM herald.delivery_receipts
		WHERE provider = 'sms/acme'`).Scan(&id, &status, &raw))
	require.Equal(t, "u-1", id)
	require.Equal(t, "DELIVRD", status)
	require.Equal(t, "{\"id\":\"u-1\",\"status\":\"DELIVRD\",\"note\":\"caf\uFFFD!\"}", raw)

	_, err = receipt.Store(ctx, b.pool, receipt.Receipt{Provider: "sms/smsc", ProviderMessageID: "m\x00\xff1",
		Status: "DELIVRD", Raw: "id:m\x00\xff1 stat:DELIVRD", Source: receipt.SourceSMPP})
	require.NoError(t, err)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT provider_message_id, raw FROM herald.delivery_receipts
		WHERE provider = 'sms/smsc'`).Scan(&id, &raw))
	require.Equal(t, "m\uFFFD\uFFFD1", id)
	require.Equal(t, "id:m\uFFFD\uFFFD1 stat:DELIVRD", raw)

	_, err = receipt.StoreInbound(ctx, b.pool, receipt.Inbound{Provider: "sms/smsc", From: "254700000001",
		To: "447911123456", Body: "STOP\x00\xfe"})
	require.NoError(t, err)
	var body string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT body FROM herald.inbound_messages WHERE provider = 'sms/smsc'`).Scan(&body))
	require.Equal(t, "STOP\uFFFD\uFFFD", body)
}
