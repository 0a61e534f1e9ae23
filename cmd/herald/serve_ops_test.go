package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/maintenance"
)

func TestServeCmd_OpsFlagsDefaultFromEnv(t *testing.T) {
	t.Parallel()
	m, _, _ := testMain(map[string]string{"HERALD_METRICS_ADDR": ":9999", "HERALD_DEAD_LETTER_RETENTION": "720h"})
	var o serveOps
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	require.NoError(t, o.bind(fs, m))
	require.NoError(t, fs.Parse([]string{"-finished-retention", "24h"}))
	require.Equal(t, ":9999", o.metricsAddr)
	require.Equal(t, 720*time.Hour, o.deadLetterRetention)
	require.Equal(t, 24*time.Hour, o.finishedRetention)
	require.Equal(t, maintenance.DefaultMalformedRetention, o.malformedRetention)
	require.Equal(t, maintenance.DefaultRetentionDuty, o.retentionDuty)

	_, _, err := run(t, map[string]string{"HERALD_FINISHED_RETENTION": "a week"}, "serve")
	require.ErrorContains(t, err, "HERALD_FINISHED_RETENTION")
	require.Equal(t, 2, exitCode(err))

	// The retention duty: from the environment, the flag over it; a share
	// above 0 and at most 1, anything else a usage error.
	m, _, _ = testMain(map[string]string{"HERALD_RETENTION_DUTY": "0.5"})
	o = serveOps{}
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	require.NoError(t, o.bind(fs, m))
	require.NoError(t, fs.Parse(nil))
	require.Equal(t, 0.5, o.retentionDuty)
	require.NoError(t, fs.Parse([]string{"-retention-duty", "1"}))
	require.Equal(t, 1.0, o.retentionDuty)
	for _, bad := range []string{"0", "-0.1", "1.5", "half"} {
		_, _, err := run(t, map[string]string{"HERALD_RETENTION_DUTY": bad}, "serve")
		require.ErrorContains(t, err, "HERALD_RETENTION_DUTY", bad)
		require.Equal(t, 2, exitCode(err), bad)
		_, _, err = run(t, nil, "serve", "-retention-duty", bad)
		require.Equal(t, 2, exitCode(err), bad)
	}
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestServeCmd_ExposesMetricsRunsMaintenance(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	addr := freeAddr(t)

	m, _, errb := testMain(map[string]string{
		"DATABASE_URL":                          dbURL,
		"HERALD_METRICS_ADDR":                   addr,
		"HERALD_CHANNELS_WEBHOOK_DRIVER":        "webhook",
		"HERALD_CHANNELS_WEBHOOK_SECRETS_ENV":   "WEBHOOK_SECRET",
		"WEBHOOK_SECRET":                        serveTestSecret,
		"HERALD_CHANNELS_WEBHOOK_ALLOW_PRIVATE": "true",
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "-log-format", "json"}); m.Close() }()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool { code, _ := get("/healthz"); return code == http.StatusOK },
		15*time.Second, 20*time.Millisecond, "stderr: %s", errb)
	code, body := get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	var chk struct{ OK, Database, SchemaCurrent bool }
	require.NoError(t, json.Unmarshal([]byte(body), &chk))
	require.True(t, chk.OK && chk.Database)

	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `herald_backlog_routes{channel="webhook"} 0`)
	require.Contains(t, body, `herald_lag_seconds{channel="webhook"} 0`)
	require.Contains(t, body, "go_goroutines")

	// Maintenance's River client stood for leader: the elected process
	// schedules the periodic jobs.
	require.Eventually(t, func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM herald.river_leader`).Scan(&n) == nil && n == 1
	}, 15*time.Second, 50*time.Millisecond)

	cancel()
	require.NoError(t, <-done)
	code, _ = get("/healthz")
	require.Zero(t, code, "the endpoint closed with serve")
}
