package schema_test

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/schema"
)

// objectState is what recreating a function or view must keep: its
// definition, settings, privileges, comments and owner, as the catalog
// has them.
type objectState struct {
	Name, Definition, Options, Privileges, Comment, Columns, Owner string
}

// herald's functions and views, River's excepted, by name.
func objectStates(t *testing.T, pool *pgxpool.Pool) map[string]objectState {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT 'function ' || p.oid::regprocedure::text, pg_get_functiondef(p.oid), '',
			(SELECT coalesce(string_agg(a.grantee::regrole::text || ':' || a.privilege_type, ',' ORDER BY a.grantee::regrole::text, a.privilege_type), '')
			 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a),
			coalesce(obj_description(p.oid, 'pg_proc'), ''), '', p.proowner::regrole::text
		FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'herald'::regnamespace AND p.proname NOT LIKE 'river\_%'
		UNION ALL
		SELECT 'view ' || c.relname, pg_get_viewdef(c.oid), coalesce(c.reloptions::text, ''),
			(SELECT coalesce(string_agg(a.grantee::regrole::text || ':' || a.privilege_type, ',' ORDER BY a.grantee::regrole::text, a.privilege_type), '')
			 FROM aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a),
			coalesce(obj_description(c.oid, 'pg_class'), ''),
			(SELECT string_agg(format('%s %s %s %s', a.attname, format_type(a.atttypid, a.atttypmod),
				coalesce(col_description(c.oid, a.attnum), ''), coalesce(a.attacl::text, '')), ', ' ORDER BY a.attnum)
			 FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0),
			c.relowner::regrole::text
		FROM pg_catalog.pg_class c
		WHERE c.relnamespace = 'herald'::regnamespace AND c.relkind = 'v'`)
	require.NoError(t, err)
	states, err := pgx.CollectRows(rows, pgx.RowToStructByPos[objectState])
	require.NoError(t, err)
	out := map[string]objectState{}
	for _, s := range states {
		out[s.Name] = s
	}
	return out
}

// A database migrated by the history alone (the shape of every database
// migrated before the definition files existed) migrates cleanly with the
// Migrator and ends with every function and view exactly as a fresh
// database has it: body, settings, grants, comments and owner. The
// functions' grants and comments are reset first, so the files must carry
// them (a view's are dropped with it anyway).
func TestUp_ExistingDatabaseConvergesToTheFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	require.NoError(t, schema.UpVersionedOnly(ctx, pool))

	var resets []string
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT array_agg(format('REVOKE ALL ON ROUTINE %s FROM PUBLIC, %s; GRANT EXECUTE ON ROUTINE %1$s TO PUBLIC; COMMENT ON ROUTINE %1$s IS NULL',
			p.oid::regprocedure, (SELECT string_agg(quote_ident(rolname), ', ') FROM pg_roles WHERE rolname LIKE 'herald\_%')))
		FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'herald'::regnamespace AND p.proname NOT LIKE 'river\_%'`).Scan(&resets))
	_, err := pool.Exec(ctx, strings.Join(resets, ";\n"))
	require.NoError(t, err)

	steps, err := schema.NewMigrator(pool, nil).Up(ctx)
	require.NoError(t, err)
	require.Empty(t, steps, "the versioned migrations were all applied")
	after := objectStates(t, pool)

	fresh := emptyPool(t)
	_, err = schema.NewMigrator(fresh, nil).Up(ctx)
	require.NoError(t, err)
	want := objectStates(t, fresh)
	require.Contains(t, want, "function herald.notification_timeline(text)")
	require.Contains(t, want, "view dead_letter_view")
	for name, w := range want {
		require.Equal(t, w, after[name], name)
	}
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(after)))

	var recorded int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+schema.DefinitionsTable).Scan(&recorded))
	require.Equal(t, len(definitionFiles(t, schema.FS)), recorded)
}

// definitionFiles returns the definition files of fsys by path.
func definitionFiles(t *testing.T, fsys fs.FS) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	for _, dir := range []string{"functions", "views"} {
		paths, err := fs.Glob(fsys, dir+"/*.sql")
		require.NoError(t, err)
		for _, p := range paths {
			b, err := fs.ReadFile(fsys, p)
			require.NoError(t, err)
			out[p] = &fstest.MapFile{Data: b}
		}
	}
	return out
}

// appliedAt returns when each definition was last applied, by kind/name.
func appliedAt(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		"SELECT kind || '/' || name, applied_at::text FROM "+schema.DefinitionsTable)
	require.NoError(t, err)
	out := map[string]string{}
	var k, v string
	_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error { out[k] = v; return nil })
	require.NoError(t, err)
	return out
}

// A changed view file is applied by the next Up, and the views that name
// it are re-created after it, with their grants; nothing else is applied.
func TestMigratorUp_ReappliesAChangedViewAndDependents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	defs := definitionFiles(t, schema.FS)
	// A view that reads another and sorts before it by name.
	defs["views/a_probe_view.sql"] = &fstest.MapFile{Data: []byte(`-- Names unmatched_receipts_view.
CREATE OR REPLACE VIEW herald.a_probe_view AS SELECT * FROM herald.unmatched_receipts_view;
GRANT SELECT ON herald.a_probe_view TO herald_auditor;
`)}
	_, err := schema.NewMigratorWithDefinitions(pool, defs).Up(ctx)
	require.NoError(t, err)
	before := appliedAt(t, pool)
	states := objectStates(t, pool)
	require.Contains(t, states["view a_probe_view"].Privileges, "herald_auditor:SELECT")

	old := string(defs["views/unmatched_receipts_view.sql"].Data)
	changed := strings.Replace(old, "left(raw, 200) AS raw_start", "left(raw, 200) AS raw_start, 'v2'::text AS probe", 1)
	require.NotEqual(t, old, changed)
	defs["views/unmatched_receipts_view.sql"] = &fstest.MapFile{Data: []byte(changed)}
	steps, err := schema.NewMigratorWithDefinitions(pool, defs).Up(ctx)
	require.NoError(t, err)
	require.Empty(t, steps)

	after := objectStates(t, pool)
	require.Contains(t, after["view unmatched_receipts_view"].Definition, "'v2'::text AS probe")
	require.Contains(t, after["view a_probe_view"].Columns, "probe text")
	for _, name := range []string{"view unmatched_receipts_view", "view a_probe_view"} {
		require.Equal(t, states[name].Privileges, after[name].Privileges, name)
		require.Equal(t, states[name].Comment, after[name].Comment, name)
	}
	applied := appliedAt(t, pool)
	for k, at := range applied {
		if strings.HasPrefix(k, "view/") {
			require.NotEqual(t, before[k], at, "every view is re-created: %s", k)
		} else {
			require.Equal(t, before[k], at, "no function is applied again: %s", k)
		}
	}
}

// A changed function file is applied by the next Up, keeping the
// function's grants; an Up with nothing changed applies nothing.
func TestMigratorUp_ReappliesAChangedFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	defs := definitionFiles(t, schema.FS)
	_, err := schema.NewMigratorWithDefinitions(pool, defs).Up(ctx)
	require.NoError(t, err)
	before := appliedAt(t, pool)
	states := objectStates(t, pool)

	// Nothing changed: nothing applied.
	_, err = schema.NewMigratorWithDefinitions(pool, defs).Up(ctx)
	require.NoError(t, err)
	require.Equal(t, before, appliedAt(t, pool))

	const fn = "function herald.notification_timeline(text)"
	old := string(defs["functions/notification_timeline.sql"].Data)
	changed := strings.Replace(old, "ORDER BY e.at, e.ord, e.route_id;", "ORDER BY e.at, e.ord, e.route_id; -- probe", 1)
	require.NotEqual(t, old, changed)
	defs["functions/notification_timeline.sql"] = &fstest.MapFile{Data: []byte(changed)}
	_, err = schema.NewMigratorWithDefinitions(pool, defs).Up(ctx)
	require.NoError(t, err)

	after := objectStates(t, pool)
	require.Contains(t, after[fn].Definition, "-- probe")
	require.Equal(t, states[fn].Privileges, after[fn].Privileges)
	applied := appliedAt(t, pool)
	for k, at := range applied {
		if k == "function/notification_timeline" {
			require.NotEqual(t, before[k], at)
		} else {
			require.Equal(t, before[k], at, "only the changed file is applied: %s", k)
		}
	}
}

// Down forgets the applied definitions, since the history's down steps
// put back older bodies; the next Up applies every one again.
func TestMigratorDown_ForgetsTheDefinitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	m := schema.NewMigrator(pool, nil)
	want := objectStates(t, pool)

	_, err := m.Down(ctx, 16)
	require.NoError(t, err)
	require.False(t, tableExists(t, pool, schema.DefinitionsTable))
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.Len(t, appliedAt(t, pool), len(definitionFiles(t, schema.FS)))
	require.Equal(t, want, objectStates(t, pool))

	_, err = m.DownOne(ctx)
	require.NoError(t, err)
	require.False(t, tableExists(t, pool, schema.DefinitionsTable))
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, want, objectStates(t, pool))
}

// lastHistoryVersion is the last migration allowed to hold function and
// view bodies; the later ones leave them to functions/ and views/.
const lastHistoryVersion = 34

var (
	sqlComment = regexp.MustCompile(`(?m)--.*$`)
	bodyDDL    = regexp.MustCompile(`(?i)\bCREATE\s+(OR\s+REPLACE\s+)?((TEMP|TEMPORARY|RECURSIVE|MATERIALIZED)\s+)*(FUNCTION|PROCEDURE|VIEW)\b`)
	versionOf  = regexp.MustCompile(`^(\d+)_`)
)

// A migration after lastHistoryVersion holds no CREATE FUNCTION,
// PROCEDURE or VIEW: a function or view is changed in its own file, and
// the Migrator re-creates the views a migration drops.
func TestMigrations_HoldNoFunctionOrViewBodies(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(schema.FS, "*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		m := versionOf.FindStringSubmatch(f)
		require.NotNil(t, m, f)
		v, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		if v <= lastHistoryVersion {
			continue
		}
		b, err := fs.ReadFile(schema.FS, f)
		require.NoError(t, err)
		if loc := bodyDDL.FindString(sqlComment.ReplaceAllString(string(b), "")); loc != "" {
			t.Errorf("%s has %q: put the body in functions/ or views/ instead", f, loc)
		}
	}
	// The rule itself finds what it forbids.
	require.True(t, bodyDDL.MatchString("create or replace view herald.x as"))
	require.True(t, bodyDDL.MatchString("CREATE FUNCTION herald.f()"))
	require.False(t, bodyDDL.MatchString("DROP VIEW herald.x"))
}

// Every herald table, view and function in a migrated database has one
// file named after it (tables/, views/, functions/), and every file an
// object: nothing missing, nothing stale. River's tables, goose's and the
// Migrator's bookkeeping, and the partitions named by their week are not
// herald's definitions.
func TestDefinitions_EveryObjectHasOneFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	rows, err := pool.Query(ctx, `
		SELECT CASE WHEN c.relkind = 'v' THEN 'views' ELSE 'tables' END || '/' || c.relname || '.sql'
		FROM pg_catalog.pg_class c
		WHERE c.relnamespace = 'herald'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
			AND c.relname !~ $1
		UNION ALL
		SELECT 'functions/' || p.proname || '.sql'
		FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'herald'::regnamespace AND p.proname !~ $1`, notDefined)
	require.NoError(t, err)
	objects, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	slices.Sort(objects)
	require.Equal(t, slices.Compact(slices.Clone(objects)), objects, "one name, one object")

	var files []string
	names := map[string]string{}
	for _, dir := range []string{"functions", "views", "tables"} {
		paths, err := fs.Glob(os.DirFS("."), dir+"/*.sql")
		require.NoError(t, err)
		for _, p := range paths {
			name := strings.TrimSuffix(strings.TrimPrefix(p, dir+"/"), ".sql")
			require.Empty(t, names[name], "%s is in %s and %s", name, names[name], dir)
			names[name] = dir
		}
		files = append(files, paths...)
	}
	slices.Sort(files)
	require.Equal(t, objects, files)
}
