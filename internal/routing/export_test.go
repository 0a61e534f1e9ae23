package routing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
)

func TestExport_ApplyingItChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.apply(t, exampleFile, nil)
	_, err := b.pool.Exec(ctx, `SELECT herald.provider_state_set('sms/acme', 'draining', 'ann', 'maintenance')`)
	require.NoError(t, err)
	before, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)

	out, notes, err := routing.Export(ctx, b.pool)
	require.NoError(t, err)
	require.Empty(t, notes)
	require.Contains(t, string(out), "env: ACME_KEY", "a credential stays a reference")
	require.Empty(t, b.apply(t, string(out), nil), "export | apply is a no-op:\n%s", out)
	after, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, before, after, "and the operator's state stays")
	require.Equal(t, routing.StateDraining, after.Providers["sms/acme"].State)
}

func TestExport_NeverWritesValuesItDoesNotRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.apply(t, exampleFile, nil)
	// A value written by hand beside the reference: perhaps the key itself.
	_, err := b.pool.Exec(ctx, `UPDATE herald.providers
		SET settings = jsonb_set(settings, '{sms_http,api_key,value}', '"sk_live_hunter2"') WHERE name = 'sms/acme'`)
	require.NoError(t, err)
	out, notes, err := routing.Export(ctx, b.pool)
	require.NoError(t, err)
	require.NotContains(t, string(out), "hunter2")
	require.Len(t, notes, 1)
	require.Contains(t, notes[0], "sms/acme")
	require.Contains(t, string(out), "# note: provider sms/acme")
}
