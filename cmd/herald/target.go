package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/schema"
)

// targetVars are the libpq variables that name a server or a database. One
// of them set is as explicit as a URL; the others (PGUSER, PGPASSWORD,
// PGSSLMODE, ...) only say how to reach a server named elsewhere.
var targetVars = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGSERVICE"}

// errNoTarget refuses a command given no database: libpq would otherwise
// pick its default socket and the OS user, and `migrate up` would create
// herald's schema and cluster-wide roles on whatever server answers there.
var errNoTarget = usageError{errors.New("no database given: set --database-url, HERALD_DATABASE_URL or DATABASE_URL (or PGHOST, PGDATABASE or PGSERVICE)")}

// hasTarget reports whether the command line or the environment names the
// database: a URL (flag, HERALD_DATABASE_URL or DATABASE_URL, which g
// already holds) or one of targetVars.
func (m *Main) hasTarget(g *globalFlags) bool {
	if g.DatabaseURL != "" {
		return true
	}
	for _, v := range targetVars {
		if m.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// errSchemaBehind says the database's schema is older than the binary's:
// the command's statements would fail on missing tables, functions or
// columns, each with an error that does not say why.
type errSchemaBehind struct{ have, want int64 }

func (e errSchemaBehind) Error() string {
	return fmt.Sprintf("schema at version %d of %d: run herald migrate up", e.have, e.want)
}

// errSchemaAhead says the database's schema is newer than the binary's.
type errSchemaAhead struct{ have, want int64 }

func (e errSchemaAhead) Error() string {
	return fmt.Sprintf("binary older than schema: the database is at version %d, this herald knows %d: upgrade herald", e.have, e.want)
}

// checkSchema compares the database's herald schema version with the
// binary's. Behind, every command fails with one line saying to migrate.
// Ahead, a read-only command (command.readOnly) runs after one warning on
// Stderr, and any other fails: it would write through definitions it does
// not know. A login that may not read the migration history (a producer's)
// is not checked: its commands fail on their own if the schema is wrong.
func (m *Main) checkSchema(ctx context.Context, g *globalFlags, pool *pgxpool.Pool) error {
	have, err := schema.AppliedVersion(ctx, pool)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege {
		m.logger(g).Debug("schema version not checked", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	want := schema.LatestVersion()
	switch {
	case have < want:
		return errSchemaBehind{have, want}
	case have > want && m.current != nil && m.current.readOnly:
		fmt.Fprintf(m.Stderr, "herald: warning: %s\n", errSchemaAhead{have, want})
	case have > want:
		return errSchemaAhead{have, want}
	}
	return nil
}
