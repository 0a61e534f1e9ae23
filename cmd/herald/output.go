package main

import (
	"io"

	"github.com/heraldhq/herald/internal/render"
)

// output prints v on Stdout: as JSON for --json (asJSON), else as text
// writes it (one of package render's writers).
func output[T any](m *Main, asJSON bool, v T, text func(io.Writer, T) error) error {
	if asJSON {
		return render.JSON(m.Stdout, v)
	}
	return text(m.Stdout, v)
}
