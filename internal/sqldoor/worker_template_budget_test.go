package sqldoor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/intake"
)

// hostileTemplates are sms bodies written to hurt the engine, by template
// name, and what the refusal of an entry naming each says.
var hostileTemplates = map[string][2]string{
	"loop":    {`{{range 100000000000}}{{end}}`, "template loop/en/sms.body: line 1:8: {{range 100000000000}} is not allowed"},
	"printf":  {`{{$a := printf "%999999999s" ""}}{{len $a}}`, "template printf/en/sms.body: line 1:8: printf format \"%999999999s\": a width over 99 is not allowed"},
	"recurse": {`{{define "x"}}{{template "x" .}}{{end}}{{template "x" .}}`, "template recurse/en/sms.body: {{define}} is not allowed"},
	"amplify": {`{{range .a}}{{range $.a}}{{range $.a}}x{{end}}{{end}}{{end}}`, "template amplify/en/sms.body: over the template's budget: more than 100000 steps"},
}

func TestWorker_HostileTemplateRefusedOthersPass(t *testing.T) {
	t.Parallel()
	b := setupWorker(t, func(c *WorkerConfig) { c.Limits = intake.Limits{} }) // intake's defaults: data up to 64 KiB
	ctx := context.Background()
	evil, asEvil, _ := b.login(t, "evil", "herald_producer")
	good, asGood, _ := b.login(t, "good", "herald_producer")

	// The producer publishes as producers do, with an INSERT of its own
	// (the SQL is the test's: a producer in psql).
	for name, h := range hostileTemplates {
		locales, err := json.Marshal(map[string]any{"en": map[string]any{"sms": map[string]string{"body": h[0]}}})
		require.NoError(t, err)
		_, err = asEvil.Exec(ctx, `INSERT INTO herald.templates (name, version, default_locale, locales) VALUES ($1, 1, 'en', $2)`, name, locales)
		require.NoError(t, err)
	}
	// 30,000 elements: 60 KB of data, within intake's limits.
	data := `{"a":[` + strings.TrimSuffix(strings.Repeat("0,", 30_000), ",") + `]}`
	var bodies []string
	for name := range hostileTemplates {
		bodies = append(bodies, `{"notification_type":"t","producer":"`+evil+`","idempotency_key":"`+name+`",
			"channels":["sms"],"audience":{"sms":["+14155550123"]},"template":{"name":"`+name+`"},"data":`+data+`}`)
	}
	insertAs(t, asEvil, bodies[:2]...)
	insertAs(t, asGood, entryOf(good, "good-1"))
	insertAs(t, asEvil, bodies[2:]...)
	insertAs(t, asGood, entryOf(good, "good-2"))

	start := time.Now()
	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	t.Logf("drained %d entries in %s", accepted+malformed, time.Since(start))
	require.Equal(t, 2, accepted, "the other producer's entries are accepted in the same drain")
	require.Equal(t, len(hostileTemplates), malformed)
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = '"+good+"'"))

	rows, err := b.pool.Query(ctx, `SELECT idempotency_key, failure_code, failure_message FROM herald.malformed_intents WHERE producer = $1`, evil)
	require.NoError(t, err)
	got := map[string][2]string{}
	for rows.Next() {
		var k, code, msg string
		require.NoError(t, rows.Scan(&k, &code, &msg))
		got[k] = [2]string{code, msg}
	}
	require.NoError(t, rows.Err())
	for name, h := range hostileTemplates {
		require.Equal(t, "invalid_field", got[name][0], name)
		require.Contains(t, got[name][1], h[1], name)
	}
}
