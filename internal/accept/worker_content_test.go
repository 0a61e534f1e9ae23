package accept

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

func TestWorkerAcceptsTemplatedEntriesAndRecordsMissingDataAsMalformed(t *testing.T) {
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
