package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/vet"
)

func TestSubmit_MeetsBlocklistAndHolds(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// The SQL is the test's own: an operator's rules.
	_, err := b.admin.Exec(t.Context(), `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES
		('word', 'casino', 'refuse'), ('word', 'gratuit', 'review')`)
	require.NoError(t, err)
	in := intent("shop", "Refuse")
	in["content"].(map[string]any)["sms"] = map[string]any{"body": "Casino night"}
	a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	p := a.problem(t)
	require.Equal(t, heraldtype.CodeContentBlocked, p.Code)
	require.Equal(t, "content.sms.body", p.Field)
	require.Contains(t, string(a.body), "rule 1 (word")
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))

	// A review match is stored, its routes waiting for the engine's
	// vetter (lane '!vet'), which holds them for an operator.
	in = intent("shop", "Review")
	in["content"].(map[string]any)["sms"] = map[string]any{"body": "Livraison gratuit"}
	a = b.do(t, "POST", "/v1/notifications", in, b.shopKey)
	require.Less(t, a.status, 300, "%s", a.body)
	require.Contains(t, string(a.body), `"held":true`)
	require.Contains(t, string(a.body), `rule 2 (word`)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records`))
	require.Equal(t, b.count(t, `SELECT count(*) FROM herald.routes`), b.count(t, `SELECT count(*) FROM herald.routes WHERE lane = '!vet'`))
	n, err := vet.New(b.admin, nil).VetOnce(t.Context())
	require.NoError(t, err)
	require.Positive(t, n)
	require.Equal(t, b.count(t, `SELECT count(*) FROM herald.routes`), b.count(t, `SELECT count(*) FROM herald.routes WHERE lane = '!held'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.held_intents WHERE notification_id IS NOT NULL AND rule LIKE 'rule 2 %'`))
}

func TestSubmit_HostileTemplateRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// The SQL is the test's own: shop publishing a template that would
	// loop without end.
	_, err := b.admin.Exec(t.Context(), `INSERT INTO herald.templates (producer, name, version, default_locale, locales)
		VALUES ('shop', 'loop', 1, 'en', '{"en": {"sms": {"body": "{{range 100000000000}}x{{end}}"}}}')`)
	require.NoError(t, err)
	in := intent("shop", "loop")
	delete(in, "content")
	in["channels"] = []string{"sms"}
	in["template"] = map[string]any{"name": "loop"}
	in["data"] = map[string]any{}
	a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	p := a.problem(t)
	require.Equal(t, heraldtype.CodeInvalidField, p.Code)
	require.Equal(t, "template.name", p.Field)
	require.Contains(t, string(a.body), "template loop/en/sms.body: line 1:8: {{range 100000000000}} is not allowed")
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))
}
