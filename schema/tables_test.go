package schema_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

var update = flag.Bool("update", false, "rewrite tables/*.sql from a freshly migrated database")

// notDefined matches the names in the herald schema that have no file:
// River's and goose's tables, the Migrator's bookkeeping, and the
// partitions named after their week (records_w20260105, routes_f20260105),
// which depend on the day the database was migrated.
const notDefined = `^(river_|goose_)|^schema_definitions$|_[a-z][0-9]{8}$`

// tableHeader opens every file of tables/.
const tableHeader = `-- herald.%s as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by ` + "`task schema:tables`" + `
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.
`

// tocEntry is the comment pg_dump writes before each object.
var tocEntry = regexp.MustCompile(`(?m)^--\n-- Name: .*; Type: .*; Schema: .*; Owner: .*\n--\n`)

// tableFile returns the file of tables/ for table: the statements pg_dump
// writes for it (the table, its sequences, constraints, indexes, triggers,
// row security, policies, comments and grants), without pg_dump's session
// settings, its comments or owners.
func tableFile(ctx context.Context, pgDump, dbURL, table string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, pgDump, "--schema-only", "--no-owner", "--table", "herald."+table, "--dbname", dbURL)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pg_dump %s: %w: %s", table, err, stderr.String())
	}
	var out strings.Builder
	fmt.Fprintf(&out, tableHeader, table)
	entries := tocEntry.Split(stdout.String(), -1)
	for _, e := range entries[1:] { // [0] is the preamble
		var lines []string
		for _, ln := range strings.Split(e, "\n") {
			if strings.HasPrefix(ln, `\`) || strings.HasPrefix(ln, "SET ") || strings.HasPrefix(ln, "-- ") {
				continue
			}
			lines = append(lines, ln)
		}
		if stmt := strings.TrimSpace(strings.Join(lines, "\n")); stmt != "" {
			out.WriteString("\n" + stmt + "\n")
		}
	}
	return []byte(out.String()), nil
}

// tables/ holds every herald table as a fresh migration leaves it; with
// -update the test writes the files instead, removing those of tables
// gone.
func TestTableFiles_MatchAFreshMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, err := pgtemp.FindBinDir()
	require.NoError(t, err)
	pgDump := filepath.Join(dir, "pg_dump")
	dbURL := pgtemp.NewDatabase(t)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT c.relname FROM pg_catalog.pg_class c
		WHERE c.relnamespace = 'herald'::regnamespace AND c.relkind IN ('r', 'p', 'f') AND c.relname !~ $1
		ORDER BY 1`, notDefined)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, tables, "routes")

	want := make([][]byte, len(tables))
	var g errgroup.Group
	g.SetLimit(4)
	for i, table := range tables {
		g.Go(func() (err error) {
			want[i], err = tableFile(ctx, pgDump, dbURL, table)
			return err
		})
	}
	require.NoError(t, g.Wait())

	committed, err := fs.Glob(os.DirFS("."), "tables/*.sql")
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.MkdirAll("tables", 0o755))
		for _, p := range committed {
			require.NoError(t, os.Remove(p))
		}
		for i, table := range tables {
			require.NoError(t, os.WriteFile(filepath.Join("tables", table+".sql"), want[i], 0o644))
		}
		return
	}
	var names []string
	for i, table := range tables {
		p := "tables/" + table + ".sql"
		names = append(names, p)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s is missing: run `task schema:tables`", p)
			continue
		}
		require.Equal(t, string(want[i]), string(got), "%s differs from a fresh migration: run `task schema:tables`", p)
	}
	slices.Sort(committed)
	require.Equal(t, names, committed, "tables/ holds a file of a table the migrations do not make: run `task schema:tables`")
}
