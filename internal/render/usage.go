package render

import (
	"flag"
	"fmt"
	"io"
)

// Usage writes herald's usage, `herald help`: each command, by name, with
// its summary (summaries maps one to the other).
func Usage(w io.Writer, summaries map[string]string) {
	fmt.Fprintln(w, "herald: a durable notification-intent engine on PostgreSQL")
	fmt.Fprintln(w, "\nUsage: herald COMMAND [flags]\n\nCommands:")
	for _, n := range sortedNames(summaries) {
		fmt.Fprintf(w, "  %-14s %s\n", n, summaries[n])
	}
	fmt.Fprintln(w, "\nRun 'herald COMMAND -h' for a command's flags.")
}

// SubcommandUsage writes the usage of command name, which has subcommands:
// what it does (summary) and each subcommand's one line (subs, in order:
// name and summary).
func SubcommandUsage(w io.Writer, name, summary string, subs [][2]string) {
	fmt.Fprintf(w, "Usage: herald %s SUBCOMMAND [flags] [arguments]\n\n%s\n\nSubcommands:\n", name, summary)
	for _, s := range subs {
		fmt.Fprintf(w, "  %-10s %s\n", s[0], s[1])
	}
	fmt.Fprintf(w, "\nRun 'herald %s SUBCOMMAND -h' for a subcommand's flags and an example.\n", name)
}

// FlagUsage writes the usage of the command fs parses: its command line
// (with argsUsage, its positional arguments, when not empty), its summary
// when not empty, its flags with their defaults, and example, a command
// line, when not empty. fs's output is left discarded afterwards, as
// herald's flag sets keep it.
func FlagUsage(w io.Writer, fs *flag.FlagSet, summary, argsUsage, example string) {
	fmt.Fprintf(w, "Usage: %s [flags]", fs.Name())
	if argsUsage != "" {
		fmt.Fprintf(w, " %s", argsUsage)
	}
	fmt.Fprintln(w)
	if summary != "" {
		fmt.Fprintf(w, "\n%s\n", summary)
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if example != "" {
		fmt.Fprintf(w, "\nExample:\n  %s\n", example)
	}
}
