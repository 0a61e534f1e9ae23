// Command herald is herald's one binary: the engine (serve), its schema
// (migrate), the demo, the benchmark, and the operator commands.
//
// Configuration is layered: flags, then HERALD_* and DATABASE_URL
// environment variables, then libpq's PG* variables (read by pgx when no URL
// is given), then defaults. A bad value stops start-up with one line naming
// it. A command never guesses its database: without a URL or a PG* variable
// naming the server or database it stops with a usage error, and on a
// database whose schema is not the one it knows it stops with one line
// saying so (see checkSchema).
//
// Every command follows one convention, as Go's flag.ExitOnError and GNU
// tools do: -h, -help or --help prints the usage on stdout and exits 0; a
// mistake in the command line prints one line on stderr and exits 2; a
// failure prints one line on stderr and exits 1. A connection string is
// never printed with its password.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/heraldhq/herald/internal/guide"
	"github.com/heraldhq/herald/internal/render"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := NewMain().Execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Main is the program: its streams and environment are fields so end-to-end
// tests run commands in-process exactly as the binary does.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// IsTerminal reports whether Stdout/Stderr is a terminal (colour logs,
	// human tables); tests set it false.
	IsTerminal bool

	// Username returns the operating system's name of the user running
	// the command: the last default of -actor, after $USER and $LOGNAME.
	// Nil: none.
	Username func() string

	// watched, when set, is called after each answer --watch prints: how
	// tests stop a watch after the answers they want.
	watched func()

	closers []func()
	// current is the command (or subcommand) running.
	current *command
}

// NewMain returns a Main wired to the process's streams and environment.
func NewMain() *Main {
	return &Main{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Getenv:     os.Getenv,
		IsTerminal: isTerminal(os.Stderr),
		Username:   osUsername,
	}
}

// command is one `herald NAME` command, or one subcommand of one (`herald
// NAME SUB`). Each command lives in its own file and registers itself in
// init, so adding a command touches no shared file.
type command struct {
	name string
	// summary is the one line `herald help` and the usage show.
	summary string
	// example is a command line the usage shows, for a command without
	// subcommands.
	example string
	// readOnly says the command changes nothing: it runs, with a warning,
	// on a database whose schema is newer than the binary knows, where a
	// command that writes refuses (see checkSchema).
	readOnly bool
	// run runs the command with the arguments after its name; nil for a
	// command with subs, which runs the one named first.
	run  func(ctx context.Context, m *Main, args []string) error
	subs []*command
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("herald: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// lookup returns the command or subcommand named by its full name
// ("status", "dead-letters list"), or nil.
func lookup(name string) *command {
	top, sub, hasSub := strings.Cut(name, " ")
	c := commands[top]
	if c == nil || !hasSub {
		return c
	}
	for _, s := range c.subs {
		if s.name == sub {
			return s
		}
	}
	return nil
}

// Execute runs args as the binary does: Run, then Close, then the outcome
// reported. It returns the exit status: 0 for success (help included), 2
// for a usage error and 1 for any other error, which it prints on Stderr
// as one line, "herald: " and the error.
func (m *Main) Execute(ctx context.Context, args []string) int {
	err := m.Run(ctx, args)
	m.Close()
	if err == nil {
		return 0
	}
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	fmt.Fprintln(m.Stderr, "herald: "+msg)
	return exitCode(err)
}

// Run runs the command named by args[0] with the rest of args. A request
// for help (-h, -help, --help or "help [COMMAND]") prints the usage on
// Stdout and returns nil; "help TOPIC" prints that guide (package guide).
func (m *Main) Run(ctx context.Context, args []string) error {
	err := m.run(ctx, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func (m *Main) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("no command given: run 'herald help' for the list")}
	}
	if isHelp(args[0]) || args[0] == "help" {
		if args[0] == "help" && len(args) > 1 {
			if _, isCmd := commands[args[1]]; len(args) == 2 && (!isCmd || slices.Contains(guide.Names(), args[1])) {
				if err := guide.Write(m.Stdout, args[1]); err != nil { // "herald help producers": a guide
					return usageError{err}
				}
				return nil
			}
			// "herald help dead-letters replay" is "herald dead-letters replay -h".
			return m.run(ctx, append(slices.Clone(args[1:]), "-h"))
		}
		m.usage(m.Stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		return usageError{fmt.Errorf("unknown command %q: run 'herald help' for the list", args[0])}
	}
	if c.subs == nil {
		m.current = c
		return c.run(ctx, m, args[1:])
	}
	sub, rest, err := m.subcommand(c, args[1:])
	if err != nil {
		return err
	}
	m.current = sub
	return sub.run(ctx, m, rest)
}

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// Close releases what commands opened (pools, servers).
func (m *Main) Close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	m.closers = nil
}

func (m *Main) onClose(f func()) { m.closers = append(m.closers, f) }

func (m *Main) usage(w io.Writer) {
	summaries := make(map[string]string, len(commands))
	for n, c := range commands {
		summaries[n] = c.summary
	}
	render.Usage(w, summaries)
	guide.WriteTopics(w)
}

// usageError marks a mistake in the command line: exit status 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitCode returns the exit status for err: 0 for nil or a request for
// help, 2 for a usage error, 1 otherwise.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// subcommand splits "migrate up ..." style arguments of c. For -h (or
// "help") in place of a subcommand it prints c's usage on Stdout and
// returns flag.ErrHelp.
func (m *Main) subcommand(c *command, args []string) (*command, []string, error) {
	names, subs := make([]string, len(c.subs)), make([][2]string, len(c.subs))
	for i, s := range c.subs {
		names[i], subs[i] = s.name, [2]string{s.name, s.summary}
	}
	one := strings.Join(names, ", ")
	switch {
	case len(args) > 0 && (isHelp(args[0]) || args[0] == "help"):
		render.SubcommandUsage(m.Stdout, c.name, c.summary, subs)
		return nil, nil, flag.ErrHelp
	case len(args) == 0 || strings.HasPrefix(args[0], "-"):
		return nil, nil, usageError{fmt.Errorf("%s: missing subcommand: one of %s", c.name, one)}
	case !slices.Contains(names, args[0]):
		return nil, nil, usageError{fmt.Errorf("%s: unknown subcommand %q: one of %s", c.name, args[0], one)}
	}
	return c.subs[slices.Index(names, args[0])], args[1:], nil
}
