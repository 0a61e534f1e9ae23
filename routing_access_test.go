package herald_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
)

// The routing tables' access: operators apply, auditors read,
// producers neither read nor apply.

const accessProvidersFile = `
providers:
  - {name: sms/acme, driver: sms-http, sms_http: {url: "https://api.acme.example/sms", api_key: {env: ACME_KEY}}}
rules:
  sms:
    - {name: all, providers: [sms/acme]}
`

func TestRoutingTables_OnlyOperatorsApply(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	f, err := routing.Parse([]byte(accessProvidersFile))
	require.NoError(t, err)

	// A producer may not apply, nor read the tables, nor write them directly.
	_, err = routing.Apply(ctx, b.asA, f, "svc-a", nil)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = routing.Load(ctx, b.asA)
	requireSQLState(t, err, insufficientPrivilege)
	for _, sql := range []string{
		`SELECT count(*) FROM herald.providers`,
		`SELECT count(*) FROM herald.routing_rules`,
		`SELECT count(*) FROM herald.provider_circuits`,
	} {
		_, err = b.asA.Exec(ctx, sql)
		requireSQLState(t, err, insufficientPrivilege)
	}
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.providers (name, channel, driver) VALUES ('sms/evil', 'sms', 'log')`)
	requireSQLState(t, err, insufficientPrivilege)

	// The auditor reads, and may not apply, not even a dry run.
	_, err = routing.Apply(ctx, b.asAud, f, "aud", &routing.ApplyOpts{DryRun: true})
	requireSQLState(t, err, insufficientPrivilege)

	// The operator applies, audited in its login's name.
	changes, err := routing.Apply(ctx, b.asOp, f, "ann", &routing.ApplyOpts{Reason: "first provider"})
	require.NoError(t, err)
	require.Len(t, changes, 2)
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.audit_log WHERE action = 'routing_apply' AND actor = 'ann'`))
	// ... but may not write the tables directly.
	_, err = b.asOp.Exec(ctx, `DELETE FROM herald.routing_rules`)
	requireSQLState(t, err, insufficientPrivilege)

	// Both read what was applied.
	for _, db := range []routing.TxBeginner{b.asOp, b.asAud} {
		tab, err := routing.Load(ctx, db)
		require.NoError(t, err)
		require.Equal(t, int64(1), tab.Version)
		require.Contains(t, tab.Providers, "sms/acme")
		require.Len(t, tab.Rules["sms"], 1)
	}
	open, err := routing.OpenCircuits(ctx, b.asAud, time.Time{})
	require.NoError(t, err)
	require.Empty(t, open)
}

// A provider's state is set through herald.provider_state_set only:
// operators may, audited in their login's name; auditors, producers, the
// relay and the directory may not, nor write the column directly.
func TestProviderStateSet_OnlyOperators(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	f, err := routing.Parse([]byte(accessProvidersFile))
	require.NoError(t, err)
	_, err = routing.Apply(ctx, b.asOp, f, "ann", nil)
	require.NoError(t, err)

	const set = `SELECT * FROM herald.provider_state_set('sms/acme', 'disabled', 'eve', 'outage')`
	for _, db := range []interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}{b.asAud, b.asA, b.asRelay, b.asDir} {
		_, err = db.Exec(ctx, set)
		requireSQLState(t, err, insufficientPrivilege)
	}
	_, err = b.asOp.Exec(ctx, `UPDATE herald.providers SET state = 'disabled' WHERE name = 'sms/acme'`)
	requireSQLState(t, err, insufficientPrivilege)

	_, err = b.asOp.Exec(ctx, `SELECT * FROM herald.provider_state_set('sms/acme', 'disabled', 'ann', 'outage')`)
	require.NoError(t, err)
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.audit_log
		WHERE action = 'provider_state' AND actor = 'ann' AND login = $1`, b.opName))
	tab, err := routing.Load(ctx, b.asAud)
	require.NoError(t, err)
	require.Equal(t, routing.StateDisabled, tab.Providers["sms/acme"].State, "the auditor reads the state")
}
