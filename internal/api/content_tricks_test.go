package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// The HTTP door reads text as the blocklist's fold does: each trick that
// keeps the word readable is still the word. What it accepts goes to the
// engine's vetter like every producer login's rows (lane '!vet').
func TestSubmit_RefusesBlockedWhateverTrick(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := b.admin.Exec(t.Context(), `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES
		('word', 'spam', 'refuse'), ('word', 'apple', 'refuse'), ('word', 'free money', 'refuse')`)
	require.NoError(t, err)
	for _, tc := range []struct{ name, body string }{
		{"ZeroWidthSpace", "buy sp\u200Bam now"},
		{"SoftHyphen", "buy sp\u00ADam now"},
		{"CyrillicHomoglyphs", "an \u0430\u0440\u0440\u04CF\u0435 a day"},
		{"Fullwidth", "buy \uFF53\uFF50\uFF41\uFF4D now"},
		{"CombiningMarks", "buy s\u0308pa\u0301m now"},
		{"NoBreakSpaceInsideAPhrase", "get free\u00A0money"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := intent("shop", tc.name)
			in["content"].(map[string]any)["sms"] = map[string]any{"body": tc.body}
			a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
			require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
			require.Equal(t, heraldtype.CodeContentBlocked, a.problem(t).Code)
		})
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.records`))

	in := intent("shop", "clean")
	in["content"].(map[string]any)["sms"] = map[string]any{"body": "your order shipped"}
	a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
	require.Less(t, a.status, 300, "%s", a.body)
	require.Equal(t, b.count(t, `SELECT count(*) FROM herald.routes`), b.count(t, `SELECT count(*) FROM herald.routes WHERE lane = '!vet'`),
		"the API's login is a producer's: its routes wait for the engine's check")
}
