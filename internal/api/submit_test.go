package api

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestSubmit_AcceptsOnceRetryIsReplay(t *testing.T) {
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

func TestSubmit_RacingIdenticalStoreOne(t *testing.T) {
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

func TestSubmit_KeyConflictNamesNotification(t *testing.T) {
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

func TestSubmit_RefusesBadIntentsWithCodes(t *testing.T) {
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

func TestSubmit_OthersNameRefusedByDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.do(t, "POST", "/v1/notifications", intent("mall", "k"), b.shopKey)
	require.Equal(t, http.StatusForbidden, a.status, "%s", a.body)
	require.Equal(t, CodeForbidden, a.problem(t).Code)
	require.Contains(t, a.problem(t).Detail, "row-level security")
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))
}
