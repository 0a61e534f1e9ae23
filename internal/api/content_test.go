package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestSubmitOverHTTPMeetsTheContentBlocklistAndCannotBeHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// The SQL is the test's own: an operator's rules.
	_, err := b.admin.Exec(t.Context(), `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES
		('word', 'casino', 'refuse'), ('word', 'gratuit', 'review')`)
	require.NoError(t, err)
	for _, tc := range []struct{ name, body, want string }{
		{"Refuse", "Casino night", "rule 1 (word"},
		{"Review", "Livraison gratuit", "cannot hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := intent("shop", tc.name)
			in["content"].(map[string]any)["sms"] = map[string]any{"body": tc.body}
			a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
			require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
			p := a.problem(t)
			require.Equal(t, heraldtype.CodeContentBlocked, p.Code)
			require.Equal(t, "content.sms.body", p.Field)
			require.Contains(t, string(a.body), tc.want)
		})
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.held_intents`))
}

func TestSubmitOverHTTPNamingAHostileTemplateIsRefusedNamingWhatIsNotAllowed(t *testing.T) {
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
