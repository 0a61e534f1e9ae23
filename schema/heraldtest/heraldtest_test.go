package heraldtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/schema"
	"github.com/heraldhq/herald/schema/heraldtest"
)

// TestMain stops the throwaway cluster, if the tests started one, as a
// producer's TestMain would.
func TestMain(m *testing.M) {
	code := m.Run()
	_ = heraldtest.StopServer()
	os.Exit(code)
}

func tableExists(t *testing.T, pool *pgxpool.Pool, name string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok))
	return ok
}

func databaseExists(t *testing.T, pool *pgxpool.Pool, dbURL string) bool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	var ok bool
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", cfg.ConnConfig.Database).Scan(&ok))
	return ok
}

func TestNewDatabase_MigratedAndCloseDrops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := heraldtest.NewDatabase(ctx, &heraldtest.Opts{Name: "close_drops"})
	require.NoError(t, err)
	require.Contains(t, db.URL, "close_drops")
	require.True(t, tableExists(t, db.Pool, "herald.routes"))
	require.True(t, tableExists(t, db.Pool, "herald.river_job"))
	current, err := schema.NewMigrator(db.Pool, nil).Current(ctx)
	require.NoError(t, err)
	require.True(t, current, "migrated with every migration, herald's and River's")

	other := heraldtest.NewTestDatabase(t, nil)
	require.NotEqual(t, db.URL, other.URL)
	require.True(t, databaseExists(t, other.Pool, db.URL))
	require.NoError(t, db.Close())
	require.False(t, databaseExists(t, other.Pool, db.URL))
	require.NoError(t, db.Close(), "a second Close does nothing")
}

func TestNewTestDatabase_EmptyUntilMigrated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := heraldtest.NewTestDatabase(t, &heraldtest.Opts{Empty: true})
	require.False(t, tableExists(t, db.Pool, "herald.routes"))

	steps, err := schema.NewMigrator(db.Pool, nil).Up(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, steps)
	require.True(t, tableExists(t, db.Pool, "herald.routes"))
}

func TestServerURL_NamesTheServer(t *testing.T) {
	t.Parallel()
	first := heraldtest.NewTestDatabase(t, nil)
	// Any database on a server names it: this one, migrated and all.
	db := heraldtest.NewTestDatabase(t, &heraldtest.Opts{ServerURL: first.URL, Name: "given_server"})
	require.Contains(t, db.URL, "given_server")
	require.True(t, tableExists(t, db.Pool, "herald.routes"))
	require.True(t, databaseExists(t, first.Pool, db.URL))
}

func TestNewTestDatabase_DropsOnPass(t *testing.T) {
	t.Parallel()
	watcher := heraldtest.NewTestDatabase(t, nil)
	var dbURL string
	t.Run("Passing", func(t *testing.T) {
		db := heraldtest.NewTestDatabase(t, nil)
		dbURL = db.URL
		require.Contains(t, dbURL, "passing", "named after the test")
		require.True(t, tableExists(t, db.Pool, "herald.records"))
	})
	require.NotEmpty(t, dbURL)
	require.False(t, databaseExists(t, watcher.Pool, dbURL))
}
