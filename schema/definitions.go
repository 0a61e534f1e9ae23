package schema

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// definitionsTable records which definition files (functions/*.sql,
// views/*.sql) are applied, with the SHA-256 of each file's text. Like
// goose's version table it is the Migrator's bookkeeping, not part of the
// schema, so it is created here and not by a migration.
const definitionsTable = Name + ".schema_definitions"

// Kinds of definition, and the folder of FS that holds each.
const (
	kindFunction = "function"
	kindView     = "view"
)

var definitionDirs = []struct{ kind, dir string }{
	{kindFunction, "functions"},
	{kindView, "views"},
}

// definition is one file of functions/ or views/: the current definition
// of the object it is named after.
type definition struct {
	kind string
	name string // the object's name, the file's without .sql
	sql  string
	sum  string // hex SHA-256 of sql
}

// loadDefinitions reads the definition files of fsys: the views in the
// order they can be created in, then the functions in name order. Views
// come first because functions read views (a SQL function's body is
// checked against them when it is created) and no view calls a herald
// function; a view that did would need that function created first.
func loadDefinitions(fsys fs.FS) ([]definition, error) {
	var funcs, views []definition
	for _, d := range definitionDirs {
		paths, err := fs.Glob(fsys, d.dir+"/*.sql")
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d.dir, err)
		}
		for _, p := range paths {
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", p, err)
			}
			sum := sha256.Sum256(b)
			def := definition{
				kind: d.kind,
				name: strings.TrimSuffix(path.Base(p), ".sql"),
				sql:  string(b),
				sum:  hex.EncodeToString(sum[:]),
			}
			if d.kind == kindView {
				views = append(views, def)
			} else {
				funcs = append(funcs, def)
			}
		}
	}
	views, err := viewOrder(views)
	if err != nil {
		return nil, err
	}
	return append(views, funcs...), nil
}

var sqlLineComment = regexp.MustCompile(`--[^\n]*`)

// viewOrder sorts views so that a view comes after every other view its
// text names (outside comments): the order they can be created in. Views
// that name none of each other keep their name order.
func viewOrder(views []definition) ([]definition, error) {
	slices.SortFunc(views, func(a, b definition) int { return strings.Compare(a.name, b.name) })
	deps := make(map[string][]string, len(views))
	for _, v := range views {
		body := sqlLineComment.ReplaceAllString(v.sql, "")
		for _, o := range views {
			if o.name != v.name && regexp.MustCompile(`\b`+regexp.QuoteMeta(o.name)+`\b`).MatchString(body) {
				deps[v.name] = append(deps[v.name], o.name)
			}
		}
	}
	done := make(map[string]bool, len(views))
	var out []definition
	for len(out) < len(views) {
		progress := false
		for _, v := range views {
			if done[v.name] || slices.ContainsFunc(deps[v.name], func(d string) bool { return !done[d] }) {
				continue
			}
			done[v.name] = true
			out = append(out, v)
			progress = true
		}
		if !progress {
			var left []string
			for _, v := range views {
				if !done[v.name] {
					left = append(left, v.name)
				}
			}
			return nil, fmt.Errorf("views name each other in a cycle: %s", strings.Join(left, ", "))
		}
	}
	return out, nil
}

// applyDefinitions brings the functions and views in line with their
// files, in one transaction, after the versioned migrations: the views
// first, in dependency order, then the functions, which may read them.
// Views are all dropped and re-created when any view file changed or a
// versioned migration ran: a view cannot be replaced in place once its
// columns change, and re-creating every one brings back those a migration
// dropped to change a column beneath them; each file carries its grants
// and comments, so nothing is lost. A function is re-created (CREATE OR
// REPLACE keeps its grants and what depends on it) when its file changed
// or a versioned migration ran, since a migration may have dropped it to
// change its signature. The caller holds the migrate lock.
func (m *Migrator) applyDefinitions(ctx context.Context, migrated bool) error {
	defs, err := loadDefinitions(m.defs)
	if err != nil {
		return fmt.Errorf("definitions: %w", err)
	}
	tx, err := m.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("definitions: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	// The bookkeeping, created on first use (the Migrator's own table, as
	// goose's are).
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+definitionsTable+` (
		kind text NOT NULL,
		name text NOT NULL,
		sha256 text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (kind, name))`); err != nil {
		return fmt.Errorf("create %s: %w", definitionsTable, err)
	}
	rows, err := tx.Query(ctx, `SELECT kind, name, sha256 FROM `+definitionsTable)
	if err != nil {
		return fmt.Errorf("read %s: %w", definitionsTable, err)
	}
	applied := map[[2]string]string{}
	var kind, name, sum string
	if _, err := pgx.ForEachRow(rows, []any{&kind, &name, &sum}, func() error {
		applied[[2]string{kind, name}] = sum
		return nil
	}); err != nil {
		return fmt.Errorf("read %s: %w", definitionsTable, err)
	}

	viewsChanged := migrated
	var views []string
	current := map[[2]string]bool{}
	for _, d := range defs {
		current[[2]string{d.kind, d.name}] = true
		if d.kind == kindView {
			views = append(views, Name+"."+pgx.Identifier{d.name}.Sanitize())
			viewsChanged = viewsChanged || applied[[2]string{d.kind, d.name}] != d.sum
		}
	}
	for k := range applied {
		if k[0] == kindView && !current[k] {
			viewsChanged = true
		}
	}
	if viewsChanged && len(views) > 0 {
		// One statement drops views that depend on each other; without
		// CASCADE it fails, rather than drop what it does not manage, when
		// anything else depends on one of them.
		if _, err := tx.Exec(ctx, "DROP VIEW IF EXISTS "+strings.Join(views, ", ")); err != nil {
			return fmt.Errorf("drop views: %w", err)
		}
	}
	for _, d := range defs {
		key := [2]string{d.kind, d.name}
		if d.kind == kindFunction && !migrated && applied[key] == d.sum {
			continue
		}
		if d.kind == kindView && !viewsChanged {
			continue
		}
		if _, err := tx.Exec(ctx, d.sql); err != nil {
			return fmt.Errorf("apply %s %s: %w", d.kind, d.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+definitionsTable+` (kind, name, sha256) VALUES ($1, $2, $3)
			ON CONFLICT (kind, name) DO UPDATE SET sha256 = excluded.sha256, applied_at = excluded.applied_at`,
			d.kind, d.name, d.sum); err != nil {
			return fmt.Errorf("record %s %s: %w", d.kind, d.name, err)
		}
		if applied[key] != d.sum {
			m.logger.Info("applied definition", slog.String("kind", d.kind), slog.String("name", d.name))
		}
	}
	// A file removed is forgotten; dropping its object is a migration's job.
	for k := range applied {
		if !current[k] {
			if _, err := tx.Exec(ctx, `DELETE FROM `+definitionsTable+` WHERE kind = $1 AND name = $2`, k[0], k[1]); err != nil {
				return fmt.Errorf("forget %s %s: %w", k[0], k[1], err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("definitions: %w", err)
	}
	return nil
}

// forgetDefinitions drops the bookkeeping after a migration was rolled
// back: the history's down steps put back its own older bodies of
// functions and views, so the next Up applies every definition again.
func (m *Migrator) forgetDefinitions(ctx context.Context) error {
	if _, err := m.pool.Exec(ctx, "DROP TABLE IF EXISTS "+definitionsTable); err != nil {
		return fmt.Errorf("drop %s: %w", definitionsTable, err)
	}
	return nil
}
