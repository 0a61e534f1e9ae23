package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
)

func TestStatsCmd_ReportsBacklogLagDeadLetters(t *testing.T) {
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

func TestStatsCmd_ShowsProviderHealth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := opSetup(t)
	out, _, err := run(t, b.env, "stats")
	require.NoError(t, err)
	require.Contains(t, out, "providers: none")

	b = routingBundle(t) // sms/acme capped at 200/s, sms/backup
	// What serve writes: one process's counts for sms/acme in a bucket
	// after the circuit's since, then the round that opens its circuit
	// (25 of 31 attempts failed transiently).
	now := time.Now().Add(5 * time.Second)
	q := store.New()
	require.NoError(t, q.ProviderHealthAdd(ctx, b.pool, store.ProviderHealthAddParams{
		Providers: []string{"sms/acme"}, Now: &now,
		Delivered: []int64{5}, Transient: []int64{25}, Permanent: []int64{1}, Throttled: []int64{7},
		LatencySums: []float64{6.2}, LatencyMaxes: []float64{0.9},
		Unavailable: []int64{0}, UnavailableReasons: []string{""}, Failovers: [][]byte{[]byte(`{"sms/backup": 4}`)},
	}))
	later := now.Add(time.Second)
	require.NoError(t, q.ProviderCircuitEvaluate(ctx, b.pool, &later))

	var st operator.Stats
	runJSON(t, b.env, &st, "stats")
	require.Len(t, st.Providers, 2)
	acme, backup := st.Providers[0], st.Providers[1]
	require.Equal(t, "sms/acme", acme.Provider)
	require.Equal(t, "open", acme.Circuit)
	require.NotNil(t, acme.OpenUntil)
	require.WithinDuration(t, later.Add(30*time.Second), *acme.OpenUntil, time.Second, "the default cool-down")
	require.Contains(t, acme.CircuitReason, "25 of 31 attempts failed transiently")
	require.Equal(t, 200, acme.CapPerSecond)
	require.Equal(t, []int64{5, 25, 1, 7}, []int64{acme.Delivered, acme.Transient, acme.Permanent, acme.Throttled})
	require.InDelta(t, 0.2, *acme.MeanLatencySeconds, 1e-9)
	require.Nil(t, acme.FailingSince, "its one bucket had deliveries too: no failing streak after them")
	require.Equal(t, operator.ProviderOutcomes{WindowSeconds: 300, Delivered: 5, Transient: 25, Permanent: 1, Throttled: 7,
		MeanLatencySeconds: acme.MeanLatencySeconds, MaxLatencySeconds: acme.MaxLatencySeconds, FailedOverTo: 4}, acme.Window,
		"the window's (five minutes by default) as the view's")
	require.Equal(t, operator.ProviderHealth{Provider: "sms/backup", Channel: "sms", Driver: "sms-http", Circuit: "closed", State: "enabled",
		Window: operator.ProviderOutcomes{WindowSeconds: 300, FailedOverFrom: 4}}, backup,
		"closed, uncapped, no attempt: no latency")
	require.Len(t, st.Failovers, 1)
	require.Equal(t, operator.Failover{From: "sms/acme", To: "sms/backup", Failovers: 4, LastAt: st.Failovers[0].LastAt}, st.Failovers[0])
	require.Len(t, st.CircuitEvents, 1)
	require.Equal(t, "circuit_opened", st.CircuitEvents[0].Event)
	require.Equal(t, "sms/acme", st.CircuitEvents[0].Provider)

	out, _, err = run(t, b.env, "stats")
	require.NoError(t, err)
	require.Regexp(t, `PROVIDER\s+STATE\s+CIRCUIT\s+FAILING SINCE\s+DELIVERED\s+TRANSIENT\s+PERMANENT\s+THROTTLED\s+FAILED OVER TO/FROM\s+MEAN LATENCY\s+CAP/S`, out)
	require.Regexp(t, `sms/acme\s+enabled\s+open until \S+ \S+Z\s+-\s+5\s+25\s+1\s+7\s+4/0\s+200ms\s+200\n`, out)
	require.Regexp(t, `sms/backup\s+enabled\s+closed\s+-\s+0\s+0\s+0\s+0\s+0/4\s+-\s+none\n`, out)
	require.Regexp(t, `sms/acme\s+sms/backup\s+4\s+\S+ \S+Z\n`, out)
	require.Regexp(t, `\S+Z\s+sms/acme\s+circuit_opened\s+25 of 31 attempts failed transiently`, out)
}

// TestStatsCmd_SaysWhyProviderCannotSend: a provider whose health rounds
// found it unable to send (an SMPP provider whose binds the SMSC refuses)
// is shown with why, in text and JSON.
func TestStatsCmd_SaysWhyProviderCannotSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := routingBundle(t)
	now := time.Now()
	require.NoError(t, store.New().ProviderHealthAdd(ctx, b.pool, store.ProviderHealthAddParams{
		Providers: []string{"sms/backup"}, Now: &now,
		Delivered: []int64{0}, Transient: []int64{0}, Permanent: []int64{0}, Throttled: []int64{0},
		LatencySums: []float64{0}, LatencyMaxes: []float64{0},
		Unavailable:        []int64{3},
		UnavailableReasons: []string{"the SMSC refuses herald's bind: ESME_RINVPASWD (0x0000000E)"},
		Failovers:          [][]byte{[]byte(`{}`)},
	}))
	var st operator.Stats
	runJSON(t, b.env, &st, "stats")
	require.Len(t, st.Providers, 2)
	backup := st.Providers[1]
	require.Equal(t, int64(3), backup.Unavailable)
	require.Equal(t, "the SMSC refuses herald's bind: ESME_RINVPASWD (0x0000000E)", backup.UnavailableReason)
	out, _, err := run(t, b.env, "stats")
	require.NoError(t, err)
	require.Contains(t, out, "closed; cannot send: the SMSC refuses herald's bind: ESME_RINVPASWD (0x0000000E)")
}

func TestStatsCmd_ShowsCallbacksPerProducer(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	out, _, err := run(t, b.env, "stats", "--window", "1h")
	require.NoError(t, err)
	require.Contains(t, out, "\nstatus callbacks (created in the last 1h0m0s, by outcome):\nPRODUCER  CREATED  PUBLISHED  FAILED  DEAD LETTERED  PENDING\n(none)\n")

	operatortest.Subscribe(t, b.pool, "shop")
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "sms"})
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Status: "published"})
	operatortest.Deliver(t, b.pool, "callback", operatortest.Attempt{Status: "dead_letter", Classification: "permanent", Message: "HTTP 410"})

	var st operator.Stats
	runJSON(t, b.env, &st, "stats")
	require.Equal(t, []operator.CallbackStats{{Producer: "shop", Created: 2, DeadLettered: 2}}, st.Callbacks)
	out, _, err = run(t, b.env, "stats")
	require.NoError(t, err)
	require.Regexp(t, `PRODUCER\s+CREATED\s+PUBLISHED\s+FAILED\s+DEAD LETTERED\s+PENDING\nshop\s+2\s+0\s+0\s+2\s+0\n`, out)
}
