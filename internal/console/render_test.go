package console

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTemplates_DrawWhenAQueryFailed draws every page as its handler
// leaves it when its query fails (the view made, its results nil): the
// error must reach the person, not a broken template.
func TestTemplates_DrawWhenAQueryFailed(t *testing.T) {
	t.Parallel()
	pages, err := parseTemplates()
	require.NoError(t, err)
	views := map[string]any{
		"overview": nil, "providers": nil, "dead_letters": &deadLettersView{}, "replay": &replayView{},
		"replay_progress": nil, "notification": &notificationView{}, "held": &heldView{}, "held_one": &heldView{},
		"campaigns": &campaignsView{}, "malformed": &malformedView{}, "malformed_one": &malformedView{}, "audit": &auditView{},
		"login": nil, "message": nil,
	}
	require.Len(t, views, len(pageNames))
	for name, v := range views {
		for _, role := range []string{"operator", "auditor"} {
			require.NoError(t, pages[name].Execute(io.Discard, &pageData{Title: name, Login: "someone", Role: role, Error: "boom", Page: v}), name)
		}
	}
}

func TestHighlight_MarksWhatTheRuleMatched(t *testing.T) {
	t.Parallel()
	require.Equal(t, []segment{{Text: "You won the "}, {Text: "LOTTERY", Match: true}, {Text: ", claim"}},
		highlight("You won the LOTTERY, claim", "word", "lottery"))
	require.Equal(t, []segment{{Text: "call "}, {Text: "555-0100", Match: true}},
		highlight("call 555-0100", "regex", `\d{3}-\d{4}`))
	require.Equal(t, []segment{{Text: "anything"}}, highlight("anything", "", ""), "a deleted rule marks nothing")
}

func TestRedactJSON_MasksSecretsAtAnyDepth(t *testing.T) {
	t.Parallel()
	got := redactJSON(`{"provider":"sms/a","settings":{"url":"x"},"nested":[{"api_key":"k1","note":"<b>"}],"Callback_Secret":"s"}`)
	require.NotContains(t, got, "k1")
	require.NotContains(t, got, `"url"`)
	require.NotContains(t, got, `"s"`)
	require.Contains(t, got, `"note": "<b>"`, "the template escapes; JSON's own escaping would hide the text")
	require.Equal(t, "not json", redactJSON("not json"))
}

func TestSafeNext_StaysOnTheConsole(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"/held?after=3": "/held?after=3", "//evil.example/x": "/", "https://evil.example": "/",
		"/\\evil.example": "/", "": "/"} {
		require.Equal(t, want, safeNext(in), in)
	}
}
