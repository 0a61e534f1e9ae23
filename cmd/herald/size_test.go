package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxLines bounds cmd/herald's non-test Go code: cmd/ parses
// flags and wires, as in WTF Dial; what commands do lives in
// internal/operator, tables and text in internal/render, connecting in
// internal/connstr, schema versions in schema, the bench's modes in
// internal/harness/bench, the demo in internal/harness/demo. The bound leaves room for the
// wiring each command and subcommand carries itself: its registration with
// a summary and an example, its own flag set, and a run function that
// parses it and calls its owner.
const maxLines = 2550

func TestCLI_StaysAWiringLayer(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		total += bytes.Count(b, []byte("\n"))
	}
	require.Positive(t, total)
	require.LessOrEqual(t, total, maxLines,
		"cmd/herald has %d lines of non-test Go, more than %d: move what a command does into the internal package that owns it", total, maxLines)
}
