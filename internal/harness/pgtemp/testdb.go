package pgtemp

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/schema"
)

// EnvURL names the variable holding a server for test databases. When it is
// set, tests create their databases there and start no cluster; README's test
// command sets it once for the whole run.
const EnvURL = "TEST_DATABASE_URL"

var shared struct {
	once     sync.Once
	admin    string // URL of a maintenance database on the server
	cluster  *Cluster
	template string
	err      error
}

// TestMain runs a package's tests and stops the cluster they started, if any.
// Use it as `func TestMain(m *testing.M) { pgtemp.TestMain(m) }`.
func TestMain(m *testing.M) {
	code := m.Run()
	_ = StopServer()
	os.Exit(code)
}

// StopServer stops the cluster Server started in this process, if any, and
// removes it. Server starts no other after it: it returns ErrServerStopped.
func StopServer() error {
	shared.once.Do(func() { shared.err = ErrServerStopped })
	if shared.cluster == nil {
		return nil
	}
	err := shared.cluster.Stop()
	shared.cluster, shared.err = nil, ErrServerStopped
	return err
}

// ErrServerStopped is returned by Server (and what calls it) once
// StopServer has run.
var ErrServerStopped = errors.New("pgtemp: the test server was stopped")

// Server returns the admin URL of the server test databases are made on,
// starting a cluster the first time it is called if TEST_DATABASE_URL is
// unset, and building the migrated template database once.
func Server(ctx context.Context) (adminURL, template string, err error) {
	shared.once.Do(func() {
		shared.admin = os.Getenv(EnvURL)
		if shared.admin == "" {
			shared.cluster, shared.err = Start(ctx, nil)
			if shared.err != nil {
				return
			}
			shared.admin = shared.cluster.URL("postgres")
		}
		shared.template, shared.err = templateOn(ctx, shared.admin)
	})
	return shared.admin, shared.template, shared.err
}

// DatabaseOpts says where CreateDatabase makes a database, and what it
// holds.
type DatabaseOpts struct {
	// ServerURL is a database on the server to create it on, as a login
	// allowed to CREATE DATABASE. Defaults to Server's: TEST_DATABASE_URL's
	// server, else a throwaway cluster.
	ServerURL string
	// Label goes into the database's name (a test's name, say), between
	// "t_" and a random suffix.
	Label string
	// Empty makes a database with nothing in it, not a clone of the
	// migrated template.
	Empty bool
}

// CreateDatabase creates a database of its own, cloned from the migrated
// template (building the template on the server the first time), and
// returns its URL and a function that drops it. It needs no testing.TB:
// NewDatabase is it for a test, package heraldtest for a producer's.
func CreateDatabase(ctx context.Context, opts *DatabaseOpts) (dbURL string, drop func(context.Context) error, err error) {
	if opts == nil {
		opts = &DatabaseOpts{}
	}
	admin, tpl := opts.ServerURL, ""
	switch {
	case admin == "":
		admin, tpl, err = Server(ctx)
	case !opts.Empty:
		tpl, err = templateOn(ctx, admin)
	}
	if err != nil {
		return "", nil, fmt.Errorf("test database server: %w", err)
	}
	name := dbName(cmp.Or(opts.Label, "db"))
	if opts.Empty {
		err = execSQL(ctx, admin, `CREATE DATABASE "`+name+`"`)
	} else {
		err = createFrom(ctx, admin, name, tpl)
	}
	if err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	drop = func(ctx context.Context) error {
		return execSQL(ctx, admin, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
	}
	return WithDatabase(admin, name), drop, nil
}

// NewDatabase creates a database for one test, cloned from the migrated
// template, and returns its URL. The database is dropped when the test
// passes; when it fails the database is kept and its URL logged.
func NewDatabase(t testing.TB) string {
	t.Helper()
	dbURL, drop, err := CreateDatabase(context.Background(), &DatabaseOpts{Label: t.Name()})
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test failed; its database is kept: %s", connstr.Redact(dbURL))
			return
		}
		_ = drop(context.Background())
	})
	return dbURL
}

// NewPool returns a pool on a fresh test database (see NewDatabase), closed
// when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dbURL := NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(pool.Close) // registered after the drop: runs before it
	return pool
}

// WithDatabase returns rawURL with its database replaced by name.
func WithDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		// A keyword/value connection string.
		return rawURL + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

// templates holds the migrated template of each server templateOn built or
// found, by admin URL.
var templates struct {
	sync.Mutex
	byServer map[string]string
}

// templateOn returns the migrated template on admin's server, building it
// the first time.
func templateOn(ctx context.Context, admin string) (string, error) {
	templates.Lock()
	defer templates.Unlock()
	if tpl, ok := templates.byServer[admin]; ok {
		return tpl, nil
	}
	tpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		return "", err
	}
	if templates.byServer == nil {
		templates.byServer = map[string]string{}
	}
	templates.byServer[admin] = tpl
	return tpl, nil
}

func ensureTemplate(ctx context.Context, admin string) (string, error) {
	name := "herald_tpl_" + templateHash()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", connstr.Redact(admin), err)
	}
	defer conn.Close(ctx)
	// Many test processes may share one server: one builds, the others wait.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('herald.pgtemp.template'))"); err != nil {
		return "", fmt.Errorf("template lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext('herald.pgtemp.template'))")
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS "`+building+`" WITH (FORCE)`); err != nil {
		return "", fmt.Errorf("drop half-built template: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE "`+building+`"`); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	pool, err := pgxpool.New(ctx, WithDatabase(admin, building))
	if err != nil {
		return "", fmt.Errorf("connect to template: %w", err)
	}
	_, err = schema.NewMigrator(pool, nil).Up(ctx)
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	// Publish the finished template under its final name in one step, so a
	// process that crashed mid-build never leaves a half-migrated template.
	if _, err := conn.Exec(ctx, `ALTER DATABASE "`+building+`" RENAME TO "`+name+`"`); err != nil {
		return "", fmt.Errorf("publish template: %w", err)
	}
	return name, nil
}

// templateHash changes whenever a migration or River's version does, so a
// long-lived TEST_DATABASE_URL server never hands out a stale template.
func templateHash() string {
	h := sha256.New()
	_ = fs.WalkDir(schema.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(schema.FS, path)
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "github.com/riverqueue/river") {
				h.Write([]byte(d.Path + "@" + d.Version))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// createFrom clones tpl with the default WAL_LOG strategy: for a template as
// small as the migrated schema it is faster than STRATEGY FILE_COPY, whose
// checkpoints dominate (BenchmarkNewDatabase measures a clone).
func createFrom(ctx context.Context, admin, name, tpl string) error {
	var err error
	for attempt := range 20 {
		err = execSQL(ctx, admin, `CREATE DATABASE "`+name+`" TEMPLATE "`+tpl+`"`)
		var pgErr *pgconn.PgError
		// 55006: the template is briefly in use (another clone reading it).
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" {
			return err
		}
		time.Sleep(time.Duration(10*(attempt+1)) * time.Millisecond)
	}
	return err
}

func execSQL(ctx context.Context, dbURL, sql string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName makes a valid, unique database name from a test name.
func dbName(test string) string {
	s := unsafeChars.ReplaceAllString(strings.ToLower(test), "_")
	if len(s) > 40 {
		s = s[len(s)-40:]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t_" + strings.Trim(s, "_") + "_" + hex.EncodeToString(b[:])
}
