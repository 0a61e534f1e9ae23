package schema

import (
	"context"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
)

// NewMigratorWithDefinitions is NewMigrator applying the definitions in
// defs (functions/*.sql, views/*.sql) instead of FS's.
func NewMigratorWithDefinitions(pool *pgxpool.Pool, defs fs.FS) *Migrator {
	m := NewMigrator(pool, nil)
	m.defs = defs
	return m
}

// UpVersionedOnly migrates as goose and River alone do, applying no
// definitions: the shape of a database migrated before the definitions
// left the history.
func UpVersionedOnly(ctx context.Context, pool *pgxpool.Pool) error {
	m := NewMigrator(pool, nil)
	return m.locked(ctx, func(p *goose.Provider) error {
		_, err := m.upVersioned(ctx, p)
		return err
	})
}

// DefinitionsTable is the Migrator's bookkeeping of applied definitions.
const DefinitionsTable = definitionsTable
