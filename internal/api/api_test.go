package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestDocumentIsValidOpenAPI31AndItsPathsAreTheRoutersPatterns(t *testing.T) {
	t.Parallel()
	ok, errs := openAPIValidator(t).ValidateDocument()
	require.True(t, ok, "openapi.json: %s", describe(errs))
	require.Contains(t, string(OpenAPI()), `"openapi": "3.1.0"`)

	var documented []string
	for path, ops := range readDoc(t).Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(documented)
	patterns := slices.Sorted(slices.Values(endpointPatterns()))
	require.Equal(t, documented, patterns, "every route is documented, every documented operation routed")
	// And the router really has them: each pattern routes to itself.
	s, err := New(&Config{Pool: &pgxpool.Pool{}})
	require.NoError(t, err)
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		path = strings.NewReplacer("{id}", "n1", "{user_id}", "u1").Replace(path)
		req, err := http.NewRequest(method, path, nil)
		require.NoError(t, err)
		_, got := s.mux.Handler(req)
		require.Equal(t, p, got)
	}
}

func TestProblemCodesAreTheDocumentsAndHeraldtypesCodes(t *testing.T) {
	t.Parallel()
	var problem struct {
		Properties struct {
			Code struct {
				Enum []heraldtype.Code `json:"enum"`
			} `json:"code"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(readDoc(t).Components.Schemas["Problem"], &problem))
	require.Equal(t, Codes(), problem.Properties.Code.Enum)
}

func TestSubmitAcceptsOnceAndAnswersARetryAsAReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	first := b.do(t, "POST", "/v1/notifications", intent("shop", "order-9"), b.shopKey)
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	var r Receipt
	first.json(t, &r)
	require.False(t, r.Duplicate)
	require.Len(t, r.RouteIDs, 3)
	require.Equal(t, "/v1/notifications/"+r.NotificationID, first.header.Get("Location"))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records WHERE notification_id = $1 AND producer = 'shop'`, r.NotificationID),
		"committed before the answer")

	again := b.do(t, "POST", "/v1/notifications", intent("shop", "order-9"), b.shopKey)
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	var r2 Receipt
	again.json(t, &r2)
	require.True(t, r2.Duplicate)
	require.Equal(t, r.NotificationID, r2.NotificationID)

	// The Idempotency-Key header stands for a key the body lacks, and the
	// producer defaults to the key's.
	in := intent("", "")
	delete(in, "idempotency_key")
	viaHeader := b.do(t, "POST", "/v1/notifications", in, b.shopKey, "Idempotency-Key: order-10", "X-Request-Id: req-abc")
	require.Equal(t, http.StatusCreated, viaHeader.status, "%s", viaHeader.body)
	require.Equal(t, "req-abc", viaHeader.header.Get("X-Request-Id"))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records
		WHERE producer = 'shop' AND idempotency_key = 'order-10' AND request_id = 'req-abc'`))
	replay := b.do(t, "POST", "/v1/notifications", in, b.shopKey, "Idempotency-Key: order-10")
	require.Equal(t, http.StatusOK, replay.status)
	// A header that contradicts the body is refused.
	bad := b.do(t, "POST", "/v1/notifications", intent("shop", "order-11"), b.shopKey, "Idempotency-Key: order-12")
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.Equal(t, "idempotency_key", bad.problem(t).Field)
}

func TestFiftyConcurrentIdenticalSubmitsStoreOneNotification(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var wg sync.WaitGroup
	answers := make([]answer, 50)
	for i := range answers {
		wg.Go(func() {
			answers[i] = b.do(t, "POST", "/v1/notifications", intent("shop", "race"), b.shopKey)
		})
	}
	wg.Wait()
	ids := map[string]bool{}
	created := 0
	for _, a := range answers {
		require.Contains(t, []int{http.StatusCreated, http.StatusOK}, a.status, "%s", a.body)
		if a.status == http.StatusCreated {
			created++
		}
		var r Receipt
		a.json(t, &r)
		ids[r.NotificationID] = true
	}
	require.Equal(t, 1, created)
	require.Len(t, ids, 1)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records`))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM herald.routes`))
}

func TestSubmitWithAKeysOtherRequestIsAConflictNamingTheNotification(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	first := b.do(t, "POST", "/v1/notifications", intent("shop", "k"), b.shopKey)
	require.Equal(t, http.StatusCreated, first.status)
	var r Receipt
	first.json(t, &r)
	other := intent("shop", "k")
	other["notification_type"] = "order.canceled"
	a := b.do(t, "POST", "/v1/notifications", other, b.shopKey)
	require.Equal(t, http.StatusConflict, a.status)
	p := a.problem(t)
	require.Equal(t, heraldtype.CodeIdempotencyConflict, p.Code)
	require.Equal(t, r.NotificationID, p.NotificationID)
	// Keys are per producer: mall's "k" is its own.
	delete(other, "producer")
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", other, b.mallKey).status)
}

func TestSubmitRefusesBadIntentsWithTheirCodesAndFieldPaths(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	badPhone := intent("shop", "p")
	badPhone["audience"] = map[string]any{"sms": []string{"+1415555012", "12"}}
	unknown := intent("shop", "u")
	unknown["colour"] = "red"
	noChannels := intent("shop", "c")
	delete(noChannels, "channels")
	for _, tc := range []struct {
		name  string
		body  any
		code  heraldtype.Code
		field string
	}{
		{"NotJSON", "{not json", heraldtype.CodeNotJSON, ""},
		{"UnknownField", unknown, heraldtype.CodeWrongShape, "colour"},
		{"MissingChannels", noChannels, heraldtype.CodeMissingField, "channels"},
		{"InvalidPhones", badPhone, heraldtype.CodeInvalidPhone, "audience.sms[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := b.do(t, "POST", "/v1/notifications", tc.body, b.shopKey)
			require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
			p := a.problem(t)
			require.Equal(t, tc.code, p.Code)
			require.Equal(t, tc.field, p.Field)
			require.NotEmpty(t, p.Errors)
		})
	}
	big := intent("shop", "big")
	big["content"].(map[string]any)["sms"] = map[string]any{"body": strings.Repeat("x", 300<<10)}
	a := b.do(t, "POST", "/v1/notifications", big, b.shopKey)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Equal(t, heraldtype.CodeTooLarge, a.problem(t).Code)
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))
}

func TestSubmitInAnotherProducersNameIsRefusedByTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.do(t, "POST", "/v1/notifications", intent("mall", "k"), b.shopKey)
	require.Equal(t, http.StatusForbidden, a.status, "%s", a.body)
	require.Equal(t, CodeForbidden, a.problem(t).Code)
	require.Contains(t, a.problem(t).Detail, "row-level security")
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))
}

func TestBatchAnswersEachIntentInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "old"), b.shopKey).status)
	conflicting := intent("shop", "old")
	conflicting["notification_type"] = "other"
	badEmail := intent("shop", "e")
	badEmail["channels"] = []string{"email"}
	badEmail["audience"] = map[string]any{"email": []string{"not an address"}}
	delete(badEmail["content"].(map[string]any), "sms")
	body := map[string]any{"intents": []any{
		intent("shop", "new"), intent("shop", "old"), conflicting, badEmail, intent("mall", "m"), intent("", "mine"),
		"not an object",
	}}
	a := b.do(t, "POST", "/v1/notifications/batch", body, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var out struct{ Results []BatchResult }
	a.json(t, &out)
	var statuses []int
	for _, r := range out.Results {
		statuses = append(statuses, r.Status)
	}
	require.Equal(t, []int{201, 200, 409, 400, 403, 201, 400}, statuses)
	require.Equal(t, heraldtype.CodeInvalidEmail, out.Results[3].Error.Code)
	require.Equal(t, "audience.email[0]", out.Results[3].Error.Field)
	require.Equal(t, heraldtype.CodeWrongShape, out.Results[6].Error.Code)
	require.Equal(t, a.header.Get("X-Request-Id"), out.Results[3].Error.RequestID)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM herald.records`))

	tooMany := make([]any, DefaultMaxBatch+1)
	for i := range tooMany {
		tooMany[i] = intent("shop", fmt.Sprint("n", i))
	}
	a = b.do(t, "POST", "/v1/notifications/batch", map[string]any{"intents": tooMany}, b.shopKey)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Equal(t, "intents", a.problem(t).Field)
	a = b.do(t, "POST", "/v1/notifications/batch", map[string]any{"intents": []any{}}, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, heraldtype.CodeMissingField, a.problem(t).Code)
	a = b.do(t, "POST", "/v1/notifications/batch", `[1]`, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, heraldtype.CodeWrongShape, a.problem(t).Code)
}

func TestGetAnswersRoutesWithStatusAttemptsProvidersAndLastError(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var r Receipt
	b.do(t, "POST", "/v1/notifications", intent("shop", "g"), b.shopKey).json(t, &r)
	// As the dispatcher would leave a route that failed once at one provider.
	_, err := b.admin.Exec(context.Background(), `UPDATE herald.routes
		SET status = 'failed', attempt_count = 1, providers = '{sms/acme}', last_error_classification = 'transient',
			last_error_message = 'HTTP 503', last_error_at = now()
		WHERE notification_id = $1 AND recipient_ref = '+14155550123'`, r.NotificationID)
	require.NoError(t, err)
	a := b.do(t, "GET", "/v1/notifications/"+r.NotificationID, nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var n Notification
	a.json(t, &n)
	require.Equal(t, "shop", n.Producer)
	require.Equal(t, []string{"42"}, n.UserIDs)
	require.Len(t, n.Routes, 3)
	sms := n.Routes[slices.IndexFunc(n.Routes, func(rt Route) bool { return rt.RecipientRef == "+14155550123" })]
	require.Equal(t, "failed", sms.Status)
	require.Equal(t, 1, sms.Attempts)
	require.Equal(t, []string{"sms/acme"}, sms.Providers)
	require.Equal(t, "HTTP 503", sms.LastError)
	require.NotNil(t, sms.LastErrorAt)
	require.JSONEq(t, `{"sms":{"body":"Order 9 shipped"},"email":{"subject":"Order 9 shipped","text":"On its way."}}`, string(n.Content))

	// Another producer's notification is not found, exactly as an unknown one.
	for _, id := range []string{r.NotificationID, "0190a8b2-0000-7000-8000-000000000000"} {
		a = b.do(t, "GET", "/v1/notifications/"+id, nil, b.mallKey)
		require.Equal(t, http.StatusNotFound, a.status)
		require.Equal(t, CodeNotFound, a.problem(t).Code)
	}
}

func TestGetAnswersEachRoutesDeliveryStatusFromItsReceipt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var r Receipt
	b.do(t, "POST", "/v1/notifications", intent("shop", "d"), b.shopKey).json(t, &r)
	// As the receipts matcher leaves a published route whose receipt said
	// undelivered.
	_, err := b.admin.Exec(context.Background(), `UPDATE herald.routes
		SET status = 'published', next_attempt_at = NULL, published_at = now(), attempt_count = 1,
			delivery_status = 'undelivered', delivery_status_at = now(), delivery_error = '27',
			delivery_error_permanent = false
		WHERE notification_id = $1 AND recipient_ref = '+14155550123'`, r.NotificationID)
	require.NoError(t, err)
	a := b.do(t, "GET", "/v1/notifications/"+r.NotificationID, nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var n Notification
	a.json(t, &n)
	for _, rt := range n.Routes {
		if rt.RecipientRef == "+14155550123" {
			require.Equal(t, "undelivered", rt.DeliveryStatus)
			require.Equal(t, "27", rt.DeliveryError)
			require.NotNil(t, rt.DeliveryStatusAt)
		} else {
			require.Empty(t, rt.DeliveryStatus, "no receipt yet")
			require.Nil(t, rt.DeliveryStatusAt)
		}
	}
}

func TestCancelCancelsTheProducersOwnOnlyAndIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var r Receipt
	b.do(t, "POST", "/v1/notifications", intent("shop", "c"), b.shopKey).json(t, &r)
	a := b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", map[string]any{"reason": "x"}, b.mallKey)
	require.Equal(t, http.StatusNotFound, a.status)
	a = b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", `{"why": 1}`, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	a = b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", map[string]any{"reason": "order refunded"}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var c Cancellation
	a.json(t, &c)
	require.Len(t, c.Canceled, 3)
	var actor, reason string
	require.NoError(t, b.admin.QueryRow(context.Background(),
		`SELECT actor, reason FROM herald.audit_log WHERE action = 'cancel'`).Scan(&actor, &reason))
	require.Equal(t, "api key "+b.shopKey[:keyDisplayLen], actor)
	require.Equal(t, "order refunded", reason)
	// Nothing left to cancel: 200 with none, no body needed.
	a = b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status)
	a.json(t, &c)
	require.Empty(t, c.Canceled)
}

func TestListPagesThroughTheProducersOwnNotificationsNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for i := range 5 {
		require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", fmt.Sprint("l", i)), b.shopKey).status)
	}
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("mall", "l0"), b.mallKey).status)
	var keys []string
	path := "/v1/notifications?limit=2"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4)
		a := b.do(t, "GET", path, nil, b.shopKey)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		var l List
		a.json(t, &l)
		for _, n := range l.Notifications {
			require.Equal(t, "shop", n.Producer)
			keys = append(keys, n.IdempotencyKey)
		}
		if l.Next == "" {
			break
		}
		path = "/v1/notifications?limit=2&after=" + l.Next
	}
	require.Equal(t, []string{"l4", "l3", "l2", "l1", "l0"}, keys)
	// The list pages by id: a cursor whose time is not its row's (as in one
	// handed out when the list was ordered by accepted_at, before migration
	// 00024) goes on from its row all the same.
	var l3 string
	require.NoError(t, b.admin.QueryRow(context.Background(), `SELECT notification_id FROM herald.records
		WHERE producer = 'shop' AND idempotency_key = 'l3'`).Scan(&l3))
	a := b.do(t, "GET", "/v1/notifications?limit=2&after="+encodeCursor(time.Unix(0, 0), l3), nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var l List
	a.json(t, &l)
	require.Len(t, l.Notifications, 2)
	require.Equal(t, "l2", l.Notifications[0].IdempotencyKey)
	require.Equal(t, "l1", l.Notifications[1].IdempotencyKey)
	for _, q := range []string{"limit=0", "limit=x", "after=%21%21"} {
		a := b.do(t, "GET", "/v1/notifications?"+q, nil, b.shopKey)
		require.Equal(t, http.StatusBadRequest, a.status, q)
		require.Equal(t, heraldtype.CodeInvalidField, a.problem(t).Code)
	}
}

func TestRecipientsArePutNormalizedAndDeletedInTheProducersOwnDirectory(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.do(t, "PUT", "/v1/recipients/42", map[string]any{"phone": "+1 415 555 0123", "email": "Ann@Example.COM",
		"opted_out": []string{"sms"}}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var r Recipient
	a.json(t, &r)
	require.Equal(t, "+14155550123", r.Phone)
	require.Equal(t, "Ann@example.com", r.Email)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.recipients WHERE owner = 'shop' AND user_id = '42'`))
	a = b.do(t, "PUT", "/v1/recipients/42", map[string]any{"phone": "555"}, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "phone", a.problem(t).Field)
	// mall has no entry for 42: its delete finds none, and shop's stays.
	a = b.do(t, "DELETE", "/v1/recipients/42", nil, b.mallKey)
	require.Equal(t, http.StatusNotFound, a.status)
	a = b.do(t, "DELETE", "/v1/recipients/42", nil, b.shopKey)
	require.Equal(t, http.StatusNoContent, a.status)
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.recipients`))
}

// endpoints is one request of each authenticated endpoint.
func endpoints() [][3]string {
	return [][3]string{
		{"POST", "/v1/notifications", `{}`},
		{"POST", "/v1/notifications/batch", `{"intents":[{}]}`},
		{"GET", "/v1/notifications", ""},
		{"GET", "/v1/notifications/n1", ""},
		{"POST", "/v1/notifications/n1/cancel", ""},
		{"PUT", "/v1/recipients/u1", `{}`},
		{"DELETE", "/v1/recipients/u1", ""},
	}
}

func TestRequestsWithoutAValidKeyAre401AndKeysRotateWithoutDowntime(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	for _, e := range endpoints() {
		for _, key := range []string{"", NewSecret()} {
			var body any
			if e[2] != "" {
				body = e[2]
			}
			a := b.do(t, e[0], e[1], body, key)
			require.Equal(t, http.StatusUnauthorized, a.status, "%s %s: %s", e[0], e[1], a.body)
			require.Equal(t, CodeUnauthorized, a.problem(t).Code)
			require.Contains(t, a.header.Get("WWW-Authenticate"), "Bearer")
		}
	}
	// Rotation: a second key works beside the first, then the first is revoked.
	keys, err := ListKeys(ctx, b.admin, "shop")
	require.NoError(t, err)
	next, err := CreateKey(ctx, b.admin, "shop", "ops", "rotation")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "a"), b.shopKey).status)
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "b"), next.Secret).status)
	_, err = RevokeKey(ctx, b.admin, "shop", keys[0].ID, "ops", "rotated")
	require.NoError(t, err)
	a := b.do(t, "GET", "/v1/notifications", nil, b.shopKey)
	require.Equal(t, http.StatusUnauthorized, a.status)
	a = b.do(t, "GET", "/v1/notifications", nil, next.Secret)
	require.Equal(t, http.StatusOK, a.status)
	var l List
	a.json(t, &l)
	require.Len(t, l.Notifications, 2)
	// The key that served was touched.
	keys, err = ListKeys(ctx, b.admin, "shop")
	require.NoError(t, err)
	require.NotNil(t, keys[1].LastUsedAt)
}

func TestAKeyOverItsRateGets429WithRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.RateLimit, c.RateBurst = 0.5, 1 })
	for _, e := range endpoints() {
		// A key of its own for each endpoint: a key gets its bucket once it
		// authenticated, and its later requests meet the limit before any
		// database work.
		k, err := CreateKey(context.Background(), b.admin, "shop", "test", "rate")
		require.NoError(t, err)
		key := k.Secret
		var body any
		if e[2] != "" {
			body = e[2]
		}
		b.do(t, e[0], e[1], body, key)
		a := b.do(t, e[0], e[1], body, key)
		require.Equal(t, http.StatusTooManyRequests, a.status, "%s %s", e[0], e[1])
		require.Equal(t, CodeRateLimited, a.problem(t).Code)
		require.Equal(t, "2", a.header.Get("Retry-After"))
	}
	// Another key has its own bucket.
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "x"), b.shopKey).status)
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/v1/notifications", nil, b.mallKey).status)
}

func TestDatabaseDownIs503WithRetryAfterAndNeverFor4xxInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// A pool on a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := b.apiPool.Config().Copy()
	host, port, _ := net.SplitHostPort(addr)
	cfg.ConnConfig.Host = host
	fmt.Sscan(port, &cfg.ConnConfig.Port)
	cfg.ConnConfig.ConnectTimeout = time.Second
	dead, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(dead.Close)
	b.server, err = New(&Config{Pool: dead, ReadyFunc: func(context.Context) error { return nil }})
	require.NoError(t, err)
	b.http.Config.Handler = b.server.Handler()

	for _, e := range endpoints() {
		var body any
		switch e[0] + " " + e[1] {
		case "POST /v1/notifications":
			body = intent("shop", "d")
		case "POST /v1/notifications/batch":
			body = map[string]any{"intents": []any{intent("shop", "d")}}
		case "PUT /v1/recipients/u1":
			body = map[string]any{"email": "ann@example.com"}
		}
		a := b.do(t, e[0], e[1], body, b.shopKey)
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%s %s: %s", e[0], e[1], a.body)
		require.Equal(t, CodeUnavailable, a.problem(t).Code)
		require.Equal(t, "2", a.header.Get("Retry-After"))
	}
	// Bad input is not looked at before the key authenticated, which needs
	// the database: still 503 (never 500), and still 4xx once it is back.
	a := b.do(t, "POST", "/v1/notifications", "{", b.shopKey)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	for _, path := range []string{"/healthz", "/readyz"} {
		a := b.do(t, "GET", path, nil, "")
		require.Equal(t, http.StatusServiceUnavailable, a.status)
		var h Health
		a.json(t, &h)
		require.False(t, h.Database)
	}
}

func TestHealthReadinessAndTheDocumentAreServed(t *testing.T) {
	t.Parallel()
	notReady := errors.New("migrations pending: run herald migrate up")
	var ready error
	var mu sync.Mutex
	b := setup(t, func(c *Config) {
		c.ReadyFunc = func(context.Context) error { mu.Lock(); defer mu.Unlock(); return ready }
	})
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/healthz", nil, "").status)
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/readyz", nil, "").status)
	mu.Lock()
	ready = notReady
	mu.Unlock()
	a := b.do(t, "GET", "/readyz", nil, "")
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Contains(t, string(a.body), "migrations pending")
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/healthz", nil, "").status)
	a = b.do(t, "GET", "/openapi.json", nil, "")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, OpenAPI(), a.body)
}

func TestUnknownPathsAre404AndWrongMethods405Problems(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.do(t, "GET", "/v2/things", nil, b.shopKey)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, CodeNotFound, a.problem(t).Code)
	a = b.do(t, "DELETE", "/v1/notifications", nil, b.shopKey)
	require.Equal(t, http.StatusMethodNotAllowed, a.status)
	require.Equal(t, CodeMethodNotAllowed, a.problem(t).Code)
	require.Equal(t, "GET, POST", a.header.Get("Allow"))
}

func TestRequestsAreLoggedAndCountedPerEndpointAndStatus(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	b := setup(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
	a := b.do(t, "POST", "/v1/notifications", intent("shop", "log"), b.shopKey, "X-Request-Id: req-1")
	require.Equal(t, http.StatusCreated, a.status)
	b.do(t, "GET", "/v1/notifications/nope", nil, b.shopKey)
	var line map[string]any
	for l := range strings.Lines(buf.String()) {
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		if line["request_id"] == "req-1" {
			break
		}
	}
	require.Equal(t, "req-1", line["request_id"])
	require.Equal(t, "shop", line["producer"])
	require.Equal(t, float64(201), line["status"])
	require.Equal(t, "POST /v1/notifications", line["endpoint"])
	require.Contains(t, line, "duration_ms")
	require.NotContains(t, buf.String(), "+14155550123", "no address in the logs")
	require.Equal(t, 1.0, testutil.ToFloat64(b.server.metrics.APIRequests.WithLabelValues("POST /v1/notifications", "201")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.server.metrics.APIRequests.WithLabelValues("GET /v1/notifications/{id}", "404")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.server.metrics.IntentsAccepted.WithLabelValues("shop", "accepted")))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestServeFinishesRequestsInFlightWhenItStops(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := Listen(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- b.server.Serve(ctx, ln) }()

	// Hold the submit in the database: a lock its insert waits for.
	lock, err := b.admin.Begin(ctx)
	require.NoError(t, err)
	_, err = lock.Exec(ctx, `LOCK TABLE herald.records IN EXCLUSIVE MODE`)
	require.NoError(t, err)
	b.http.URL = "http://" + ln.Addr().String()
	got := make(chan answer, 1)
	go func() { got <- b.do(t, "POST", "/v1/notifications", intent("shop", "inflight"), b.shopKey) }()
	require.Eventually(t, func() bool {
		// pg_locks is the cluster's, and the test databases, made from one
		// template, share herald.records' oid: this database's only.
		return b.count(t, `SELECT count(*) FROM pg_locks WHERE relation = 'herald.records'::regclass AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) > 0
	}, 10*time.Second, 10*time.Millisecond)
	cancel() // stop serving; the request is in flight
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	}, 10*time.Second, 10*time.Millisecond, "no new connections once stopping")
	require.NoError(t, lock.Rollback(context.Background()))
	a := <-got
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.NoError(t, <-served)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records`))
}
