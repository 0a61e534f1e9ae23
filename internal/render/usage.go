package render

import (
	"flag"
	"fmt"
	"io"
	"strings"
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
// what it does (summary) and the subcommands' names.
func SubcommandUsage(w io.Writer, name, summary string, subcommands []string) {
	fmt.Fprintf(w, "Usage: herald %s SUBCOMMAND [flags] [arguments]\n\n%s\n\nSubcommands: %s\n\nRun 'herald %s SUBCOMMAND -h' for a subcommand's flags.\n",
		name, summary, strings.Join(subcommands, ", "), name)
}

// FlagUsage writes the usage of the command fs parses: its command line
// (with argsUsage, its positional arguments, when not empty), its summary
// when not empty, and its flags with their defaults. fs's output is left
// discarded afterwards, as herald's flag sets keep it.
func FlagUsage(w io.Writer, fs *flag.FlagSet, summary, argsUsage string) {
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
}
