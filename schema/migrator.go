package schema

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// lockID is the row of lockTable that serialises whole migrate runs.
const lockID int64 = 0x6865_7261_6c64 // "herald"

// versionTable is goose's history table, kept inside the herald schema.
const versionTable = Name + ".goose_db_version"

// lockTable is goose's lock table (its table locker), kept inside the
// herald schema: a migrate run holds its row lockID by a lease it renews.
// It is a table and not an advisory lock because any login may take any
// advisory key, a producer's included, and a migrate waiting on one would
// wait for ever; only the migrating login may write this table (staff
// read it), so no other can take or hold the lock.
const lockTable = Name + ".goose_lock"

// MigratorConfig configures a Migrator.
type MigratorConfig struct {
	// Logger receives one line per applied migration. Defaults to a logger
	// that discards.
	Logger *slog.Logger
}

// Migrator applies herald's schema to one database: its own goose
// migrations (FS), then River's, all inside the Postgres schema Name. It is
// what `herald migrate` runs, for a Go service that migrates at start-up
// instead, as River's rivermigrate is for River. It is safe to run from many
// processes at once: one lock, a leased row of goose's lock table that only
// the migrating login may write, serialises whole runs.
type Migrator struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	defs   fs.FS // holds functions/ and views/: FS, but for tests
}

// NewMigrator returns a Migrator for the database behind pool; cfg may be
// nil. The pool's login needs the right to create the schema (or own it,
// once created) and its tables: a migration login, not a producer's.
func NewMigrator(pool *pgxpool.Pool, cfg *MigratorConfig) *Migrator {
	if cfg == nil {
		cfg = &MigratorConfig{}
	}
	return &Migrator{
		pool:   pool,
		logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		defs:   FS,
	}
}

// Step is one migration applied or rolled back.
type Step struct {
	// Component is "herald" or "river".
	Component string `json:"component"`
	// Version is the migration's version within its component.
	Version int64 `json:"version"`
	// Name is the migration's file name (herald) or name (River).
	Name string `json:"name"`
	// Direction is "up" or "down".
	Direction string        `json:"direction"`
	Duration  time.Duration `json:"duration"`
}

// Status is where one component's migrations stand.
type Status struct {
	// Component is "herald" or "river".
	Component string `json:"component"`
	// Current is the highest version applied, 0 for none.
	Current int64 `json:"current"`
	// Latest is the highest version this build knows.
	Latest int64 `json:"latest"`
	// Pending lists the versions not applied, in order; none when the
	// component is up to date.
	Pending []int64 `json:"pending"`
}

// Up applies every pending migration, herald's first and then River's,
// creating the schema Name if need be, and then the definitions of
// functions and views whose files changed (see applyDefinitions), in one
// transaction, logging each. On an up-to-date database it applies nothing
// and returns no steps; the steps are the versioned migrations only. With
// an error, the steps are those taken before it.
func (m *Migrator) Up(ctx context.Context) (steps []Step, err error) {
	err = m.locked(ctx, func(p *goose.Provider) error {
		steps, err = m.upVersioned(ctx, p)
		if err != nil {
			return err
		}
		ran := slices.ContainsFunc(steps, func(s Step) bool { return s.Component == "herald" })
		return m.applyDefinitions(ctx, ran)
	})
	return steps, err
}

// upVersioned applies herald's pending migrations and then River's.
func (m *Migrator) upVersioned(ctx context.Context, p *goose.Provider) ([]Step, error) {
	res, err := p.Up(ctx)
	steps := gooseSteps(res)
	if err != nil {
		return steps, fmt.Errorf("herald migrations: %w", err)
	}
	rm, err := m.river()
	if err != nil {
		return steps, err
	}
	rres, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return steps, fmt.Errorf("river migrations: %w", err)
	}
	return append(steps, riverSteps(rres)...), nil
}

// Down rolls herald's migrations back to version to (exclusive: to stays
// applied). Down to 0 also removes River's tables, leaving the herald schema
// empty but for goose's version table. A negative to is an error. With an
// error, the steps are those taken before it.
//
// The definitions of functions and views are not versioned: the down steps
// put back the bodies their migrations replaced, and Down forgets which
// definitions were applied, so the next Up applies every one again.
func (m *Migrator) Down(ctx context.Context, to int64) (steps []Step, err error) {
	if to < 0 {
		return nil, fmt.Errorf("down: target version %d is negative", to)
	}
	err = m.locked(ctx, func(p *goose.Provider) error {
		if err := m.forgetDefinitions(ctx); err != nil {
			return err
		}
		if to == 0 {
			rm, err := m.river()
			if err != nil {
				return err
			}
			rres, err := rm.Migrate(ctx, rivermigrate.DirectionDown, &rivermigrate.MigrateOpts{TargetVersion: -1})
			if err != nil {
				return fmt.Errorf("river migrations: %w", err)
			}
			steps = append(steps, riverSteps(rres)...)
		}
		res, err := p.DownTo(ctx, to)
		steps = append(steps, gooseSteps(res)...)
		if err != nil {
			return fmt.Errorf("herald migrations: %w", err)
		}
		return nil
	})
	return steps, err
}

// DownOne rolls back herald's most recent migration (never River's), and
// forgets the applied definitions as Down does. On a database with none
// applied it does nothing and returns no steps.
func (m *Migrator) DownOne(ctx context.Context) (steps []Step, err error) {
	err = m.locked(ctx, func(p *goose.Provider) error {
		cur, err := p.GetDBVersion(ctx)
		if err != nil {
			return fmt.Errorf("herald version: %w", err)
		}
		if cur == 0 {
			return nil
		}
		if err := m.forgetDefinitions(ctx); err != nil {
			return err
		}
		res, err := p.Down(ctx)
		if res != nil {
			steps = append(steps, gooseSteps([]*goose.MigrationResult{res})...)
		}
		if err != nil {
			return fmt.Errorf("herald migrations: %w", err)
		}
		return nil
	})
	return steps, err
}

// Status reports herald's and then River's migration versions. It changes
// nothing; on a database never migrated every version is pending.
func (m *Migrator) Status(ctx context.Context) ([]Status, error) {
	var out []Status
	err := m.withProvider(ctx, func(p *goose.Provider) error {
		sts, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("herald status: %w", err)
		}
		st := Status{Component: "herald"}
		for _, s := range sts {
			st.Latest = max(st.Latest, s.Source.Version)
			if s.State == goose.StateApplied {
				st.Current = max(st.Current, s.Source.Version)
			} else {
				st.Pending = append(st.Pending, s.Source.Version)
			}
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rst, err := m.riverStatus(ctx)
	if err != nil {
		return nil, err
	}
	return append(out, rst), nil
}

// riverStatus is River's part of Status.
func (m *Migrator) riverStatus(ctx context.Context) (Status, error) {
	rm, err := m.river()
	if err != nil {
		return Status{}, err
	}
	rst := Status{Component: "river"}
	all := rm.AllVersions()
	if len(all) > 0 {
		rst.Latest = int64(all[len(all)-1].Version)
	}
	exists, err := m.tableExists(ctx, Name+".river_migration")
	if err != nil {
		return Status{}, err
	}
	applied := map[int]bool{}
	if exists {
		versions, err := rm.ExistingVersions(ctx)
		if err != nil {
			return Status{}, fmt.Errorf("river status: %w", err)
		}
		for _, v := range versions {
			applied[v.Version] = true
			rst.Current = max(rst.Current, int64(v.Version))
		}
	}
	for _, v := range all {
		if !applied[v.Version] {
			rst.Pending = append(rst.Pending, int64(v.Version))
		}
	}
	return rst, nil
}

// Current reports whether every migration, herald's and River's, is
// applied: what /readyz, the herald_ready gauge and each serve process's
// heartbeat check, every few seconds. It reads goose's history in one
// statement (Status reads it once per migration) and River's in two.
func (m *Migrator) Current(ctx context.Context) (bool, error) {
	var pending bool
	err := m.withProvider(ctx, func(p *goose.Provider) error {
		var err error
		pending, err = p.HasPending(ctx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("herald status: %w", err)
	}
	if pending {
		return false, nil
	}
	rst, err := m.riverStatus(ctx)
	if err != nil {
		return false, err
	}
	return len(rst.Pending) == 0, nil
}

func (m *Migrator) tableExists(ctx context.Context, name string) (bool, error) {
	var ok bool
	if err := m.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up %s: %w", name, err)
	}
	return ok, nil
}

func (m *Migrator) river() (*rivermigrate.Migrator[pgx.Tx], error) {
	rm, err := rivermigrate.New(riverpgxv5.New(m.pool), &rivermigrate.Config{
		Schema: Name,
		Logger: m.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("river migrator: %w", err)
	}
	return rm, nil
}

// locked runs fn with a goose provider while holding the migrate lock, after
// making sure the herald schema (where the lock's table lives) exists.
func (m *Migrator) locked(ctx context.Context, fn func(*goose.Provider) error) error {
	if _, err := m.pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+Name); err != nil {
		var pgErr *pgconn.PgError
		// Two runs may both find it missing; one creates it.
		if !errors.As(err, &pgErr) || (pgErr.Code != pgerrcode.DuplicateSchema && pgErr.Code != pgerrcode.UniqueViolation) {
			return fmt.Errorf("create schema %s: %w", Name, err)
		}
	}
	locker, err := lock.NewPostgresTableLocker(
		lock.WithTableName(lockTable),
		lock.WithTableLockID(lockID),
		// Poll every second for up to five minutes (goose polls every 5 s
		// by default, which makes a waiting migrate needlessly slow).
		lock.WithTableLockTimeout(time.Second, 300),
	)
	if err != nil {
		return fmt.Errorf("goose locker: %w", err)
	}
	db := stdlib.OpenDBFromPool(m.pool)
	defer db.Close()
	if err := locker.Lock(ctx, db); err != nil {
		return fmt.Errorf("take migrate lock: %w", err)
	}
	defer func() {
		// A lock not released (the process died, the database went away)
		// is free again when its lease ends.
		if uerr := locker.Unlock(context.WithoutCancel(ctx), db); uerr != nil {
			m.logger.Warn("release migrate lock", slog.Any("err", uerr))
		}
	}()
	return m.withProvider(ctx, fn)
}

// withProvider runs fn with a goose provider that takes no lock of its own:
// the runs that change the schema hold the migrate lock around it (locked).
func (m *Migrator) withProvider(ctx context.Context, fn func(*goose.Provider) error) error {
	db := stdlib.OpenDBFromPool(m.pool)
	defer db.Close()
	p, err := newProvider(db, m.logger)
	if err != nil {
		return err
	}
	return fn(p)
}

func newProvider(db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS,
		goose.WithTableName(versionTable),
		goose.WithSlog(logger),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return nil, fmt.Errorf("goose provider: %w", err)
	}
	return p, nil
}

func gooseSteps(res []*goose.MigrationResult) []Step {
	var out []Step
	for _, r := range res {
		if r == nil || r.Source == nil {
			continue
		}
		out = append(out, Step{
			Component: "herald",
			Version:   r.Source.Version,
			Name:      baseName(r.Source.Path),
			Direction: r.Direction,
			Duration:  r.Duration,
		})
	}
	return out
}

func riverSteps(res *rivermigrate.MigrateResult) []Step {
	if res == nil {
		return nil
	}
	var out []Step
	for _, v := range res.Versions {
		out = append(out, Step{
			Component: "river",
			Version:   int64(v.Version),
			Name:      v.Name,
			Direction: string(res.Direction),
			Duration:  v.Duration,
		})
	}
	return out
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
