package pgtemp_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

func TestNewPool_GivesOwnMigratedDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := pgtemp.NewPool(t)
	b := pgtemp.NewPool(t)

	var nameA, nameB string
	require.NoError(t, a.QueryRow(ctx, "SELECT current_database()").Scan(&nameA))
	require.NoError(t, b.QueryRow(ctx, "SELECT current_database()").Scan(&nameB))
	require.NotEqual(t, nameA, nameB)

	// Migrated: herald's tables and River's are there.
	for _, tbl := range []string{"herald.records", "herald.routes", "herald.dead_letters", "herald.malformed_intents", "herald.river_job"} {
		var ok bool
		require.NoError(t, a.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", tbl).Scan(&ok))
		require.True(t, ok, tbl)
	}

	// Isolated: a write in one is not seen in the other.
	_, err := a.Exec(ctx, "INSERT INTO herald.intake (body) VALUES ('{}')")
	require.NoError(t, err)
	var n int
	require.NoError(t, b.QueryRow(ctx, "SELECT count(*) FROM herald.intake").Scan(&n))
	require.Zero(t, n)
}

func TestCluster_RestartKeepsCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := pgtemp.Start(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })

	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)")
	require.NoError(t, err)
	conn.Close(ctx)

	require.NoError(t, c.Restart(ctx))

	conn, err = pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v int
	require.NoError(t, conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, 7, v)
}

func TestFindBinDir_FindsServerBinaries(t *testing.T) {
	t.Parallel()
	dir, err := pgtemp.FindBinDir()
	require.NoError(t, err)
	require.FileExists(t, dir+"/initdb")
	require.FileExists(t, dir+"/postgres")
}
