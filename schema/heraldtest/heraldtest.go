// Package heraldtest gives a producer's own tests a PostgreSQL database with
// herald's schema migrated, as River's test helpers do for River: submit
// through the real client in a test, then look at what herald stored.
//
// The database is made on the server TEST_DATABASE_URL names (or
// Opts.ServerURL), or else on a throwaway cluster the package starts from
// the local PostgreSQL binaries (initdb and postgres, from PATH, pg_config
// or HERALD_PG_BINDIR) once per test process, in a temporary directory,
// without fsync. Each database is a clone of a template migrated once per
// server with schema's Migrator, so a new one takes milliseconds.
//
// In a test, NewTestDatabase; elsewhere (an example, a TestMain, a tool),
// NewDatabase and Close. StopServer stops the throwaway cluster; a
// TestMain calls it after m.Run, and the cluster dies with the process if
// nothing does.
package heraldtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// EnvURL names the variable holding a server for test databases: a
// connection URL of any database there, as a login allowed to CREATE
// DATABASE. When it is set no cluster starts.
const EnvURL = pgtemp.EnvURL

// Opts says where a database is made and what it holds. The zero value
// (or nil) is a migrated database on TEST_DATABASE_URL's server or the
// throwaway cluster.
type Opts struct {
	// ServerURL is the server to make the database on, as EnvURL's value
	// would name it. Defaults to TEST_DATABASE_URL, else the throwaway
	// cluster.
	ServerURL string
	// Name goes into the database's name, before a random suffix: a test's
	// name, say, to find a kept database by. NewTestDatabase defaults it to
	// the test's name.
	Name string
	// Empty makes a database with nothing migrated: for a test of code that
	// runs schema's Migrator itself.
	Empty bool
}

// Database is a database of its own for one test or example.
type Database struct {
	// URL connects to the database, as the login that created it.
	URL string
	// Pool is a pool on URL, closed by Close.
	Pool *pgxpool.Pool

	drop      func(context.Context) error
	closeOnce sync.Once
	closeErr  error
}

// NewDatabase creates a database as opts says (nil for the defaults) and
// connects to it. It returns pgtemp's error naming the missing binaries
// when there is no server to use and none can be started.
func NewDatabase(ctx context.Context, opts *Opts) (*Database, error) {
	if opts == nil {
		opts = &Opts{}
	}
	dbURL, drop, err := pgtemp.CreateDatabase(ctx, &pgtemp.DatabaseOpts{
		ServerURL: opts.ServerURL, Label: opts.Name, Empty: opts.Empty,
	})
	if err != nil {
		return nil, fmt.Errorf("heraldtest: %w", err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		_ = drop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("heraldtest: connect to %s: %w", connstr.Redact(dbURL), err)
	}
	return &Database{URL: dbURL, Pool: pool, drop: drop}, nil
}

// Close closes the pool and drops the database, cutting any other
// connection to it. Calling it again does nothing and returns the first
// call's error.
func (d *Database) Close() error {
	d.closeOnce.Do(func() {
		d.Pool.Close()
		if err := d.drop(context.Background()); err != nil {
			d.closeErr = fmt.Errorf("heraldtest: drop test database: %w", err)
		}
	})
	return d.closeErr
}

// NewTestDatabase is NewDatabase for test t: it fails t on an error, names
// the database after the test unless opts.Name is set, and closes it when
// the test ends. A failed test's database is kept, its URL logged (without
// a password), for a look with psql; its pool is closed all the same.
func NewTestDatabase(t testing.TB, opts *Opts) *Database {
	t.Helper()
	o := Opts{Name: t.Name()}
	if opts != nil {
		o = *opts
		if o.Name == "" {
			o.Name = t.Name()
		}
	}
	db, err := NewDatabase(context.Background(), &o)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			db.Pool.Close()
			t.Logf("test failed; its database is kept: %s", connstr.Redact(db.URL))
			return
		}
		if err := db.Close(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return db
}

// StopServer stops the throwaway cluster this process started, if any,
// and removes its directory; a server named by TEST_DATABASE_URL or
// Opts.ServerURL is left alone. Call it last, as a TestMain does after
// m.Run: no database can be made on the cluster after it.
func StopServer() error { return pgtemp.StopServer() }
