package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/user"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lmittmann/tint"

	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/internal/render"
)

// globalFlags are accepted by every command that touches the database.
type globalFlags struct {
	DatabaseURL string
	LogFormat   string
	LogLevel    string
	JSON        bool
	// Read is where a replicaReads command may read instead.
	Read connstr.Read
}

// newFlagSet returns a FlagSet for a command with the global flags bound,
// their defaults taken from the environment (flags win over environment).
// It prints nothing itself: parse returns its errors, one line each, and
// prints the usage on Stdout for -h.
func (m *Main) newFlagSet(name string, g *globalFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("herald "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	g.DatabaseURL = cmp.Or(m.Getenv("HERALD_DATABASE_URL"), m.Getenv("DATABASE_URL"))
	fs.Var((*connstr.Flag)(&g.DatabaseURL), "database-url",
		"PostgreSQL `URL` (env HERALD_DATABASE_URL or DATABASE_URL; else libpq PG* variables, of which PGHOST, PGDATABASE or PGSERVICE must be set)")
	fs.StringVar(&g.LogFormat, "log-format", cmp.Or(m.Getenv("HERALD_LOG_FORMAT"), "auto"),
		"log format: auto (colour on a terminal, JSON otherwise), text or json (env HERALD_LOG_FORMAT)")
	fs.StringVar(&g.LogLevel, "log-level", cmp.Or(m.Getenv("HERALD_LOG_LEVEL"), "info"),
		"log level: debug, info, warn or error (env HERALD_LOG_LEVEL)")
	if m.current != nil && m.current.replicaReads {
		g.Read.Bind(fs, m.Getenv)
	}
	return fs
}

// newJSONFlagSet is newFlagSet for a command that prints an answer, with
// --json bound to g.JSON.
func (m *Main) newJSONFlagSet(name string, g *globalFlags) *flag.FlagSet {
	fs := m.newFlagSet(name, g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	return fs
}

// auditFlags are -reason and -actor, which a command that changes state
// records in herald.audit_log.
type auditFlags struct{ reason, actor string }

// bind registers -reason (its help ending in reasonNote) and -actor, whose
// default is $USER, else $LOGNAME, else the operating system's name for the
// user running the command.
func (a *auditFlags) bind(fs *flag.FlagSet, m *Main, reasonNote string) {
	fs.StringVar(&a.reason, "reason", "", "why: recorded in herald.audit_log"+reasonNote)
	def := cmp.Or(m.Getenv("USER"), m.Getenv("LOGNAME"))
	if def == "" && m.Username != nil {
		def = m.Username()
	}
	fs.StringVar(&a.actor, "actor", def, "who: recorded in herald.audit_log (default $USER, else $LOGNAME, else the OS user)")
}

// check refuses an empty -reason when needReason, then an empty -actor.
func (a *auditFlags) check(needReason bool) error {
	if needReason && a.reason == "" {
		return usageError{errors.New("invalid -reason: required, it goes into herald.audit_log")}
	}
	if a.actor == "" {
		return usageError{errors.New("invalid -actor: empty, and neither $USER nor $LOGNAME is set")}
	}
	return nil
}

// osUsername returns the operating system's name of the user running the
// process, "" when it cannot tell (a uid without a passwd entry, as in
// some containers).
func osUsername() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.Username
}

// parse parses args of a command that takes no positional argument and
// validates the global flags: a bad value is one usage error naming it.
// -h, -help or --help prints the command's usage on Stdout and returns
// flag.ErrHelp, which Run reports as success.
func (m *Main) parse(fs *flag.FlagSet, g *globalFlags, args []string) error {
	if err := m.parseWithArgs(fs, g, args, ""); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// parseWithArgs is parse for a command whose positional arguments the
// usage line shows as argsUsage.
func (m *Main) parseWithArgs(fs *flag.FlagSet, g *globalFlags, args []string, argsUsage string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.printUsage(fs, argsUsage)
			return err
		}
		// "herald: api-keys list: flag provided but not defined: -x"
		return usageError{fmt.Errorf("%s: %w", strings.TrimPrefix(fs.Name(), "herald "), err)}
	}
	switch g.LogFormat {
	case "auto", "text", "json":
	default:
		return usageError{fmt.Errorf("invalid -log-format %q: want auto, text or json", g.LogFormat)}
	}
	if _, err := parseLevel(g.LogLevel); err != nil {
		return usageError{err}
	}
	if g.DatabaseURL != "" {
		if _, err := pgxpool.ParseConfig(g.DatabaseURL); err != nil {
			return usageError{fmt.Errorf("invalid -database-url: %s", connstr.RedactErr(err, g.DatabaseURL))}
		}
	}
	if err := g.Read.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// printUsage prints fs's usage on Stdout: the command line, the command's
// summary, the flags with their defaults and an example.
func (m *Main) printUsage(fs *flag.FlagSet, argsUsage string) {
	c := lookup(strings.TrimPrefix(fs.Name(), "herald "))
	if c == nil {
		c = &command{}
	}
	render.FlagUsage(m.Stdout, fs, c.summary, argsUsage, c.example)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("invalid -log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// logger builds the command's logger: tint on a terminal, JSON otherwise.
func (m *Main) logger(g *globalFlags) *slog.Logger {
	level, _ := parseLevel(g.LogLevel)
	format := g.LogFormat
	if format == "auto" {
		format = "json"
		if m.IsTerminal {
			format = "text"
		}
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(m.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(tint.NewHandler(m.Stderr, &tint.Options{
		Level:      level,
		TimeFormat: time.TimeOnly,
		NoColor:    !m.IsTerminal,
	}))
}

// pool connects to the configured database (see connect) and checks its
// schema is the one the binary knows (checkSchema).
func (m *Main) pool(ctx context.Context, g *globalFlags) (*pgxpool.Pool, error) {
	pool, err := m.connect(ctx, g, nil)
	if err != nil {
		return nil, err
	}
	if err := m.checkSchema(ctx, g, pool); err != nil {
		return nil, err
	}
	return pool, nil
}

// connect connects to the database g names, with tune, if not nil, applied
// to the parsed configuration before connecting (connstr.Connect). An
// empty URL lets pgx read the libpq PG* variables, but only when some name
// a server or database (hasTarget): without any, the command is refused
// rather than run against whatever answers on the default socket. Close
// closes the pool.
func (m *Main) connect(ctx context.Context, g *globalFlags, tune func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	if !m.hasTarget(g) {
		return nil, errNoTarget
	}
	pool, err := m.connectFor(ctx, g, tune)
	if err != nil {
		return nil, err
	}
	m.onClose(pool.Close)
	return pool, nil
}

// output prints v on Stdout: as JSON for --json (asJSON), else as text
// writes it (one of package render's writers).
func output[T any](m *Main, asJSON bool, v T, text func(io.Writer, T) error) error {
	if asJSON {
		return render.JSON(m.Stdout, m.withReadSource(v))
	}
	return text(m.Stdout, v)
}
