package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
)

var olderLink = regexp.MustCompile(`<a id="older" href="([^"]+)">`)

// TestConsole_NotificationByRecipient finds the notifications to a phone
// number typed as a person would, as an operator and as an auditor, page
// by page; a producer's login is not let in.
func TestConsole_NotificationByRecipient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// operatortest's sms routes go to +14155550123.
	operatortest.Seed(t, b.admin, operatortest.Spec{N: 52, Channel: "sms", Producer: "billing"})
	dead := operatortest.Seed(t, b.admin, operatortest.Spec{N: 1, Channel: "sms", Dead: true})
	operatortest.Seed(t, b.admin, operatortest.Spec{N: 2, Channel: "email"})
	path := "/notification?" + url.Values{"recipient": {"+1 (415) 555-0123"}}.Encode()

	for _, who := range []struct{ login, password string }{{b.operator, operatorPW}, {b.auditor, auditorPW}} {
		c := b.client(t)
		require.Equal(t, http.StatusSeeOther, c.signIn(who.login, who.password))
		status, body := c.get(path)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "<code>&#43;14155550123</code>") // html/template escapes +
		require.Contains(t, body, "The newest 50, newest first.")
		require.Equal(t, 50, strings.Count(body, "<td>&#43;14155550123</td>"), "a page of routes")
		require.Contains(t, body, `<a href="/notification?id=`+dead[0].NotificationID+`">`, "the dead letter, linked")
		require.Contains(t, body, "All 1.")
		m := olderLink.FindStringSubmatch(body)
		require.NotNil(t, m, "a link to older notifications")

		status, body = c.get(html.UnescapeString(m[1]))
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, 3, strings.Count(body, "<td>&#43;14155550123</td>"), "the rest")
		require.Contains(t, body, "3 older ones, newest first.")
		require.NotContains(t, body, `id="older"`)

		status, body = c.get("/notification?recipient=nobody%40example.com")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `id="by-recipient-none"`)
		require.Contains(t, body, "No dead letters of this recipient.")

		status, body = c.get(path + "&after=forged")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "That link to older notifications is not one this page made")
	}

	c := b.client(t)
	_, body := c.post("/login", url.Values{"user": {b.producer}, "password": {producerPW}})
	require.Contains(t, body, "is neither an operator")
	status, _ := c.get(path)
	require.Equal(t, http.StatusSeeOther, status, "a producer reads its notifications through the API or herald find, not the console")
}
