package main

import (
	"io"

	"github.com/heraldhq/herald/internal/render"
)

// output prints v on Stdout: as JSON for --json (asJSON), else as text
// writes it (one of package render's writers).
func output[T any](m *Main, asJSON bool, v T, text func(io.Writer, T) error) error {
	if asJSON {
		return writeJSON(m.Stdout, v)
	}
	return text(m.Stdout, v)
}

// writeJSON prints v as indented JSON: the --json output of every command.
func writeJSON(w io.Writer, v any) error { return render.JSON(w, v) }
