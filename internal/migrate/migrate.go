// Package migrate is schema's Migrator under the names internal/bench still
// uses (migrate.New(pool, nil).Up(ctx)). New code calls schema.NewMigrator;
// once internal/bench does, this package goes.
package migrate

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/schema"
)

// Config is schema.MigratorConfig.
type Config = schema.MigratorConfig

// Migrator is schema.Migrator.
type Migrator = schema.Migrator

// Step is schema.Step.
type Step = schema.Step

// Status is schema.Status.
type Status = schema.Status

// New is schema.NewMigrator.
func New(pool *pgxpool.Pool, cfg *Config) *Migrator { return schema.NewMigrator(pool, cfg) }
