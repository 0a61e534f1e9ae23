// Package schema is herald's database schema: its goose migrations,
// embedded (FS), and the Migrator that applies them and River's, which
// `herald migrate` runs and a Go service can call at start-up instead:
//
//	_, err := schema.NewMigrator(pool, nil).Up(ctx)
//
// Package heraldtest, below it, gives a producer's tests a throwaway
// database migrated the same way.
//
// The client package (the module root) does not import this package, so a
// producer that only submits does not build goose or River into its binary.
package schema

import "embed"

// FS holds the migrations, NNNNN_verb_noun.sql, in goose's format.
//
//go:embed *.sql
var FS embed.FS

// Name is the Postgres schema that holds all of herald's tables, views,
// functions and River's tables, so herald can share a database with a
// producer's own tables.
const Name = "herald"
