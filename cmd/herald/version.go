package main

import (
	"context"

	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/schema"
)

func init() {
	register(&command{
		name:     "version",
		summary:  "print herald's version, commit, Go version and schema version (and the database's, given one)",
		example:  "herald version --json",
		readOnly: true,
		run:      runVersion,
	})
}

func runVersion(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("version", &g)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	v := render.BuildVersion()
	// Without a database the binary's own facts are the whole answer.
	if m.hasTarget(&g) {
		pool, err := m.connect(ctx, &g, nil)
		if err != nil {
			return err
		}
		have, err := schema.AppliedVersion(ctx, pool)
		if err != nil {
			return err
		}
		v.DatabaseSchemaVersion = &have
	}
	return output(m, g.JSON, v, render.Version)
}
