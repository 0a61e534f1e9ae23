package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/bench"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestBenchCmd_PrintsHeraldBesideRiver(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtemp.NewDatabase(t)}

	out, _, err := run(t, env, "bench", "-intents", "1000", "-batch", "250", "-idle-samples", "3", "-vs", "river", "-log-level", "warn")
	require.NoError(t, err)
	require.Contains(t, out, "herald/river")
	require.Contains(t, out, "routes delivered/s")

	out, _, err = run(t, env, "bench", "-intents", "500", "-idle-samples", "-1", "-json", "-log-level", "warn")
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Rows, 1)
	require.Equal(t, int64(500), rep.Rows[0].Published)
}

func TestBenchCmd_RefusesUnknownComparison(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, nil, "bench", "-vs", "sidekiq")
	require.ErrorContains(t, err, `invalid -vs "sidekiq"`)
}

func TestBenchCmd_RefusesReceiptsOutsideCompare(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-receipts", "-processes", "2"},
		{"-provider", "-serve"},
		{"-receipts", "-mode", "soak"},
	} {
		_, _, err := run(t, nil, append([]string{"bench"}, args...)...)
		var ue usageError
		require.ErrorAs(t, err, &ue, "%v", args)
		require.ErrorContains(t, err, "-provider and -receipts run the compare mode", "%v", args)
	}
	_, _, err := run(t, nil, "bench", "-receipts", "-receipt-delay", "-1s")
	require.ErrorContains(t, err, "invalid -receipt-delay -1s")
}

func TestBenchCmd_RefusesTraceSampleAboveOne(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, nil, "bench", "-trace-sample", "1.5")
	var ue usageError
	require.ErrorAs(t, err, &ue)
	require.ErrorContains(t, err, "invalid -trace-sample 1.5")
}

func TestBenchCmd_RetentionDeletesHistory(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtemp.NewDatabase(t)}

	out, _, err := run(t, env, "bench", "-mode", "retention", "-history", "3000", "-window", "500ms",
		"-retention-batch", "500", "-concurrency", "20", "-json", "-log-level", "warn")
	require.NoError(t, err)
	var rep bench.RetentionReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, int64(3000), rep.HistoryRoutes)
	require.Equal(t, 500, rep.BatchSize)
	require.Equal(t, "500ms", rep.Window)
	// One record in a hundred is dead-lettered and stays; so do the
	// routes that finished in a week that ended less than the retention
	// (7 days) ago, with their records. Whatever went,
	// went whole, and the report counts it.
	require.Equal(t, int64(30), rep.After.DeadLetters)
	require.Positive(t, rep.RoutesDeleted)
	require.Equal(t, rep.Before.Routes-rep.After.Routes, rep.RoutesDeleted)
	require.Equal(t, int64(3000)-rep.RoutesDeleted, rep.After.Routes)
	require.Equal(t, rep.After.Routes-30, rep.After.Published)
	require.Equal(t, rep.After.Routes, rep.After.Records, "one route per record")
}

func TestBenchCmd_RiverWorkerNeedsItsEnvironment(t *testing.T) {
	t.Parallel()
	// The bench starts its River worker processes with their settings in
	// the environment; without them the mode refuses to start.
	_, _, err := run(t, nil, "bench", "-mode", "river-worker")
	require.ErrorContains(t, err, "HERALD_BENCH_RIVER_CONCURRENCY")
}
