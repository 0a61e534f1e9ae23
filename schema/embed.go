// Package schema holds herald's goose migrations, embedded so that the herald
// binary and the test harness migrate from the same files.
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
