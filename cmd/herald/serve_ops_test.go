package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/pgtemp"
)

func TestServeOpsFlagsTakeTheirDefaultsFromTheEnvironment(t *testing.T) {
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

	bad, _, _ := testMain(map[string]string{"HERALD_FINISHED_RETENTION": "a week"})
	err := (&serveOps{}).bind(flag.NewFlagSet("serve", flag.ContinueOnError), bad)
	require.ErrorContains(t, err, "HERALD_FINISHED_RETENTION")
}

func TestServeOpsServesMetricsAndRunsMaintenance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtemp.NewDatabase(t))
	require.NoError(t, err)
	defer pool.Close()

	o := serveOps{metricsAddr: "127.0.0.1:0", finishedRetention: time.Hour, malformedRetention: time.Hour}
	met := o.metrics()
	met.Attempt("sms", "delivered")
	stop, err := o.start(ctx, pool, []string{"email", "sms", "webhook"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	base := "http://" + o.addr.String()

	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), `herald_route_attempts_total{channel="sms",outcome="delivered"} 1`)
	require.Contains(t, string(body), `herald_backlog_routes{channel="webhook"} 0`)

	resp, err = http.Get(base + "/readyz")
	require.NoError(t, err)
	var chk struct{ OK bool }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&chk))
	resp.Body.Close()
	require.True(t, chk.OK)

	// Maintenance's River client stands for leader: the elected one
	// schedules the periodic jobs.
	require.Eventually(t, func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM herald.river_leader`).Scan(&n) == nil && n == 1
	}, 15*time.Second, 50*time.Millisecond)

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, stop(sctx))
	_, err = http.Get(base + "/healthz")
	require.Error(t, err, "the endpoint is closed")
}
