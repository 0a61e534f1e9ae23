package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/schema"
)

func init() {
	register(&command{
		name:    "migrate",
		summary: "apply (up), roll back (down) or show (status) the schema migrations",
		run:     runMigrate,
	})
}

func runMigrate(ctx context.Context, m *Main, args []string) error {
	sub, args, err := m.subcommand("migrate", args, "up", "down", "status")
	if err != nil {
		return err
	}
	var g globalFlags
	fs := m.newJSONFlagSet("migrate "+sub, &g)
	to := fs.Int64("to", -1, "down: roll back to this version (0: everything, River's tables too); default: the last migration only")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	toSet := false
	fs.Visit(func(f *flag.Flag) { toSet = toSet || f.Name == "to" })
	switch {
	case toSet && sub != "down":
		return usageError{errors.New("invalid -to: only migrate down takes it")}
	case toSet && *to < 0:
		return usageError{fmt.Errorf("invalid -to %d: want a version, 0 or more", *to)}
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	mig := schema.NewMigrator(pool, &schema.MigratorConfig{Logger: m.logger(&g)})

	if sub == "status" {
		sts, err := mig.Status(ctx)
		if err != nil {
			return err
		}
		return output(m, g.JSON, sts, render.MigrationStatus)
	}

	var steps []schema.Step
	switch {
	case sub == "up":
		steps, err = mig.Up(ctx)
	case *to >= 0:
		steps, err = mig.Down(ctx, *to)
	default:
		steps, err = mig.DownOne(ctx)
	}
	// What a failed run did is printed too.
	run := &render.MigrationRun{Steps: steps, Up: sub == "up", Failed: err != nil}
	return cmp.Or(err, output(m, g.JSON, run, render.MigrationSteps))
}
