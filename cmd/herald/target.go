package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/schema"
)

// errNoTarget refuses a command given no database (connstr.ErrNoTarget).
var errNoTarget = usageError{connstr.ErrNoTarget}

// hasTarget reports whether the command line or the environment names the
// database (connstr.Named): a URL (flag, HERALD_DATABASE_URL or
// DATABASE_URL, which g already holds) or a PG* variable naming it.
func (m *Main) hasTarget(g *globalFlags) bool { return connstr.Named(g.DatabaseURL, m.Getenv) }

// checkSchema checks the database's herald schema version is the binary's
// (schema.CheckVersion). Behind, every command fails with one line saying
// to migrate. Ahead, a read-only command (command.readOnly) runs after one
// warning on Stderr, and any other fails. A login that may not read the
// migration history is not checked.
func (m *Main) checkSchema(ctx context.Context, g *globalFlags, pool *pgxpool.Pool) error {
	err := schema.CheckVersion(ctx, pool)
	var ve *schema.VersionError
	switch {
	case errors.Is(err, schema.ErrVersionUnreadable):
		m.logger(g).Debug("schema version not checked", "err", err)
		return nil
	case errors.As(err, &ve) && ve.Ahead() && m.current != nil && m.current.readOnly:
		fmt.Fprintf(m.Stderr, "herald: warning: %s\n", err)
		return nil
	}
	return err
}
