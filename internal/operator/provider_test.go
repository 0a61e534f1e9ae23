package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/routing"
)

const twoSMSProviders = `
providers:
  - {name: sms/primary, driver: log}
  - {name: sms/backup, driver: log}
rules:
  sms:
    - {name: all, providers: [sms/primary, sms/backup]}
`

// applyProviders applies file as the operator "setup".
func (b *testBundle) applyProviders(t *testing.T, file string) {
	t.Helper()
	f, err := routing.Parse([]byte(file))
	require.NoError(t, err)
	_, err = routing.Apply(context.Background(), b.pool, f, "setup", nil)
	require.NoError(t, err)
}

// exec runs one statement of the test's own as the admin.
func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func TestSetProviderState_AuditedVersionedKeptByApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.applyProviders(t, twoSMSProviders)
	before, err := routing.ReadVersion(ctx, b.pool)
	require.NoError(t, err)

	ch, err := b.op.SetProviderState(ctx, "sms/primary", operator.ProviderDisabled, "ann", "500s since 14:02")
	require.NoError(t, err)
	require.Equal(t, operator.ProviderStateChange{Provider: "sms/primary", State: "disabled", PreviousState: "enabled", Changed: true, At: ch.At}, *ch)
	after, err := routing.ReadVersion(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, before+1, after, "serve processes reload on the version")
	tab, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, routing.StateDisabled, tab.Providers["sms/primary"].State)

	var actor, reason, details string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT actor, reason, details::text FROM herald.audit_log WHERE action = 'provider_state'`).Scan(&actor, &reason, &details))
	require.Equal(t, "ann", actor)
	require.Equal(t, "500s since 14:02", reason)
	require.JSONEq(t, `{"state": "disabled", "previous_state": "enabled"}`, details)

	// The same state again changes and audits nothing.
	again, err := b.op.SetProviderState(ctx, "sms/primary", operator.ProviderDisabled, "ann", "again")
	require.NoError(t, err)
	require.False(t, again.Changed)

	// Applying the providers file again keeps the operator's state.
	b.applyProviders(t, twoSMSProviders)
	tab, err = routing.Load(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, routing.StateDisabled, tab.Providers["sms/primary"].State)

	_, err = b.op.SetProviderState(ctx, "sms/primary", operator.ProviderDraining, "ann", "")
	require.ErrorIs(t, err, operator.ErrBadProviderState, "taking a provider out needs a reason")
	_, err = b.op.SetProviderState(ctx, "sms/primary", "off", "ann", "x")
	require.ErrorIs(t, err, operator.ErrBadProviderState)
	_, err = b.op.SetProviderState(ctx, "sms/nope", operator.ProviderDisabled, "ann", "x")
	require.ErrorIs(t, err, operator.ErrUnknownProvider)

	back, err := b.op.SetProviderState(ctx, "sms/primary", operator.ProviderEnabled, "ann", "")
	require.NoError(t, err)
	require.True(t, back.Changed)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.audit_log WHERE action = 'provider_state'`).Scan(&n))
	require.Equal(t, 2, n)
}

func TestSetProviderState_OnlyOperators(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.applyProviders(t, twoSMSProviders)
	for _, role := range []string{"herald_auditor", "herald_producer"} {
		_, pool := pgtemp.Login(t, b.pool, "who", role)
		op, err := operator.New(pool, nil)
		require.NoError(t, err)
		_, err = op.SetProviderState(ctx, "sms/primary", operator.ProviderDisabled, "eve", "no")
		requireInsufficientPrivilege(t, err)
	}
	_, pool := pgtemp.Login(t, b.pool, "ops", "herald_operator")
	op, err := operator.New(pool, nil)
	require.NoError(t, err)
	_, err = op.SetProviderState(ctx, "sms/primary", operator.ProviderDraining, "ops", "maintenance")
	require.NoError(t, err)
}

func TestProviderHealthOver_WindowFailingSinceHalfOpenFailovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.applyProviders(t, twoSMSProviders)
	// sms/primary delivered 20 minutes ago, has failed since 12 minutes
	// ago, failed over to sms/backup; its circuit opened and closed after
	// its cool-down, and it has not delivered since.
	b.exec(t, `INSERT INTO herald.provider_health (provider, bucket, delivered, transient, failovers) VALUES
		('sms/primary', date_bin('2 seconds', now() - interval '20 minutes', timestamptz 'epoch'), 5, 0, '{}'),
		('sms/primary', date_bin('2 seconds', now() - interval '12 minutes', timestamptz 'epoch'), 0, 7, '{"sms/backup": 7}'),
		('sms/primary', date_bin('2 seconds', now() - interval '1 minute', timestamptz 'epoch'), 0, 3, '{"sms/backup": 3}'),
		('sms/backup', date_bin('2 seconds', now() - interval '1 minute', timestamptz 'epoch'), 10, 0, '{}')`)
	b.exec(t, `UPDATE herald.provider_circuits SET since = now() - interval '30 seconds' WHERE provider = 'sms/primary'`)
	b.exec(t, `INSERT INTO herald.provider_events (provider, at, event, detail) VALUES
		('sms/primary', now() - interval '90 seconds', 'circuit_opened', 'x'),
		('sms/primary', now() - interval '30 seconds', 'circuit_closed', 'cool-down over')`)

	byName := func(ph []operator.ProviderHealth) map[string]operator.ProviderHealth {
		m := map[string]operator.ProviderHealth{}
		for _, p := range ph {
			m[p.Provider] = p
		}
		return m
	}
	ph, err := b.op.ProviderHealthOver(ctx, 15*time.Minute)
	require.NoError(t, err)
	p := byName(ph)["sms/primary"]
	require.Equal(t, "half-open", p.Circuit, "closed after its cool-down, and not delivered since")
	require.Equal(t, "enabled", p.State)
	require.NotNil(t, p.FailingSince)
	require.WithinDuration(t, time.Now().Add(-12*time.Minute), *p.FailingSince, 5*time.Second)
	require.EqualValues(t, 0, p.Window.Delivered)
	require.EqualValues(t, 10, p.Window.Transient, "the window's, not the last five minutes'")
	require.EqualValues(t, 3, p.Transient, "the last five minutes' (the view's)")
	require.EqualValues(t, 10, p.Window.FailedOverTo)
	require.EqualValues(t, 10, byName(ph)["sms/backup"].Window.FailedOverFrom)
	require.Nil(t, byName(ph)["sms/backup"].FailingSince)
	require.Equal(t, "closed", byName(ph)["sms/backup"].Circuit)

	ph, err = b.op.ProviderHealthOver(ctx, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 5, byName(ph)["sms/primary"].Window.Delivered)

	st, err := b.op.Stats(ctx, 15*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []operator.Failover{{From: "sms/primary", To: "sms/backup", Failovers: 10, LastAt: st.Failovers[0].LastAt}}, st.Failovers)

	// A delivery ends the streak and the half-open circuit.
	b.exec(t, `INSERT INTO herald.provider_health (provider, bucket, delivered) VALUES
		('sms/primary', date_bin('2 seconds', now(), timestamptz 'epoch') + interval '2 seconds', 1)`)
	ph, err = b.op.ProviderHealthOver(ctx, 15*time.Minute)
	require.NoError(t, err)
	require.Nil(t, byName(ph)["sms/primary"].FailingSince)
	require.Equal(t, "closed", byName(ph)["sms/primary"].Circuit)
}
