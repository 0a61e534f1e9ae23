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

// connectFor connects for the command running: a replicaReads command
// given --read-database-url reads from that replica, or from the primary
// when the replica lags past --read-max-lag or does not answer
// (connstr.ConnectRead), which it says in one line on Stderr; every
// other command, and every write, connects to the primary.
func (m *Main) connectFor(ctx context.Context, g *globalFlags, tune func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	if m.current == nil || !m.current.replicaReads || g.Read.URL == "" {
		return connstr.Connect(ctx, g.DatabaseURL, tune)
	}
	pool, src, err := connstr.ConnectRead(ctx, g.DatabaseURL, g.Read, tune)
	if err != nil {
		return nil, err
	}
	if src.Why != "" {
		fmt.Fprintln(m.Stderr, "herald: read from the primary: "+src.Why)
	}
	m.read = src
	return pool, nil
}

// withReadSource returns v as --json prints it: with where it was read
// (connstr.ReadSource.Annotate) when the command could read from a
// replica.
func (m *Main) withReadSource(v any) any {
	if m.read == nil {
		return v
	}
	if raw, err := m.read.Annotate(v); err == nil {
		return raw
	}
	return v // render.JSON reports what would not marshal
}
