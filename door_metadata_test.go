package herald_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/sqldoor"
)

// Metadata and callback_url through every door: the same intents, fed
// through the Go client, the HTTP API and the SQL intake, come out with the
// same outcome and the same failure code at each, and what is refused
// stores nothing.

// metaCase is one intent, in order: later ones replay earlier keys.
type metaCase struct {
	name string
	in   func(producer string) *herald.Intent
	want string // accepted, duplicate, conflict, or the failure code
}

// withMetadata returns an SMS intent of key carrying m.
func withMetadata(p, key string, m map[string]string) *herald.Intent {
	in := smsIntent(p, key, "your order shipped")
	in.Metadata = m
	return in
}

var metaCases = []metaCase{
	{"WithMetadata", func(p string) *herald.Intent {
		return withMetadata(p, "meta", map[string]string{"order_id": "9", "tenant": "acme"})
	}, "accepted"},
	{"SameMetadataAgain", func(p string) *herald.Intent {
		return withMetadata(p, "meta", map[string]string{"tenant": "acme", "order_id": "9"})
	}, "duplicate"},
	{"OtherMetadataOnTheSameKey", func(p string) *herald.Intent {
		return withMetadata(p, "meta", map[string]string{"order_id": "10", "tenant": "acme"})
	}, "idempotency_conflict"},
	{"MetadataAddedOnAKeyWithout", func(p string) *herald.Intent {
		return withMetadata(p, "plain", map[string]string{"order_id": "9"})
	}, "idempotency_conflict"},
	{"TooManyKeys", func(p string) *herald.Intent {
		m := map[string]string{}
		for i := range 33 {
			m["k"+strings.Repeat("x", i)] = "v"
		}
		return withMetadata(p, "many", m)
	}, "invalid_field"},
	{"HugeValue", func(p string) *herald.Intent {
		return withMetadata(p, "huge", map[string]string{"note": strings.Repeat("x", 513)})
	}, "invalid_field"},
	{"WholeMapOverBudget", func(p string) *herald.Intent {
		m := map[string]string{}
		for i := range 9 {
			m["k"+string(rune('a'+i))] = strings.Repeat("y", 500)
		}
		return withMetadata(p, "big", m)
	}, "too_large"},
	{"NULInValue", func(p string) *herald.Intent {
		return withMetadata(p, "nul", map[string]string{"note": "a\x00b"})
	}, "invalid_field"},
	{"BadKey", func(p string) *herald.Intent {
		return withMetadata(p, "badkey", map[string]string{"order id": "9"})
	}, "invalid_field"},
	{"CallbackURLWithoutASubscription", func(p string) *herald.Intent {
		in := smsIntent(p, "cb", "your order shipped")
		in.CallbackURL = "https://hooks.example.com/status"
		return in
	}, "callback_url_needs_subscription"},
}

// plainFirst is submitted before metaCases: the key MetadataAddedOnAKeyWithout replays.
func plainFirst(p string) *herald.Intent { return smsIntent(p, "plain", "your order shipped") }

// metaOutcomes submits plainFirst and metaCases through submitFunc and
// returns each case's outcome; it then checks that nothing refused was
// stored.
func metaOutcomes(t *testing.T, b *accessBundle, submitFunc func(t *testing.T, in *herald.Intent) string) map[string]string {
	t.Helper()
	require.Equal(t, "accepted", submitFunc(t, plainFirst(b.nameA)))
	got := map[string]string{}
	for _, c := range metaCases {
		got[c.name] = submitFunc(t, c.in(b.nameA))
	}
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.records`), "only plain and meta are stored")
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.records WHERE metadata IS NOT NULL`))
	var stored []byte
	require.NoError(t, b.admin.QueryRow(context.Background(),
		`SELECT metadata FROM herald.records WHERE idempotency_key = 'meta'`).Scan(&stored))
	require.JSONEq(t, `{"order_id": "9", "tenant": "acme"}`, string(stored))
	return got
}

func wantedMetaOutcomes() map[string]string {
	want := map[string]string{}
	for _, c := range metaCases {
		want[c.name] = c.want
	}
	return want
}

// apiDoor starts the HTTP API for producer A of b and returns its URL and
// a key.
func apiDoor(t *testing.T, b *apiBundle) (url, key string) {
	t.Helper()
	k, err := api.CreateKey(context.Background(), b.admin, b.nameA, "test", "doors")
	require.NoError(t, err)
	srv, err := api.New(&api.Config{Pool: b.asAPI})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, k.Secret
}

// apiCall sends method path with body (nil: none) as key and returns the
// status and the answer.
func apiCall(t *testing.T, url, key, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

func TestDoors_MetadataAndCallbackURLComeOutTheSameThroughEveryDoor(t *testing.T) {
	t.Parallel()
	t.Run("GoClient", func(t *testing.T) {
		t.Parallel()
		b := accessSetup(t)
		got := metaOutcomes(t, b, func(t *testing.T, in *herald.Intent) string {
			r, err := b.clientA.Submit(context.Background(), in)
			var ve *herald.ValidationError
			switch {
			case errors.Is(err, herald.ErrIdempotencyConflict):
				return "idempotency_conflict"
			case errors.As(err, &ve):
				return string(ve.Code())
			case err != nil:
				return err.Error()
			case r.Duplicate:
				return "duplicate"
			}
			return "accepted"
		})
		require.Equal(t, wantedMetaOutcomes(), got)
	})
	t.Run("HTTPAPI", func(t *testing.T) {
		t.Parallel()
		b := apiSetup(t)
		url, key := apiDoor(t, b)
		got := metaOutcomes(t, b.accessBundle, func(t *testing.T, in *herald.Intent) string {
			status, out := apiCall(t, url, key, "POST", "/v1/notifications", in)
			var answer struct {
				Code string `json:"code"`
			}
			require.NoError(t, json.Unmarshal(out, &answer), "%s", out)
			switch status {
			case http.StatusCreated:
				return "accepted"
			case http.StatusOK:
				return "duplicate"
			}
			return answer.Code
		})
		require.Equal(t, wantedMetaOutcomes(), got)
	})
	t.Run("SQLIntake", func(t *testing.T) {
		t.Parallel()
		b := accessSetup(t)
		var result string
		w, err := sqldoor.NewWorker(b.admin, &sqldoor.WorkerConfig{ContentRulesMaxAge: -1,
			ResultFunc: func(_, r string) { result = r }})
		require.NoError(t, err)
		got := metaOutcomes(t, b, func(t *testing.T, in *herald.Intent) string {
			ctx := context.Background()
			body, err := json.Marshal(in)
			require.NoError(t, err)
			_, err = b.asA.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ($1)`, body)
			require.NoError(t, err)
			result = ""
			_, _, err = w.DrainOnce(ctx)
			require.NoError(t, err)
			switch result {
			case sqldoor.ResultConflict:
				return "idempotency_conflict"
			case sqldoor.ResultMalformed:
			default:
				return result
			}
			var code string
			require.NoError(t, b.admin.QueryRow(ctx, `SELECT failure_code FROM herald.malformed_intents
				WHERE idempotency_key = $1 ORDER BY recorded_at DESC, stream_entry_id DESC LIMIT 1`, in.IdempotencyKey).Scan(&code))
			return code
		})
		require.Equal(t, wantedMetaOutcomes(), got)
	})
}

// A producer with a callback subscription may name a callback_url, at
// every door; the notification is accepted and its routes watched.
func TestDoors_CallbackURLIsAcceptedOnceTheProducerSubscribed(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	require.NoError(t, b.clientA.SetCallbackSubscription(ctx, herald.CallbackSubscription{
		URL: "https://hooks.example.com/all", Secret: callbackSecret}))
	in := func(key string) *herald.Intent {
		in := smsIntent(b.nameA, key, "your order shipped")
		in.CallbackURL = "https://hooks.example.com/this-one"
		return in
	}
	_, err := b.clientA.Submit(ctx, in("go"))
	require.NoError(t, err)

	url, key := apiDoor(t, b)
	status, out := apiCall(t, url, key, "POST", "/v1/notifications", in("api"))
	require.Equal(t, http.StatusCreated, status, "%s", out)

	w, err := sqldoor.NewWorker(b.admin, &sqldoor.WorkerConfig{ContentRulesMaxAge: -1})
	require.NoError(t, err)
	body, err := json.Marshal(in("sql"))
	require.NoError(t, err)
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ($1)`, body)
	require.NoError(t, err)
	_, _, err = w.DrainOnce(ctx)
	require.NoError(t, err)

	require.Equal(t, 3, countAs(t, b.admin, `SELECT count(*) FROM herald.records r JOIN herald.routes rt USING (notification_id)
		WHERE r.callback_url = 'https://hooks.example.com/this-one' AND rt.notify_producer`))
	require.Zero(t, countAs(t, b.admin, `SELECT count(*) FROM herald.malformed_intents`))
}

// The Go client's Get and the HTTP API's GET return the metadata, through
// the one loader; a notification without any has none.
func TestDoors_GetReturnsTheMetadataThroughTheClientAndTheAPI(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	meta := map[string]string{"order_id": "9", "note": "ünïcode ✓"}
	r, err := b.clientA.Submit(ctx, withMetadata(b.nameA, "meta", meta))
	require.NoError(t, err)
	plain, err := b.clientA.Submit(ctx, smsIntent(b.nameA, "plain", "hi"))
	require.NoError(t, err)

	n, err := b.clientA.Get(ctx, r.NotificationID)
	require.NoError(t, err)
	require.Equal(t, meta, n.Metadata)
	n, err = b.clientA.Get(ctx, plain.NotificationID)
	require.NoError(t, err)
	require.Nil(t, n.Metadata)

	url, key := apiDoor(t, b)
	status, out := apiCall(t, url, key, "GET", "/v1/notifications/"+r.NotificationID, nil)
	require.Equal(t, http.StatusOK, status, "%s", out)
	var viaAPI api.Notification
	require.NoError(t, json.Unmarshal(out, &viaAPI))
	require.Equal(t, meta, viaAPI.Metadata)
	status, out = apiCall(t, url, key, "GET", "/v1/notifications/"+plain.NotificationID, nil)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, string(out), `"metadata"`)
}

// The callback_url check costs a batch without a callback_url nothing,
// and a batch with one a single probe of the subscriptions, whatever its
// size; metadata costs no statement at all.
func TestSubmitMany_CallbackURLCostsOneProbePerBatchThatHasOne(t *testing.T) {
	t.Parallel()
	// Each submit carries its own wake-up hint in its insert: with the
	// debounce, a trailing hint from an earlier submit could fall among
	// the statements counted here, whenever its window ends.
	b := setup(t, func(c *herald.Config) { c.NotifyDebounce = -1 })
	ctx := context.Background()
	var me string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT session_user::text`).Scan(&me))
	require.NoError(t, b.client.SetCallbackSubscription(ctx, herald.CallbackSubscription{
		URL: "https://hooks.example.com/all", Secret: callbackSecret}))
	batch := func(prefix string, withURL bool) []*herald.Intent {
		ins := make([]*herald.Intent, 50)
		for i := range ins {
			ins[i] = smallIntent(i)
			ins[i].Producer, ins[i].IdempotencyKey = me, prefix+ins[i].IdempotencyKey
			ins[i].Metadata = map[string]string{"i": strconv.Itoa(i)}
			if withURL && i%10 == 3 {
				ins[i].CallbackURL = "https://hooks.example.com/this-one"
			}
		}
		return ins
	}
	// Warm: the content checker reads its rules once.
	_, err := b.client.SubmitMany(ctx, batch("w", false)[:1])
	require.NoError(t, err)
	q0 := b.queries.Load()
	res, err := b.client.SubmitMany(ctx, batch("a", false))
	require.NoError(t, err)
	require.Equal(t, int64(1), b.queries.Load()-q0, "one statement: the insert")
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	q0 = b.queries.Load()
	res, err = b.client.SubmitMany(ctx, batch("b", true))
	require.NoError(t, err)
	require.Equal(t, int64(2), b.queries.Load()-q0, "the probe of the subscriptions, then the insert")
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM herald.records WHERE callback_url <> ''`))
	require.Equal(t, 101, b.count(t, `SELECT count(*) FROM herald.records WHERE metadata ? 'i'`))
}
