// Package render writes the answers of herald's commands as a person reads
// them at a terminal: aligned tables and "name: value" records, times in
// UTC, "-" for nothing, long text clipped to one line. With --json the
// commands print the same answers as indented JSON instead (JSON).
//
// The answers are the internal packages' own types (operator's dead letters,
// malformed intents, status and stats; schema's migration steps), so a
// command only chooses which of the two forms to write.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// JSON writes v as indented JSON: the --json output of every command.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns the tabwriter every human-readable table uses.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// table writes a table under header (its columns separated by tabs) with a
// row per item, and "(none)" under the header when there are no items and
// none is set.
func table[T any](w io.Writer, header string, items []T, none bool, row func(T) string) error {
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, row(it))
	}
	if none && len(items) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	return tw.Flush()
}

// list writes one page of a list command: "no <what>" when it is empty,
// else a table (see table) and, when next is set, the command that prints
// the next page.
func list[T any](w io.Writer, what, command, next, header string, items []T, row func(T) string) error {
	if len(items) == 0 {
		fmt.Fprintln(w, "no "+what)
		return nil
	}
	if err := table(w, header, items, false, row); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(w, "\nmore: %s --after %s (same filters)\n", command, next)
	}
	return nil
}

// fields writes one record as aligned "name: value" lines.
func fields(w io.Writer, kvs [][2]string) error {
	tw := newTable(w)
	for _, kv := range kvs {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	return tw.Flush()
}

// stamp formats a time for a table, in UTC; "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// stampPtr is stamp for an optional time; "-" for nil.
func stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

// clip shortens s to n runes for a table cell, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// dash shows an empty cell as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// seconds shows a figure in seconds as a duration, to the millisecond.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

// NewTable returns the aligned-columns writer every command's table uses;
// flush it when done.
func NewTable(w io.Writer) *tabwriter.Writer { return newTable(w) }

// Dash returns s, or "-" for an empty cell.
func Dash(s string) string { return dash(s) }

// Stamp formats t as every command's time cells are: UTC, to the second.
func Stamp(t time.Time) string { return stamp(t) }
