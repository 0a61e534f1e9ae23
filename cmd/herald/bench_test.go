package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/bench"
	"github.com/heraldhq/herald/internal/pgtemp"
)

func TestBenchPrintsHeraldAndRiverSideBySide(t *testing.T) {
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

func TestBenchRefusesAnUnknownComparison(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, nil, "bench", "-vs", "sidekiq")
	require.ErrorContains(t, err, `invalid -vs "sidekiq"`)
}
