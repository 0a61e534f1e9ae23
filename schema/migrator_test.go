package schema_test

import (
	"context"
	"io/fs"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/schema"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// emptyPool returns a pool on a database with nothing migrated.
func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtemp.NewPool(t)
	_, err := schema.NewMigrator(pool, nil).Down(context.Background(), 0)
	require.NoError(t, err)
	return pool
}

func tableExists(t *testing.T, pool *pgxpool.Pool, name string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok))
	return ok
}

func TestMigrator_UpDownUpRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	m := schema.NewMigrator(pool, nil)
	require.False(t, tableExists(t, pool, "herald.routes"))
	require.False(t, tableExists(t, pool, "herald.river_job"))

	steps, err := m.Up(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, steps)
	require.True(t, tableExists(t, pool, "herald.routes"))
	require.True(t, tableExists(t, pool, "herald.river_job"))
	current, err := m.Current(ctx)
	require.NoError(t, err)
	require.True(t, current)

	// Up again is a no-op.
	steps, err = m.Up(ctx)
	require.NoError(t, err)
	require.Empty(t, steps)

	// One step down and up again.
	steps, err = m.DownOne(ctx)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	sts, err := m.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{steps[0].Version}, sts[0].Pending, "the last migration only is rolled back")
	current, err = m.Current(ctx)
	require.NoError(t, err)
	require.False(t, current)

	_, err = m.Down(ctx, 0)
	require.NoError(t, err)
	require.False(t, tableExists(t, pool, "herald.records"))
	require.False(t, tableExists(t, pool, "herald.river_job"))

	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.True(t, tableExists(t, pool, "herald.intake"))
	require.True(t, tableExists(t, pool, "herald.river_job"))
}

func TestMigrator_ConcurrentUpOneVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)

	const runners = 4
	var wg sync.WaitGroup
	errs := make([]error, runners)
	applied := make([]int, runners)
	for i := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			steps, err := schema.NewMigrator(pool, nil).Up(ctx)
			errs[i], applied[i] = err, len(steps)
		}()
	}
	wg.Wait()
	total := 0
	for i := range runners {
		require.NoError(t, errs[i])
		total += applied[i]
	}

	sts, err := schema.NewMigrator(pool, nil).Status(ctx)
	require.NoError(t, err)
	// Herald's versions need not be contiguous (goose orders them), so
	// count its migration files rather than trust its latest version.
	files, err := fs.Glob(schema.FS, "*.sql")
	require.NoError(t, err)
	want := len(files)
	for _, s := range sts {
		require.Empty(t, s.Pending, s.Component)
		require.Equal(t, s.Latest, s.Current, s.Component)
		if s.Component == "river" {
			want += int(s.Latest)
		}
	}
	// Every migration was applied exactly once, by one of the runners.
	require.Equal(t, want, total)

	var rows int
	require.NoError(t, pool.QueryRow(ctx,
		"SELECT count(*) FROM herald.goose_db_version WHERE version_id > 0 AND is_applied").Scan(&rows))
	require.Equal(t, len(files), rows)
	// And every definition recorded once.
	require.Len(t, appliedAt(t, pool), len(definitionFiles(t, schema.FS)))
}

func TestMigrator_CallbacksDownRestoresTimeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	m := schema.NewMigrator(pool, nil)
	// The timeline's definition and grants, and whether 00017's function
	// exists.
	timeline := func() (def, acl string, callbacks bool) {
		t.Helper()
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT pg_get_functiondef(p.oid), p.proacl::text,
				to_regprocedure('herald.notification_callbacks(text)') IS NOT NULL
			FROM pg_catalog.pg_proc p
			WHERE p.oid = 'herald.notification_timeline(text)'::regprocedure`).Scan(&def, &acl, &callbacks))
		return def, acl, callbacks
	}

	_, err := m.Down(ctx, 16)
	require.NoError(t, err)
	def16, acl16, callbacks := timeline()
	require.False(t, callbacks)
	require.Contains(t, def16, "'receipt'")

	_, err = m.Up(ctx)
	require.NoError(t, err)
	def17, acl17, callbacks := timeline()
	require.True(t, callbacks)
	require.Contains(t, def17, "herald.notification_callbacks(notification_timeline.id)")
	require.Contains(t, def17, "LANGUAGE sql\n STABLE")
	require.NotContains(t, def17, "SECURITY DEFINER", "the caller's privileges")
	require.Equal(t, acl16, acl17, "the grants stay")

	_, err = m.Down(ctx, 16)
	require.NoError(t, err)
	def, acl, callbacks := timeline()
	require.Equal(t, def16, def, "00014's definition exactly")
	require.Equal(t, acl16, acl)
	require.False(t, callbacks)
}
