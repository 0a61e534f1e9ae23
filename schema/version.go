package schema

import (
	"context"
	"fmt"
	"io/fs"
	"path"

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
