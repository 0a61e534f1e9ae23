package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// An operator's LOCK TABLE on herald.routes stops every claim. serve's
// /readyz says so, with the reason, while /healthz stays up; the timeouts
// are counted; and /readyz is ready again by itself once the lock goes.
func TestServeCmd_ReadyzReportsStuckClaims(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	addr := freeAddr(t)

	m, _, errb := testMain(map[string]string{
		"DATABASE_URL":                  dbURL,
		"HERALD_METRICS_ADDR":           addr,
		"HERALD_NO_MAINTENANCE":         "true",
		"HERALD_CHANNELS_SMS_DRIVER":    "discard",
		"HERALD_DISPATCH_POLL_INTERVAL": "50ms",
		"HERALD_DISPATCH_LOCK_TIMEOUT":  "100ms",
		"HERALD_DISPATCH_STALL_TIMEOUT": "300ms",
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "-log-format", "json"}); m.Close() }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done, "stderr: %s", errb)
		}
	}
	t.Cleanup(stop)

	type check struct {
		OK, Database bool
		Dispatching  *bool
		Error        string
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	readyz := func() (int, check) {
		code, body := get("/readyz")
		var chk check
		if code != 0 {
			require.NoError(t, json.Unmarshal([]byte(body), &chk), body)
		}
		return code, chk
	}
	// The response that said ready is the one read: a second request could
	// land while a statement of a loaded machine's first claims runs past
	// the 300 ms stall timeout.
	var chk check
	require.Eventually(t, func() bool {
		var code int
		code, chk = readyz()
		return code == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond)
	require.NotNil(t, chk.Dispatching)
	require.True(t, *chk.Dispatching)

	// The table owner locks routes in a transaction it keeps open.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "LOCK TABLE herald.routes IN ACCESS EXCLUSIVE MODE") // a lock, not a query: no sqlc
	require.NoError(t, err)
	unlocked := false
	t.Cleanup(func() {
		if !unlocked {
			_ = tx.Rollback(context.Background())
		}
	})

	var code int
	require.Eventually(t, func() bool { code, chk = readyz(); return code == http.StatusServiceUnavailable },
		30*time.Second, 20*time.Millisecond)
	require.True(t, chk.Database)
	require.False(t, *chk.Dispatching)
	require.Regexp(t, `channel loop "(sms|callback)"`, chk.Error) // whichever loop's claim timed out first
	require.Contains(t, chk.Error, "lock_timeout")
	code, _ = get("/healthz")
	require.Equal(t, http.StatusOK, code)
	_, metricsBody := get("/metrics")
	require.Contains(t, metricsBody, `herald_dispatch_db_timeouts_total{channel="sms",op="claim",timeout="lock"}`)

	require.NoError(t, tx.Rollback(ctx))
	unlocked = true
	require.Eventually(t, func() bool { code, chk = readyz(); return code == http.StatusOK }, 30*time.Second, 20*time.Millisecond,
		"ready again once the lock is gone")
	require.True(t, *chk.Dispatching)

	stop()
	require.Contains(t, errb.String(), "dispatcher statements succeed again")
}
