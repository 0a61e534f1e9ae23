package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// newTable returns the tabwriter every human-readable table uses.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// printFields prints one record as aligned "name: value" lines.
func printFields(w io.Writer, fields [][2]string) error {
	tw := newTable(w)
	for _, kv := range fields {
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
