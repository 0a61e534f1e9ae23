package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
)

// inProcServe is a herald serve run in-process on the test's database.
type inProcServe struct {
	stop func()
	errb func() string
}

// startInProcServe runs `herald serve` with env until stop (or the test's end);
// stop waits for a clean exit.
func startInProcServe(t *testing.T, env map[string]string) *inProcServe {
	t.Helper()
	m, _, errb := testMain(env)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "-log-format", "json"}); m.Close() }()
	var once sync.Once
	p := &inProcServe{errb: errb.String}
	p.stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done, "stderr: %s", errb)
		})
	}
	t.Cleanup(p.stop)
	return p
}

// processes reads `herald status --json` as env's login.
func processes(t *testing.T, env map[string]string) []operator.ServeProcess {
	t.Helper()
	var l operator.ServeProcessList
	runJSON(t, env, &l, "status")
	return l.Processes
}

// TestServeCmd_RecordsItsReadiness runs two serve processes on one
// database: each keeps a row of its own that says ready; an operator's
// lock on herald.routes makes both say not ready, with /readyz's reason,
// and ready again once it goes; a clean stop marks the row stopped; a row
// whose heartbeat stopped (a process that died) reads as stale. An
// operator and an auditor read the list, text and JSON; a producer may
// not.
func TestServeCmd_RecordsItsReadiness(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	ctx := context.Background()
	env := func(metricsAddr string) map[string]string {
		return map[string]string{
			"DATABASE_URL":                  b.env["DATABASE_URL"],
			"HERALD_METRICS_ADDR":           metricsAddr,
			"HERALD_NO_MAINTENANCE":         "true",
			"HERALD_CHANNELS_SMS_DRIVER":    "discard",
			"HERALD_DISPATCH_POLL_INTERVAL": "50ms",
			"HERALD_DISPATCH_LOCK_TIMEOUT":  "100ms",
			"HERALD_DISPATCH_STALL_TIMEOUT": "300ms",
			"HERALD_HEARTBEAT_INTERVAL":     "100ms",
		}
	}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := startInProcServe(t, env(addrA))
	sb := startInProcServe(t, env(addrB))

	// byMetrics finds each serve's row by the metrics address it records.
	byMetrics := func(ps []operator.ServeProcess) map[string]operator.ServeProcess {
		out := map[string]operator.ServeProcess{}
		for _, p := range ps {
			out[p.Parts.Metrics] = p
		}
		return out
	}
	var rows map[string]operator.ServeProcess
	both := func(state string) func() bool {
		return func() bool {
			ps := processes(t, b.env)
			rows = byMetrics(ps)
			return len(ps) == 2 && rows[addrA].State == state && rows[addrB].State == state
		}
	}
	require.Eventually(t, both(operator.ProcessReady), 30*time.Second, 20*time.Millisecond, "rows: %+v", rows)
	pa, pb := rows[addrA], rows[addrB]
	require.NotEqual(t, pa.ID, pb.ID, "two processes, two rows")
	require.NotEmpty(t, pa.Host)
	require.Contains(t, pa.Version, "schema ")
	require.True(t, pa.Ready)
	require.Empty(t, pa.Reason)
	require.Equal(t, []string{"callback", "sms"}, pa.Parts.Channels)
	require.True(t, pa.Parts.Intake)
	require.False(t, pa.Parts.Maintenance)
	require.InDelta(t, 0.1, pa.HeartbeatIntervalSeconds, 1e-9)
	require.Nil(t, pa.StoppedAt)

	// An operator locks routes: claims time out, /readyz says no, and so
	// does each row, with its reason.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "LOCK TABLE herald.routes IN EXCLUSIVE MODE") // a lock, not a query: no sqlc
	require.NoError(t, err)
	unlocked := false
	t.Cleanup(func() {
		if !unlocked {
			_ = tx.Rollback(context.Background())
		}
	})
	require.Eventually(t, both(operator.ProcessNotReady), 30*time.Second, 20*time.Millisecond, "rows: %+v", rows)
	require.False(t, rows[addrA].Ready)
	require.Contains(t, rows[addrA].Reason, "lock_timeout")
	out, stderr, err := run(t, b.env, "status")
	require.NoError(t, err, stderr)
	require.Contains(t, out, "not ready: ")
	require.Contains(t, out, "metrics "+addrA)

	require.NoError(t, tx.Rollback(ctx))
	unlocked = true
	require.Eventually(t, both(operator.ProcessReady), 30*time.Second, 20*time.Millisecond, "ready again: %+v", rows)

	// B stops cleanly: its row says stopped; A goes on.
	sb.stop()
	ps := byMetrics(processes(t, b.env))
	require.Equal(t, operator.ProcessStopped, ps[addrB].State)
	require.NotNil(t, ps[addrB].StoppedAt)
	require.False(t, ps[addrB].Ready)
	require.Empty(t, ps[addrB].Reason, "a stop for a signal has no error to say")
	require.Equal(t, pb.ID, ps[addrB].ID)

	// A dies as far as its row can tell: its heartbeat goes old. A's
	// heartbeats are stopped first, or the next would refresh it. (The
	// test's own SQL: a crash, staged.)
	a.stop()
	_, err = b.pool.Exec(ctx, `UPDATE herald.serve_processes SET stopped_at = NULL, ready = true,
		heartbeat_at = now() - interval '1 second' WHERE id = $1`, pa.ID)
	require.NoError(t, err)
	ps = byMetrics(processes(t, b.env))
	require.Equal(t, operator.ProcessStale, ps[addrA].State)
	require.Greater(t, ps[addrA].HeartbeatAgeSeconds, 0.3)
	require.Equal(t, operator.ProcessStopped, ps[addrB].State)

	// Operators and auditors read the list; a producer sees nothing.
	_, _, opEnv := loginAs(t, b, "oncall", "herald_operator")
	_, _, audEnv := loginAs(t, b, "audit", "herald_auditor")
	for _, env := range []map[string]string{opEnv, audEnv} {
		require.Len(t, processes(t, env), 2)
		out, stderr, err := run(t, env, "status")
		require.NoError(t, err, stderr)
		require.Contains(t, out, "stale: no heartbeat for over 3 intervals of 100ms")
		require.Contains(t, out, "stopped")
		require.Equal(t, 3, strings.Count(out, "\n"), "a header and two rows:\n%s", out)
	}
	_, prodPool, prodEnv := loginAs(t, b, "shop", "herald_producer")
	_, stderr, err = run(t, prodEnv, "status")
	require.ErrorContains(t, err, "permission denied", stderr)
	var n int
	err = prodPool.QueryRow(ctx, `SELECT count(*) FROM herald.serve_processes`).Scan(&n) // the grant itself, checked
	require.ErrorContains(t, err, "permission denied")
}

// A serve started with an interval it cannot use stops with one line
// naming the setting.
func TestServeCmd_RefusesABadHeartbeat(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "discard", "HERALD_HEARTBEAT_INTERVAL": "1ms",
		"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}, "serve")
	require.ErrorContains(t, err, "heartbeat.interval")
}
