package schema

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
)

// LatestVersion returns the highest herald migration version this build
// carries in FS (River's migrations are counted apart, by Migrator.Status).
func LatestVersion() int64 {
	var latest int64
	names, _ := fs.Glob(FS, "*.sql")
	for _, n := range names {
		if v, err := goose.NumericComponent(path.Base(n)); err == nil {
			latest = max(latest, v)
		}
	}
	return latest
}

// AppliedVersion returns the highest herald migration version applied to
// the database behind pool: 0 when none is, the schema not existing
// included. It only reads, unlike Migrator.Status, whose goose provider
// creates its history table when missing, so a login that may not write
// the schema (an operator's) can ask too. A login that may not read the
// history table gets the database's permission error.
func AppliedVersion(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", versionTable).Scan(&exists); err != nil {
		return 0, fmt.Errorf("look up %s: %w", versionTable, err)
	}
	if !exists {
		return 0, nil
	}
	// goose deletes a migration's row when it rolls it back, so the
	// highest applied row is the version. The table's name is a constant
	// of this package: the one statement sqlc does not see.
	var v int64
	err := pool.QueryRow(ctx, "SELECT coalesce(max(version_id), 0) FROM "+versionTable+" WHERE is_applied").Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", versionTable, err)
	}
	return v, nil
}

// ErrVersionUnreadable is returned by CheckVersion, wrapping the
// database's permission error, for a login that may not read the
// migration history (a producer's): its statements fail on their own if
// the schema is not the one they expect.
var ErrVersionUnreadable = errors.New("schema version not readable")

// VersionError says the database's herald schema (Have) is not the one the
// binary carries (Want). Behind, statements would fail on missing tables,
// functions or columns, each with an error that does not say why; ahead,
// a statement that writes would write through definitions the binary does
// not know.
type VersionError struct{ Have, Want int64 }

// Ahead reports whether the database's schema is newer than the binary's.
func (e *VersionError) Ahead() bool { return e.Have > e.Want }

func (e *VersionError) Error() string {
	if e.Ahead() {
		return fmt.Sprintf("binary older than schema: the database is at version %d, this herald knows %d: upgrade herald", e.Have, e.Want)
	}
	return fmt.Sprintf("schema at version %d of %d: run herald migrate up", e.Have, e.Want)
}

// CheckVersion compares the database's herald schema version
// (AppliedVersion) with the binary's (LatestVersion). It returns nil when
// they are the same, a *VersionError when not, ErrVersionUnreadable when
// the login may not read the migration history, and AppliedVersion's
// error otherwise.
func CheckVersion(ctx context.Context, pool *pgxpool.Pool) error {
	have, err := AppliedVersion(ctx, pool)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege {
		return fmt.Errorf("%w: %w", ErrVersionUnreadable, err)
	}
	if err != nil {
		return err
	}
	if want := LatestVersion(); have != want {
		return &VersionError{Have: have, Want: want}
	}
	return nil
}
