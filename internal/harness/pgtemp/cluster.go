// Package pgtemp runs throwaway PostgreSQL clusters from the local server
// binaries, for tests (a template database migrated once, a fresh database
// per test cloned from it) and for the demo.
//
// A cluster lives in a temporary directory, listens on a free loopback port
// and on a unix socket inside that directory, and runs without fsync unless
// Config.Durable is set. When the process runs as root the server runs as the
// unprivileged "postgres" user, since initdb refuses to run as root.
package pgtemp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries is returned by Start when initdb and postgres cannot be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found: " +
	"install them (Debian/Ubuntu: apt-get install postgresql; Fedora: dnf install postgresql-server; " +
	"macOS: brew install postgresql@16), put their directory on PATH or in HERALD_PG_BINDIR, " +
	"or set TEST_DATABASE_URL / DATABASE_URL to a server you already run")

// Config configures a cluster. The zero value is a fast, non-durable cluster.
type Config struct {
	// Durable keeps fsync, full_page_writes and synchronous_commit on, as in
	// production; benchmarks use it. Tests leave it off.
	Durable bool
	// Settings are extra postgresql.conf settings, passed as -c name=value.
	Settings map[string]string
	// Dir is where the cluster directory is created; defaults to os.TempDir().
	Dir string
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	cfg     Config
	bindir  string
	dir     string // the cluster's own directory: data/, the socket, the log
	port    int
	cred    *syscall.Credential
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
}

// Start initialises a cluster in a new temporary directory and starts it. It
// returns ErrNoBinaries when the server binaries are missing.
func Start(ctx context.Context, cfg *Config) (*Cluster, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	bindir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: *cfg, bindir: bindir}
	if os.Geteuid() == 0 {
		c.cred, err = unprivileged()
		if err != nil {
			return nil, err
		}
	}
	removeStale(cmp.Or(cfg.Dir, os.TempDir()))
	c.dir, err = os.MkdirTemp(cfg.Dir, "herald-pgtemp-")
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	if err := c.chown(c.dir); err != nil {
		c.remove()
		return nil, err
	}
	c.logPath = filepath.Join(c.dir, "postgres.log")
	if err := c.initdb(ctx); err != nil {
		c.remove()
		return nil, err
	}
	for range 5 { // a free port can be taken between choosing and binding
		c.port, err = freePort()
		if err != nil {
			break
		}
		if err = c.start(ctx); err == nil {
			return c, nil
		}
	}
	c.remove()
	return nil, err
}

// Port returns the loopback TCP port the server listens on.
func (c *Cluster) Port() int { return c.port }

// Dir returns the cluster's directory (data directory, socket, log).
func (c *Cluster) Dir() string { return c.dir }

// URL returns a connection URL for database dbname over loopback TCP.
func (c *Cluster) URL(dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + dbname,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Stop shuts the server down (fast shutdown) and removes its directory.
func (c *Cluster) Stop() error {
	err := c.shutdown(syscall.SIGINT, 30*time.Second)
	c.remove()
	return err
}

// Restart stops the server with a fast shutdown and starts it again on the
// same port and data directory: connections are cut, nothing committed is
// lost.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.Halt(); err != nil {
		return err
	}
	return c.start(ctx)
}

// Halt stops the server with a fast shutdown (SIGINT: connections cut, a
// shutdown checkpoint, nothing committed lost) and keeps its data directory.
// Use StartAgain after it.
func (c *Cluster) Halt() error { return c.shutdown(syscall.SIGINT, 30*time.Second) }

// Crash kills the server with an immediate shutdown (SIGQUIT): no checkpoint,
// recovery from WAL at the next start; commits made with synchronous_commit
// off in the last moments may be lost. Use StartAgain after it.
func (c *Cluster) Crash() error { return c.shutdown(syscall.SIGQUIT, 30*time.Second) }

// StartAgain starts a server stopped by Halt or Crash.
func (c *Cluster) StartAgain(ctx context.Context) error { return c.start(ctx) }

// Log returns the server's log so far, for a failing test's output.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(c.logPath)
	return string(b)
}

func (c *Cluster) initdb(ctx context.Context) error {
	args := []string{
		"-D", filepath.Join(c.dir, "data"),
		"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-instructions",
	}
	if !c.cfg.Durable {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.bindir, "initdb"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) settings() []string {
	s := map[string]string{
		"listen_addresses":           "127.0.0.1",
		"port":                       strconv.Itoa(c.port),
		"unix_socket_directories":    c.dir,
		"max_connections":            "400",
		"shared_buffers":             "128MB",
		"logging_collector":          "off",
		"log_min_messages":           "warning",
		"dynamic_shared_memory_type": "posix",
	}
	if !c.cfg.Durable {
		s["fsync"] = "off"
		s["full_page_writes"] = "off"
		s["synchronous_commit"] = "off"
	}
	for k, v := range c.cfg.Settings {
		s[k] = v
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"-D", filepath.Join(c.dir, "data")}
	for _, k := range keys {
		args = append(args, "-c", k+"="+s[k])
	}
	return args
}

// start runs the postmaster as a child process. The child is started from a
// goroutine locked to its OS thread that lives as long as the process, so
// Pdeathsig (sent when that thread dies) reaches the server when the test
// binary exits without calling Stop, and no server outlives its owner.
func (c *Cluster) start(ctx context.Context) error {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	cmd := exec.Command(filepath.Join(c.bindir, "postgres"), c.settings()...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: see the comment above
		if err := cmd.Start(); err != nil {
			started <- err
			close(exited)
			return
		}
		started <- nil
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd, c.exited = cmd, exited
	if err := c.waitReady(ctx, exited); err != nil {
		_ = c.shutdown(syscall.SIGQUIT, 10*time.Second)
		return fmt.Errorf("%w\n--- server log ---\n%s", err, tail(c.Log(), 2000))
	}
	return nil
}

func (c *Cluster) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			return errors.New("postgres exited during start-up")
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Cluster) shutdown(sig syscall.Signal, wait time.Duration) error {
	if c.cmd == nil || c.cmd.Process == nil {
		return nil
	}
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
		return nil
	case <-time.After(wait):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
		return fmt.Errorf("postgres did not stop within %s after %s; killed", wait, sig)
	}
}

func (c *Cluster) remove() {
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

func (c *Cluster) chown(path string) error {
	if c.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		return fmt.Errorf("give %s to the postgres user: %w", path, err)
	}
	return nil
}

// unprivileged returns the credentials of the "postgres" OS user, which runs
// the server when the caller is root.
func unprivileged() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb refuses root: "+
			"create an unprivileged user named postgres (useradd -r postgres) or run as another user: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// FindBinDir returns the directory holding initdb and postgres: from
// HERALD_PG_BINDIR, PATH, `pg_config --bindir`, or the usual install
// locations (newest version first). It returns ErrNoBinaries if none has both.
func FindBinDir() (string, error) {
	var candidates []string
	if d := os.Getenv("HERALD_PG_BINDIR"); d != "" {
		candidates = append(candidates, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(r))
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/opt/homebrew/opt/postgresql@*/bin", "/usr/local/opt/postgresql@*/bin"} {
		m, _ := filepath.Glob(pattern)
		sort.Slice(m, func(i, j int) bool { return versionOf(m[i]) > versionOf(m[j]) })
		candidates = append(candidates, m...)
	}
	candidates = append(candidates, "/usr/local/pgsql/bin")
	for _, d := range candidates {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(path string) int {
	for _, part := range strings.Split(path, string(filepath.Separator)) {
		part = strings.TrimPrefix(strings.TrimPrefix(part, "pgsql-"), "postgresql@")
		if n, err := strconv.Atoi(part); err == nil {
			return n
		}
	}
	return 0
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// removeStale deletes cluster directories left behind by processes that died
// without Stop (their postmaster was killed by Pdeathsig, the directory
// stayed). A directory whose postmaster.pid names a live process is kept.
func removeStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "herald-pgtemp-*"))
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err != nil || time.Since(st.ModTime()) < time.Minute {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			line, _, _ := strings.Cut(string(b), "\n")
			if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && syscall.Kill(pid, 0) == nil {
				continue
			}
		}
		_ = os.RemoveAll(d)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
