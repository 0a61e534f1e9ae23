package template

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shipped is a template in three locales: en (the default, every
// channel), pt (sms and email) and pt-BR (sms only).
const shipped = `{
  "en": {"sms": {"body": "Hi {{.name}}, order {{.order}} shipped"},
         "email": {"subject": "Order {{.order}} shipped", "text": "Hi {{.name}}", "html": "<p>Hi {{.name}}</p><a href=\"/o?id={{.order}}\">track</a>"},
         "webhook": {"event": "shipped", "order": "{{.order}}", "n": 1, "tags": ["{{.name}}", true]}},
  "pt": {"sms": {"body": "Olá {{.name}}, pedido {{.order}} enviado"},
         "email": {"subject": "Pedido {{.order}} enviado", "text": "Olá {{.name}}"}},
  "pt-BR": {"sms": {"body": "Oi {{.name}}, seu pedido {{.order}} saiu"}}
}`

func parseT(t *testing.T, locales string) *Template {
	t.Helper()
	tpl, err := Parse("shop", "order.shipped", 1, "en", []byte(locales))
	require.NoError(t, err)
	return tpl
}

func data(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := DecodeData([]byte(s))
	require.NoError(t, err)
	return m
}

func TestTemplate_RenderPicksLocaleWithFallback(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, shipped)
	d := data(t, `{"name":"Ana","order":9}`)
	tests := []struct {
		want, ch, locale, body string
	}{
		{"pt-BR", "sms", "pt-BR", "Oi Ana, seu pedido 9 saiu"},
		{"pt_br", "sms", "pt-BR", "Oi Ana, seu pedido 9 saiu"}, // case and separator folded
		{"pt-PT", "sms", "pt", "Olá Ana, pedido 9 enviado"},
		{"pt", "sms", "pt", "Olá Ana, pedido 9 enviado"},
		{"fr", "sms", "en", "Hi Ana, order 9 shipped"},
		{"", "sms", "en", "Hi Ana, order 9 shipped"},
		// pt-BR has no e-mail: its language's.
		{"pt-BR", "email", "pt", ""},
		// Only en has a webhook.
		{"pt-BR", "webhook", "en", ""},
	}
	for _, tt := range tests {
		r, err := tpl.Render(tt.want, tt.ch, d)
		require.NoError(t, err, "%s %s", tt.want, tt.ch)
		require.Equal(t, tt.locale, r.Locale, "%s %s", tt.want, tt.ch)
		if tt.body != "" {
			require.Equal(t, tt.body, r.Body)
		}
	}
	require.Equal(t, []string{"Hi Ana, order 9 shipped"}, []string{mustRender(t, tpl, "de", "sms", d).Body})
	require.Equal(t, []string{"pt-br", "pt"}, Fallbacks("pt-BR"), "folded: lower case, - for _")
	require.Empty(t, Fallbacks(""))
}

func mustRender(t *testing.T, tpl *Template, want, ch string, d map[string]any) *Rendered {
	t.Helper()
	r, err := tpl.Render(want, ch, d)
	require.NoError(t, err)
	return r
}

func TestTemplate_RenderEscapesOnlyHTML(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, shipped)
	d := data(t, `{"name":"<script>alert(1)</script>","order":"1\" onclick=\"x"}`)
	r := mustRender(t, tpl, "en", "email", d)
	require.NotContains(t, r.HTML, "<script>")
	require.Contains(t, r.HTML, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.NotContains(t, r.HTML, `" onclick="`, "a value in an attribute cannot close it")
	require.Contains(t, r.HTML, "<p>Hi ", "the template's own markup stays")
	require.Equal(t, "Hi <script>alert(1)</script>", r.Text, "text/plain is not HTML: nothing to escape")

	var c map[string]string
	require.NoError(t, json.Unmarshal(r.Content(), &c))
	require.Equal(t, r.HTML, c["html"])
	require.Equal(t, r.Subject, c["subject"])
}

func TestTemplate_DataIsNeverExecuted(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, shipped)
	// Template syntax in data is text, not a template.
	d := data(t, `{"name":"{{.order}} {{printf \"%s\" 1}}","order":9}`)
	require.Equal(t, "Hi {{.order}} {{printf \"%s\" 1}}, order 9 shipped", mustRender(t, tpl, "en", "sms", d).Body)
}

func TestTemplate_WebhookKeepsJSONShape(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, shipped)
	r := mustRender(t, tpl, "en", "webhook", data(t, `{"name":"A \"quoted\" name","order":9}`))
	require.JSONEq(t, `{"event":"shipped","order":"9","n":1,"tags":["A \"quoted\" name",true]}`, string(r.Webhook))
}

func TestTemplate_VariablesAreRootFields(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, `{"en": {"sms": {"body": "{{.a}} {{.b.c}} {{with .d}}{{.inner}}{{end}} {{range .e}}{{.x}}{{$.f}}{{end}} {{if .g}}{{.h}}{{else}}{{.i}}{{end}}"}},
		"fr": {"sms": {"body": "{{.j | printf \"%v\"}}"}}}`)
	require.Equal(t, []string{"a", "b", "d", "e", "f", "g", "h", "i", "j"}, tpl.Variables())
	require.Equal(t, []string{"b", "j"}, tpl.MissingData(data(t, `{"a":1,"d":{},"e":[],"f":1,"g":1,"h":1,"i":1}`)))
	require.Equal(t, []string{"sms"}, tpl.Channels())
	require.Equal(t, []string{"en", "fr"}, tpl.Locales())
}

func TestTemplate_RenderRefusesMissingData(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, `{"en": {"sms": {"body": "Hi {{.user.name}}"}}}`)
	_, err := tpl.Render("en", "sms", data(t, `{"user":{}}`))
	require.ErrorContains(t, err, `map has no entry for key "name"`)
	_, err = tpl.Render("en", "email", data(t, `{"user":{"name":"x"}}`))
	require.ErrorIs(t, err, ErrNoChannel)
}

func TestParse_RefusesUnsafeTemplates(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, locales, want string }{
		{"NotJSON", `{`, "locales"},
		{"UnknownField", `{"en": {"push": {}}}`, "unknown field"},
		{"NoDefault", `{"fr": {"sms": {"body": "x"}}}`, `default locale "en"`},
		{"BadLocale", `{"en": {"sms": {"body": "x"}}, "e n": {"sms": {"body": "x"}}}`, "locale"},
		{"NoChannel", `{"en": {}}`, "no channel"},
		{"EmptyBody", `{"en": {"sms": {"body": " "}}}`, "body is empty"},
		{"NoEmailBody", `{"en": {"email": {"subject": "s"}}}`, "text or html"},
		{"Syntax", `{"en": {"sms": {"body": "{{.a"}}}`, "unclosed action"},
		{"TemplateAction", `{"en": {"sms": {"body": "{{template \"x\"}}"}}}`, "not allowed"},
		{"BlockAction", `{"en": {"sms": {"body": "{{block \"x\" .}}y{{end}}"}}}`, "not allowed"},
		{"UnknownFunction", `{"en": {"sms": {"body": "{{exec .a}}"}}}`, "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("shop", "t", 1, "en", []byte(tt.locales))
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := Parse("shop", "bad name", 1, "en", []byte(`{"en": {"sms": {"body": "x"}}}`))
	require.ErrorContains(t, err, "template name")
}

func TestTemplate_RenderStopsRunaway(t *testing.T) {
	t.Parallel()
	// A range may go over data only, and data is bounded; what it writes
	// stops at MaxRenderedBytes.
	tpl := parseT(t, `{"en": {"sms": {"body": "{{range .a}}xxxxxxxx{{end}}"}}}`)
	_, err := tpl.Render("en", "sms", map[string]any{"a": make([]any, 40_000)})
	require.ErrorIs(t, err, errTooLong)
	require.ErrorIs(t, err, ErrOverBudget)
}

func TestTemplate_SubjectLineBreakRefused(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, shipped)
	_, err := tpl.Render("en", "email", data(t, `{"name":"x","order":"9\r\nBcc: a@b"}`))
	require.ErrorContains(t, err, "line break")
	require.True(t, strings.Contains(err.Error(), "email.subject"))
}
