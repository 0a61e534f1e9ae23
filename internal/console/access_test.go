package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/console"
	"github.com/heraldhq/herald/internal/harness/operatortest"
)

// TestConsole_AccessPolicy takes every action the console offers as an
// auditor, then as an operator: the database refuses the auditor each
// one (the page says so, nothing changes, no audit row is written) and
// lets the operator do it (audited under the operator's login).
func TestConsole_AccessPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.stageStory(t)
	o.failing.Store(false) // replayed routes go out this time

	aud, op := b.client(t), b.client(t)
	require.Equal(t, http.StatusSeeOther, aud.signIn(b.auditor, auditorPW))
	require.Equal(t, http.StatusSeeOther, op.signIn(b.operator, operatorPW))
	heldID := strconv.Itoa(b.count(t, `SELECT id FROM herald.held_intents`))

	type action struct {
		name, path string
		form       url.Values
		// done reports whether the action took effect.
		done func() bool
	}
	actions := []action{
		{"ReplayDeadLetters", "/dead-letters/replay", url.Values{"mode": {"run"}, "producer": {"shop"}, "reason": {"provider back"}},
			func() bool { return b.count(t, `SELECT count(*) FROM herald.dead_letters`) == 0 }},
		{"ReleaseHeld", "/held/" + heldID + "/release", url.Values{"reason": {"reviewed: a real prize"}},
			func() bool { return b.count(t, `SELECT count(*) FROM herald.held_intents`) == 0 }},
		{"DrainProvider", "/providers/state", url.Values{"provider": {"sms/flaky"}, "state": {"draining"}, "reason": {"outage"}},
			func() bool {
				return b.count(t, `SELECT count(*) FROM herald.providers WHERE name = 'sms/flaky' AND state = 'draining'`) == 1
			}},
		{"CancelCampaign", "/campaigns/cancel", url.Values{"producer": {"shop"}, "campaign": {"spring"}, "reason": {"sale postponed"}},
			func() bool {
				return b.count(t, `SELECT count(*) FROM herald.routes r JOIN herald.records rec USING (notification_id)
					WHERE rec.campaign = 'spring' AND r.status = 'canceled'`) == 2
			}},
	}
	audits := func() int { return b.count(t, `SELECT count(*) FROM herald.audit_log`) }

	for _, a := range actions {
		t.Run("Auditor"+a.name, func(t *testing.T) {
			before := audits()
			form := cloneWith(a.form, "csrf", aud.token())
			status, body := aud.post(a.path, form)
			require.Equal(t, http.StatusForbidden, status, body)
			require.Contains(t, body, "The database refused this: your login "+b.auditor+" (auditor) may not do it.")
			require.False(t, a.done(), "an auditor's %s took effect", a.name)
			require.Equal(t, before, audits(), "an auditor's refused action wrote an audit row")
		})
	}
	// The auditor still reads every page.
	for _, p := range []string{"/", "/providers", "/dead-letters", "/held", "/held/" + heldID, "/campaigns", "/malformed", "/audit"} {
		status, body := aud.get(p)
		require.Equal(t, http.StatusOK, status, "%s: %s", p, body)
	}
	// A dry run is a read: the auditor may look at what a replay would do.
	status, body := aud.post("/dead-letters/replay", url.Values{"csrf": {aud.token()}, "mode": {"dry"}, "producer": {"shop"}})
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `<span id="matched">6</span>`)

	for _, a := range actions {
		t.Run("Operator"+a.name, func(t *testing.T) {
			status, body := op.post(a.path, cloneWith(a.form, "csrf", op.token()))
			require.Equal(t, http.StatusOK, status, body)
			require.True(t, a.done(), "the operator's %s did not take effect", a.name)
		})
	}
	require.Equal(t, 4, b.count(t, `SELECT count(DISTINCT action) FROM herald.audit_log WHERE login = $1`, b.operator))
}

// TestConsole_RefusesForgedAndStrangers proves the doors: no session, no
// form token, another site's Origin, a wrong password and a producer's
// login are each refused, and sign-in attempts are limited.
func TestConsole_RefusesForgedAndStrangers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t)

	status, _ := c.get("/dead-letters")
	require.Equal(t, http.StatusSeeOther, status, "a page without a session goes to sign-in")
	status, _ = c.post("/campaigns/cancel", url.Values{"producer": {"shop"}, "campaign": {"x"}, "reason": {"r"}})
	require.Equal(t, http.StatusUnauthorized, status)

	require.Equal(t, http.StatusUnauthorized, c.signIn(b.operator, "wrong"))
	_, body := c.post("/login", url.Values{"user": {b.operator}, "password": {"wrong"}})
	require.Contains(t, body, "Wrong login or password.")
	_, body = c.post("/login", url.Values{"user": {b.producer}, "password": {producerPW}})
	require.Contains(t, body, "is neither an operator")

	require.Equal(t, http.StatusSeeOther, c.signIn(b.operator, operatorPW))
	status, body = c.post("/campaigns/cancel", url.Values{"producer": {"shop"}, "campaign": {"x"}, "reason": {"r"}})
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, body, "security token is missing")
	status, _ = c.post("/campaigns/cancel", url.Values{"producer": {"shop"}, "campaign": {"x"}, "reason": {"r"}, "csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, status)

	req, err := http.NewRequest(http.MethodPost, c.base+"/campaigns/cancel",
		strings.NewReader(url.Values{"producer": {"shop"}, "campaign": {"x"}, "reason": {"r"}, "csrf": {c.token()}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	res, err := c.http.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a POST from another site")

	// Sign-out ends the session: its cookie opens nothing any more.
	require.Equal(t, http.StatusSeeOther, func() int { s, _ := c.post("/logout", url.Values{"csrf": {c.token()}}); return s }())
	status, _ = c.get("/audit")
	require.Equal(t, http.StatusSeeOther, status)

	// Sign-in attempts are limited per address (the test's console allows
	// a burst of 50).
	limited := false
	for range 60 {
		if c.signIn(b.operator, "wrong") == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	require.True(t, limited, "60 wrong passwords in a row were never limited")
}

func cloneWith(v url.Values, k, val string) url.Values {
	out := url.Values{}
	for kk, vv := range v {
		out[kk] = append([]string(nil), vv...)
	}
	out.Set(k, val)
	return out
}

// TestConsole_BulkReplayQueuedAndFollowed proves a replay of more dead
// letters than the console's threshold is handed to a River job and its
// page follows it: queued until a serve's maintenance works it.
func TestConsole_BulkReplayQueuedAndFollowed(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AsyncThreshold = 1 })
	operatortest.Seed(t, b.admin, operatortest.Spec{N: 3, Producer: "shop", Dead: true})
	c := b.client(t)
	require.Equal(t, http.StatusSeeOther, c.signIn(b.operator, operatorPW))
	req, err := http.NewRequest(http.MethodPost, c.base+"/dead-letters/replay",
		strings.NewReader(url.Values{"csrf": {c.token()}, "mode": {"run"}, "producer": {"shop"}, "reason": {"bulk"}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.http.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	where := res.Header.Get("Location")
	require.True(t, strings.HasPrefix(where, "/replays/rpl_"), where)
	status, body := c.get(where)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "queued, not started yet")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.audit_log WHERE action = 'dead_letter_replay_queued' AND login = $1`, b.operator))
}
