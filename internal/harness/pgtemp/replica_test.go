package pgtemp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestStartReplica_StreamsThePrimarysCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, err := pgtemp.Start(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Stop() })
	replica, err := primary.StartReplica(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = replica.Stop() })
	require.NotEqual(t, primary.Port(), replica.Port())
	require.NotEqual(t, primary.Dir(), replica.Dir())

	p, err := pgx.Connect(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	defer p.Close(ctx)
	_, err = p.Exec(ctx, "CREATE TABLE streamed (v int); INSERT INTO streamed VALUES (7)")
	require.NoError(t, err)
	require.NoError(t, replica.WaitReplayed(ctx, primary))

	r, err := pgx.Connect(ctx, replica.URL("postgres"))
	require.NoError(t, err)
	defer r.Close(ctx)
	var inRecovery bool
	var v int
	require.NoError(t, r.QueryRow(ctx, "SELECT pg_is_in_recovery(), (SELECT v FROM streamed)").Scan(&inRecovery, &v))
	require.True(t, inRecovery, "a standby")
	require.Equal(t, 7, v)

	// A standby refuses writes.
	_, err = r.Exec(ctx, "INSERT INTO streamed VALUES (8)")
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%v", err)
	require.Equal(t, pgerrcode.ReadOnlySQLTransaction, pgErr.Code)

	// The primary sees it streaming.
	var state string
	require.NoError(t, p.QueryRow(ctx, "SELECT state FROM pg_stat_replication WHERE application_name = 'pgtemp_replica'").Scan(&state))
	require.Equal(t, "streaming", state)
}
