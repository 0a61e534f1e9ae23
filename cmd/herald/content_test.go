package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
)

func TestTemplatesCmd_ApplyPublishesOnlyChanges(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	var applied []operator.TemplateApplied
	runJSON(t, b.env, &applied, "templates", "apply", "-f", "testdata/templates")
	require.Len(t, applied, 1)
	require.Equal(t, operator.TemplateApplied{File: "testdata/templates/order.shipped.json", Producer: "postgres",
		Name: "order.shipped", Version: 1, Published: true}, applied[0])
	runJSON(t, b.env, &applied, "templates", "apply", "-f", "testdata/templates")
	require.False(t, applied[0].Published, "the same text again: no new version")
	require.Equal(t, 1, applied[0].Version)

	var list []operator.TemplateSummary
	runJSON(t, b.env, &list, "templates", "list")
	require.Len(t, list, 1)
	require.Equal(t, []string{"en", "pt"}, list[0].Locales)

	var d operator.TemplateDetail
	runJSON(t, b.env, &d, "templates", "show", "order.shipped")
	require.Equal(t, []string{"name", "order"}, d.Variables)
	require.Equal(t, []string{"email", "sms"}, d.Channels)

	out, stderr, err := run(t, b.env, "templates", "render", "order.shipped", "--data", `{"name":"<Ana>","order":9}`, "--locale", "pt-BR")
	require.NoError(t, err, stderr)
	require.Contains(t, out, "sms (locale pt):\n  body: Olá <Ana>, pedido 9 enviado")
	require.Contains(t, out, "email (locale en):")
	require.Contains(t, out, "html: <p>Hi &lt;Ana&gt;</p>")
	_, _, err = run(t, b.env, "templates", "render", "order.shipped", "--data", `{"name":"Ana"}`)
	require.ErrorContains(t, err, "data lacks order")

	// A file that does not parse publishes nothing, naming the file.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"default_locale":"en","locales":{"en":{"sms":{"body":"{{.x"}}}}`), 0o600))
	_, _, err = run(t, b.env, "templates", "apply", "-f", dir)
	require.ErrorContains(t, err, "bad.json")
	// So does one that does what a template may not, saying what.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"default_locale":"en","locales":{"en":{"sms":{"body":"{{range 100000000000}}{{end}}"}}}}`), 0o600))
	_, _, err = run(t, b.env, "templates", "apply", "-f", dir)
	require.ErrorContains(t, err, "bad.json")
	require.ErrorContains(t, err, "template bad/en/sms.body: line 1:8: {{range 100000000000}} is not allowed")
	_, _, err = run(t, b.env, "templates", "apply")
	require.Error(t, err)
}

func TestHeldCmd_ListReleaseRejectAudited(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	ctx := context.Background()
	// The SQL is the test's own: two intents a review rule held.
	_, err := b.pool.Exec(ctx, `INSERT INTO herald.held_intents (producer, idempotency_key, notification_type, body, rule_id, rule, part)
		VALUES ('shop', 'k1', 'promo', '{}', 1, 'rule 1', 'content.sms.body'), ('shop', 'k2', 'promo', '{}', 1, 'rule 1', 'content.sms.body')`)
	require.NoError(t, err)
	var held []operator.Held
	runJSON(t, b.env, &held, "held", "list")
	require.Len(t, held, 2)

	_, _, err = run(t, b.env, "held", "release", "1")
	require.Error(t, err, "a reason is required")
	_, _, err = run(t, b.env, "held", "release", "x", "-reason", "r")
	require.Error(t, err)
	var d operator.HeldDecision
	runJSON(t, b.env, &d, "held", "release", "-reason", "looks fine", "1")
	require.Equal(t, []int64{1}, d.Done)
	runJSON(t, b.env, &d, "held", "reject", "-reason", "spam", "1", "2")
	require.Equal(t, []int64{2}, d.Done, "1 was released already")
	out, _, err := run(t, b.env, "held", "list")
	require.NoError(t, err)
	require.Contains(t, out, "no held intents")

	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.audit_log WHERE action IN ('held_release', 'held_reject') AND actor = 'tester'`).Scan(&n))
	require.Equal(t, 2, n)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.intake WHERE reviewed`).Scan(&n))
	require.Equal(t, 1, n)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.malformed_intents WHERE stream_entry_id = 'held:2' AND failure_code = 'content_blocked'`).Scan(&n))
	require.Equal(t, 1, n)
}
