package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/operator/operatortest"
)

func TestStatsReportsBacklogLagAndDeadLetters(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Channel: "sms"})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "email", Dead: true, Classification: "permanent"})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Channel: "email", Dead: true, Classification: "expired"})

	var st operator.Stats
	runJSON(t, b.env, &st, "stats", "--window", "10m")
	require.Equal(t, 600.0, st.WindowSeconds)
	require.Len(t, st.Backlog, 1)
	require.Equal(t, operator.Backlog{Channel: "sms", Status: "pending", Routes: 3, Due: 3, LagSeconds: st.Backlog[0].LagSeconds}, st.Backlog[0])
	require.Greater(t, st.Backlog[0].LagSeconds, 0.0, "due since they were accepted")
	require.Empty(t, st.Throughput, "nothing published")
	require.Len(t, st.DeadLetters, 2)
	require.Equal(t, "expired", st.DeadLetters[0].Classification)
	require.Equal(t, int64(2), st.DeadLetters[1].DeadLetters)

	out, _, err := run(t, b.env, "stats")
	require.NoError(t, err)
	require.Contains(t, out, "backlog")
	require.Contains(t, out, "permanent")
	_, _, err = run(t, b.env, "stats", "--window", "0s")
	require.Equal(t, 2, exitCode(err))
}
