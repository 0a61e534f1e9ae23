package console_test

import (
	"context"
	"html"
	"log/slog"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/store"
)

// runEngine runs an engine that keeps its process row as host until stop
// (or the test's end), and returns the row's id once it is recorded.
func (b *testBundle) runEngine(t *testing.T, host string) (id string, stop func()) {
	t.Helper()
	e, err := engine.New(b.admin, &engine.Config{
		Logger:   slog.New(slog.DiscardHandler),
		Dispatch: dispatch.Config{PollInterval: 50 * time.Millisecond},
		Process:  &engine.Process{Heartbeat: 100 * time.Millisecond, Version: "v9.9.9-test", Host: host, Console: b.console.Addr().String()},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	require.Eventually(t, func() bool {
		return b.admin.QueryRow(context.Background(), `SELECT id FROM herald.serve_processes WHERE host = $1 AND ready`, host).Scan(&id) == nil
	}, 20*time.Second, 20*time.Millisecond, "%s never recorded itself ready", host)
	return id, stop
}

// TestConsole_OverviewListsServeProcesses shows the overview's serve
// processes to an operator and an auditor: one running and ready, one
// stopped cleanly, one whose heartbeat went old (a process that died),
// one whose last heartbeat said not ready, with the reason.
func TestConsole_OverviewListsServeProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	running, _ := b.runEngine(t, "host-running")
	stopped, stopB := b.runEngine(t, "host-stopped")
	stopB()
	died, stopC := b.runEngine(t, "host-died")
	stopC()
	// A crash, staged: the row of a process that never stopped, silent
	// for a minute. The test's own SQL.
	_, err := b.admin.Exec(ctx, `UPDATE herald.serve_processes SET stopped_at = NULL, ready = true,
		heartbeat_at = now() - interval '1 minute' WHERE id = $1`, died)
	require.NoError(t, err)
	// A process whose database is behind the binary, as its heartbeat
	// would record it.
	require.NoError(t, store.New().ServeProcessRegister(ctx, b.admin, store.ServeProcessRegisterParams{
		ID: "host-behind:7:x", Host: "host-behind", Pid: 7, Version: "v10.0.0", StartedAt: time.Now().Add(-time.Hour),
		IntervalSeconds: 5, Ready: false, NotReadyReason: "migrations pending: run herald migrate up", Parts: []byte(`{"intake":true}`)}))

	row := func(body, id string) string {
		m := regexp.MustCompile(`(?s)<tr class="process" data-process="` + regexp.QuoteMeta(html.EscapeString(id)) + `" data-state="([a-z_]+)">(.*?)</tr>`).
			FindStringSubmatch(body)
		require.NotNil(t, m, "no row for %s in:\n%s", id, body)
		return m[1] + " " + m[2]
	}
	for _, who := range []struct{ login, pw string }{{b.operator, operatorPW}, {b.auditor, auditorPW}} {
		c := b.client(t)
		require.Equal(t, http.StatusSeeOther, c.signIn(who.login, who.pw))
		status, body := c.get("/")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `<section id="processes" data-live>`, "refreshed with the page's live parts")

		r := row(body, running)
		require.Regexp(t, `(?s)^ready .*<td>host-running</td>.*v9\.9\.9-test.*>ready</td>`, r)
		require.Contains(t, r, "channels callback; console "+b.console.Addr().String())
		require.Regexp(t, `(?s)^stopped .*<td>host-stopped</td>.*>stopped</td>`, row(body, stopped))
		r = row(body, died)
		require.Regexp(t, `(?s)^stale .*<td>host-died</td>.*class="n bad">1m0(\.\d+)?s ago</td>`, r)
		require.Contains(t, r, "stale: no heartbeat for over 3 intervals of 100ms")
		r = row(body, "host-behind:7:x")
		require.Contains(t, r, "not ready: migrations pending: run herald migrate up")
		require.Contains(t, r, "<td>intake</td>")
	}
}
