package sqldoor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// templatedEntry is an intake entry of producer "postgres" (the test's
// login, the engine's) naming template "order" with data.
func templatedEntry(key, data string) string {
	return `{"notification_type":"order.shipped","producer":"postgres","idempotency_key":"` + key + `",
		"channels":["sms"],"audience":{"sms":["+14155550123"]},
		"template":{"name":"order","locale":"fr"},"data":` + data + `}`
}

func TestWorker_TemplatedMissingDataIsMalformed(t *testing.T) {
	t.Parallel()
	b := setupWorker(t, nil)
	ctx := context.Background()
	// The SQL here is the test's own: a producer publishing in psql.
	_, err := b.pool.Exec(ctx, `INSERT INTO herald.templates (producer, name, version, default_locale, locales)
		VALUES ('postgres', 'order', 1, 'en', '{"en": {"sms": {"body": "Hi {{.name}}, order {{.order}}"}}}')`)
	require.NoError(t, err)
	b.insert(t,
		templatedEntry("ok", `{"name":"Ana","order":10.50}`),
		templatedEntry("missing", `{"name":"Ana"}`),
		templatedEntry("notobject", `["x"]`),
		`{"notification_type":"t","producer":"postgres","idempotency_key":"unknown","channels":["sms"],
			"audience":{"sms":["+14155550123"]},"template":{"name":"gone"},"data":{}}`,
	)
	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, accepted)
	require.Equal(t, 3, malformed)

	var payload string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT payload_json FROM herald.records WHERE idempotency_key = 'ok'`).Scan(&payload))
	require.JSONEq(t, `{"data":{"name":"Ana","order":10.50},"template":{"locale":"fr","name":"order","version":1}}`, payload)
	require.Contains(t, payload, "10.50", "numbers are kept as written")

	rows, err := b.pool.Query(ctx, `SELECT idempotency_key, failure_code, failure_message FROM herald.malformed_intents ORDER BY idempotency_key`)
	require.NoError(t, err)
	got := map[string][2]string{}
	for rows.Next() {
		var k, code, msg string
		require.NoError(t, rows.Scan(&k, &code, &msg))
		got[k] = [2]string{code, msg}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, "missing_field", got["missing"][0])
	require.Contains(t, got["missing"][1], "data.order")
	require.Equal(t, "wrong_shape", got["notobject"][0])
	require.Equal(t, "unknown_template", got["unknown"][0])
}

func TestWorker_RefusesBlockedHoldsReviewed(t *testing.T) {
	t.Parallel()
	b := setupWorker(t, func(c *WorkerConfig) { c.ContentRulesMaxAge = -1 })
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES
		('word', 'casino', 'refuse'), ('word', 'gratuite', 'review')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO herald.templates (producer, name, version, default_locale, locales)
		VALUES ('postgres', 'order', 1, 'en', '{"en": {"sms": {"body": "Hi {{.name}}, order {{.order}}"}},
			"fr": {"sms": {"body": "Bonjour {{.name}}, livraison gratuite {{.order}}"}}}')`)
	require.NoError(t, err)
	sms := func(key, body string) string {
		return `{"notification_type":"promo","producer":"postgres","idempotency_key":"` + key + `",
			"channels":["sms"],"audience":{"sms":["+14155550123"]},"content":{"sms":{"body":"` + body + `"}}}`
	}
	b.insert(t,
		sms("blocked", "Casino tonight"),
		sms("clean", "Your order shipped"),
		templatedEntry("data-blocked", `{"name":"casino","order":1}`),
		// Only the fr text holds a review word: held, although most
		// recipients would get the en text.
		templatedEntry("fr-review", `{"name":"Ana","order":1}`),
	)
	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, accepted)
	require.Equal(t, 2, malformed)

	var code, msg string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT failure_code, failure_message FROM herald.malformed_intents WHERE idempotency_key = 'blocked'`).Scan(&code, &msg))
	require.Equal(t, "content_blocked", code)
	require.Contains(t, msg, `word "casino"`)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT failure_code, failure_message FROM herald.malformed_intents WHERE idempotency_key = 'data-blocked'`).Scan(&code, &msg))
	require.Equal(t, "content_blocked", code, "a template's text is checked as rendered with the data")

	var heldID int64
	var part, by string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id, part, submitted_by FROM herald.held_intents WHERE idempotency_key = 'fr-review'`).Scan(&heldID, &part, &by))
	require.Equal(t, "template:fr/sms.body", part)
	require.Equal(t, "postgres", by)
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records WHERE idempotency_key = 'fr-review'`))

	_, err = b.pool.Exec(ctx, `SELECT herald.held_release(ARRAY[$1::bigint], 'ops', 'ok')`, heldID)
	require.NoError(t, err)
	accepted, malformed, err = b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, accepted, "released: the blocklist lets it through")
	require.Zero(t, malformed)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records WHERE idempotency_key = 'fr-review'`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.held_intents`))
}
