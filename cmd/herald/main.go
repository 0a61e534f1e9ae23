// Command herald is herald's one binary: the engine (serve), its schema
// (migrate), the demo, the benchmark, and the operator commands.
//
// Configuration is layered: flags, then HERALD_* and DATABASE_URL
// environment variables, then libpq's PG* variables (read by pgx when no URL
// is given), then defaults. A bad value stops start-up with one line naming
// it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := NewMain()
	err := m.Run(ctx, os.Args[1:])
	m.Close()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(m.Stderr, "herald:", err)
		}
		os.Exit(exitCode(err))
	}
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

	closers []func()
}

// NewMain returns a Main wired to the process's streams and environment.
func NewMain() *Main {
	return &Main{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Getenv:     os.Getenv,
		IsTerminal: isTerminal(os.Stderr),
	}
}

// command is one `herald NAME` subcommand. Each lives in its own file and
// registers itself in init, so adding a command touches no shared file.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, m *Main, args []string) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("herald: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// Run runs the command named by args[0] with the rest of args.
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		m.usage(m.Stdout)
		if len(args) == 0 {
			return usageError{errors.New("no command given")}
		}
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		m.usage(m.Stderr)
		return usageError{fmt.Errorf("unknown command %q", args[0])}
	}
	return c.run(ctx, m, args[1:])
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
	fmt.Fprintln(w, "herald: a durable notification-intent engine on PostgreSQL")
	fmt.Fprintln(w, "\nUsage: herald COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'herald COMMAND -h' for a command's flags.")
}

// usageError marks a mistake in the command line: exit status 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func exitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// subcommand splits "migrate up ..." style arguments.
func subcommand(args []string, valid ...string) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", nil, usageError{fmt.Errorf("missing subcommand: one of %s", strings.Join(valid, ", "))}
	}
	for _, v := range valid {
		if args[0] == v {
			return v, args[1:], nil
		}
	}
	return "", nil, usageError{fmt.Errorf("unknown subcommand %q: one of %s", args[0], strings.Join(valid, ", "))}
}
