package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/store"
)

// listKeys pages through GET /v1/notifications?query with limit and
// returns the idempotency keys seen, page by page.
func listKeys(t *testing.T, b *testBundle, query string, limit int) [][]string {
	t.Helper()
	var pages [][]string
	path := fmt.Sprintf("/v1/notifications?limit=%d&%s", limit, query)
	for range 20 {
		a := b.do(t, "GET", path, nil, b.shopKey)
		require.Equal(t, http.StatusOK, a.status, "%s: %s", query, a.body)
		var l List
		a.json(t, &l)
		page := []string{}
		for _, n := range l.Notifications {
			require.Equal(t, "shop", n.Producer)
			page = append(page, n.IdempotencyKey)
		}
		pages = append(pages, page)
		if l.Next == "" {
			return pages
		}
		path = fmt.Sprintf("/v1/notifications?limit=%d&%s&after=%s", limit, query, l.Next)
	}
	t.Fatalf("%s: more than 20 pages", query)
	return nil
}

func flat(pages [][]string) []string {
	out := []string{}
	for _, p := range pages {
		out = append(out, p...)
	}
	return out
}

// idTime returns the millisecond a UUIDv7 notification id was made in.
func idTime(t *testing.T, id string) time.Time {
	ms, err := strconv.ParseInt(strings.ReplaceAll(id, "-", "")[:12], 16, 64)
	require.NoError(t, err)
	return time.UnixMilli(ms)
}

// TestList_FiltersByStatusChannelCampaignTime: each filter keeps to the
// notifications it names, they combine, and they page with the cursor.
func TestList_FiltersByStatusChannelCampaignTime(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	emailOnly := func(key string) map[string]any {
		in := intent("shop", key)
		in["channels"] = []string{"email"}
		in["audience"] = map[string]any{"user_ids": []string{"42"}}
		delete(in["content"].(map[string]any), "sms")
		return in
	}
	inCampaign := intent("shop", "a3")
	inCampaign["campaign"] = "spring"
	type made struct{ id, at time.Time }
	var times []made
	for _, in := range []map[string]any{intent("shop", "a1"), emailOnly("a2"), inCampaign, emailOnly("a4")} {
		if len(times) > 0 { // a millisecond of its own for each, since and until being to the millisecond
			for time.Since(times[len(times)-1].at) < 3*time.Millisecond {
			}
		}
		a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
		require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
		var rc Receipt
		a.json(t, &rc)
		var at time.Time
		require.NoError(t, b.admin.QueryRow(ctx, `SELECT accepted_at FROM herald.records WHERE notification_id = $1`,
			rc.NotificationID).Scan(&at))
		times = append(times, made{idTime(t, rc.NotificationID), at})
		if in["idempotency_key"] == "a4" {
			require.Equal(t, http.StatusOK, b.do(t, "POST", "/v1/notifications/"+rc.NotificationID+"/cancel", nil, b.shopKey).status)
		}
	}
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("mall", "a1"), b.mallKey).status)
	// The first moment that is both a notification's id's and at or before
	// its accepted_at, to the millisecond.
	from := func(i int) string {
		m := times[i].id
		if times[i].at.Before(m) {
			m = times[i].at
		}
		return url.QueryEscape(m.Truncate(time.Millisecond).Format(time.RFC3339Nano))
	}

	for query, want := range map[string][]string{
		"":                               {"a4", "a3", "a2", "a1"},
		"status=pending":                 {"a3", "a2", "a1"},
		"status=canceled":                {"a4"},
		"status=published":               {},
		"channel=sms":                    {"a3", "a1"},
		"channel=email&status=pending":   {"a3", "a2", "a1"},
		"channel=webhook":                {},
		"campaign=spring":                {"a3"},
		"campaign=spring&status=pending": {"a3"},
		"campaign=autumn":                {},
		"since=" + from(1):               {"a4", "a3", "a2"},
		"until=" + from(2):               {"a2", "a1"},
		"since=" + from(1) + "&until=" + from(3) + "&channel=email": {"a3", "a2"},
		"since=" + from(3) + "&until=" + from(1):                    {},
	} {
		require.Equal(t, want, flat(listKeys(t, b, query, 1)), "%s, one a page", query)
		require.Equal(t, want, flat(listKeys(t, b, query, 50)), "%s", query)
	}
}

// TestList_FilterValuesCheckedAfterTheKey: a bad value is a 400 naming
// its parameter, and a request without a valid key learns only 401.
func TestList_FilterValuesCheckedAfterTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for query, field := range map[string]string{
		"status=delivered":             "status",
		"status=":                      "status",
		"channel=fax":                  "channel",
		"campaign=spring%20sale":       "campaign",
		"campaign=":                    "campaign",
		"campaign=%20spring":           "campaign",
		"since=yesterday":              "since",
		"until=2026-11-28":             "until",
		"sort=newest":                  "sort",
		"status=pending&status=failed": "status",
		"limit=1&limit=2":              "limit",
		"a=%zz":                        "query",
	} {
		a := b.do(t, "GET", "/v1/notifications?"+query, nil, b.shopKey)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", query, a.body)
		p := a.problem(t)
		require.Equal(t, heraldtype.CodeInvalidField, p.Code, query)
		require.Equal(t, field, p.Field, query)
		a = b.do(t, "GET", "/v1/notifications?"+query, nil, NewSecret())
		require.Equal(t, http.StatusUnauthorized, a.status, "%s without a valid key", query)
	}
}

// TestServer_RefusesUnknownQueryParameters sends each
// authenticated operation of the document a parameter it does not
// document: 400 naming it, after authentication.
func TestServer_RefusesUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for pattern, params := range documentedQuery() {
		method, path, _ := strings.Cut(pattern, " ")
		if path == "/openapi.json" || path == "/healthz" || path == "/readyz" {
			continue // no key, no query: the probes take none and answer anyway
		}
		for _, name := range []string{"id", "user_id"} {
			path = strings.ReplaceAll(path, "{"+name+"}", "x1")
		}
		require.NotContains(t, params, "bogus")
		a := b.do(t, method, path+"?bogus=1", "{}", b.shopKey)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", pattern, a.body)
		require.Equal(t, "bogus", a.problem(t).Field, pattern)
		require.Contains(t, a.problem(t).Errors[0].Message, "unknown query parameter", pattern)
		a = b.do(t, method, path+"?bogus=1", "{}", NewSecret())
		require.Equal(t, http.StatusUnauthorized, a.status, "%s without a valid key", pattern)
	}
}

// queryLog records the SQL and arguments of the list's statement.
type queryLog struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (q *queryLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "-- name: RecordListFilteredPage") {
		q.mu.Lock()
		q.sql, q.args = d.SQL, d.Args
		q.mu.Unlock()
	}
	return ctx
}

func (q *queryLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestList_FiltersReadBoundedRecords fills the database with
// 2,500 of the producer's notifications that no status filter matches
// (and 5,000 of another producer's): a status filter pages through them
// 1,000 at a time, short pages with a cursor, to the one that matches, and
// each of the list's plans reads records by an index, never a sequential
// scan, and at most 1,000 of the producer's.
func TestList_FiltersReadBoundedRecords(t *testing.T) {
	t.Parallel()
	log := &queryLog{}
	b := setup(t, func(c *Config) {
		pc := c.Pool.Config()
		pc.ConnConfig.Tracer = log
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		c.Pool = pool
	})
	ctx := context.Background()
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "m1"), b.shopKey).status)
	// Newer than m1, each a millisecond of its own, every route published.
	for _, p := range []struct {
		producer string
		n, from  int
	}{{"mall", 2500, 0}, {"shop", 2500, 2500}, {"mall", 2500, 5000}} {
		_, err := b.admin.Exec(ctx, `
			INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind, payload_json,
				idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at,
				channels, campaign)
			SELECT substr(herald.id_floor(x.at), 1, 14) || '7000-8000-' || lpad(to_hex(i), 12, '0'), 'bulk', $1, 'users',
				'{}', 'bulk-' || i, 'fp', x.at, x.at, x.at, x.at + interval '2 days', ARRAY['email'],
				CASE WHEN i % 10 = 0 THEN 'autumn' END
			FROM generate_series($2::integer + 1, $2::integer + $3::integer) AS i,
				LATERAL (SELECT now() + interval '1 second' + i * interval '1 millisecond' AS at) AS x`,
			p.producer, p.from, p.n)
		require.NoError(t, err)
	}
	_, err := b.admin.Exec(ctx, `
		INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status, max_attempts, created_at, updated_at)
		SELECT notification_id, notification_id || ':0', 'email', 'user:42', 'published', 10, now(), now()
		FROM herald.records WHERE notification_type = 'bulk'`)
	require.NoError(t, err)
	_, err = b.admin.Exec(ctx, `ANALYZE herald.records; ANALYZE herald.routes`)
	require.NoError(t, err)

	pages := listKeys(t, b, "status=pending", 50)
	require.Equal(t, [][]string{{}, {}, {"m1"}}, pages, "1,000 examined a page: 1,000, 1,000, then 500 and m1")
	require.Len(t, flat(listKeys(t, b, "campaign=autumn", 200)), 250)

	for _, query := range []string{
		"status=pending", "channel=sms", "campaign=autumn", "campaign=autumn&status=failed",
		"since=2026-01-01T00:00:00Z&until=2099-01-01T00:00:00Z&status=pending", "limit=200",
	} {
		a := b.do(t, "GET", "/v1/notifications?"+query, nil, b.shopKey)
		require.Equal(t, http.StatusOK, a.status, "%s: %s", query, a.body)
		log.mu.Lock()
		sql, args := log.sql, log.args
		log.mu.Unlock()
		plan := explainAsAPI(t, b, sql, args)
		walkPlan(plan, func(node map[string]any) {
			rel, _ := node["Relation Name"].(string)
			if !strings.HasPrefix(rel, "records") && !strings.HasPrefix(rel, "routes") {
				return
			}
			if node["Node Type"] == "Seq Scan" {
				// Only an empty partition (a week with no finished route) may
				// be read whole: there is nothing in it to read.
				read, _ := node["Rows Removed by Filter"].(float64)
				require.Zero(t, read+node["Actual Rows"].(float64), "%s: %s is read sequentially", query, rel)
			}
			if strings.HasPrefix(rel, "records") && node["Parent Relationship"] != "SubPlan" {
				rows := node["Actual Rows"].(float64) * node["Actual Loops"].(float64)
				require.LessOrEqual(t, rows, float64(listScanLimit), "%s: %s rows of %s", query, fmt.Sprint(rows), rel)
				removed, _ := node["Rows Removed by Filter"].(float64)
				t.Logf("%s: %s, %s: %v of the producer's rows, %v of others' passed over", query, rel, node["Node Type"], rows, removed)
			}
		})
	}
}

// explainAsAPI returns the plan, run, of the statement as the API runs it:
// as its login, acting for the shop's key.
func explainAsAPI(t *testing.T, b *testBundle, sql string, args []any) map[string]any {
	t.Helper()
	ctx := context.Background()
	tx, err := b.apiPool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	producer, err := store.New().APIKeyAuthenticate(ctx, tx, b.shopKey)
	require.NoError(t, err)
	require.Equal(t, "shop", producer)
	var out []byte
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&out))
	var plans []map[string]any
	require.NoError(t, json.Unmarshal(out, &plans))
	return plans[0]["Plan"].(map[string]any)
}

func walkPlan(node map[string]any, f func(map[string]any)) {
	f(node)
	for _, c := range asSlice(node["Plans"]) {
		walkPlan(c.(map[string]any), f)
	}
}
