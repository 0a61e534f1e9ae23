package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
		"PostgreSQL `URL` (env HERALD_DATABASE_URL or DATABASE_URL; empty: libpq PG* variables)")
	fs.StringVar(&g.LogFormat, "log-format", cmp.Or(m.Getenv("HERALD_LOG_FORMAT"), "auto"),
		"log format: auto (colour on a terminal, JSON otherwise), text or json (env HERALD_LOG_FORMAT)")
	fs.StringVar(&g.LogLevel, "log-level", cmp.Or(m.Getenv("HERALD_LOG_LEVEL"), "info"),
		"log level: debug, info, warn or error (env HERALD_LOG_LEVEL)")
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
// default is $USER, else $LOGNAME.
func (a *auditFlags) bind(fs *flag.FlagSet, m *Main, reasonNote string) {
	fs.StringVar(&a.reason, "reason", "", "why: recorded in herald.audit_log"+reasonNote)
	fs.StringVar(&a.actor, "actor", cmp.Or(m.Getenv("USER"), m.Getenv("LOGNAME")), "who: recorded in herald.audit_log (default $USER)")
}

// check refuses an empty -reason when needReason, then an empty -actor.
func (a *auditFlags) check(needReason bool) error {
	if needReason && a.reason == "" {
		return usageError{errors.New("invalid -reason: required, it goes into herald.audit_log")}
	}
	if a.actor == "" {
		return usageError{errors.New("invalid -actor: empty, and $USER is unset")}
	}
	return nil
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
		return usageError{err}
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
	return nil
}

// printUsage prints fs's usage on Stdout: the command line, the command's
// summary and the flags with their defaults.
func (m *Main) printUsage(fs *flag.FlagSet, argsUsage string) {
	var summary string
	if c, ok := commands[strings.TrimPrefix(fs.Name(), "herald ")]; ok {
		summary = c.summary
	}
	render.FlagUsage(m.Stdout, fs, summary, argsUsage)
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

// pool connects to the configured database. An empty URL lets pgx read the
// libpq PG* variables.
func (m *Main) pool(ctx context.Context, g *globalFlags) (*pgxpool.Pool, error) {
	return m.connect(ctx, g, nil)
}

// connect is pool with tune, if not nil, applied to the parsed
// configuration before connecting (connstr.Connect). Close closes the pool.
func (m *Main) connect(ctx context.Context, g *globalFlags, tune func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	pool, err := connstr.Connect(ctx, g.DatabaseURL, tune)
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
		return render.JSON(m.Stdout, v)
	}
	return text(m.Stdout, v)
}
