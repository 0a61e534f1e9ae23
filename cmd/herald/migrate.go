package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"

	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/schema"
)

func init() {
	register(&command{
		name:    "migrate",
		summary: "apply (up), roll back (down) or show (status) the schema migrations",
		subs: []*command{
			{name: "up", summary: "apply every pending migration, herald's then River's",
				example: "herald migrate up --database-url postgres://migrator@db/herald", run: migrateUp},
			{name: "down", summary: "roll back the last migration, or down to a version with -to",
				example: "herald migrate down -to 30", run: migrateDown},
			{name: "status", summary: "show each component's applied and pending migrations", readOnly: true,
				example: "herald migrate status --json", run: migrateStatus},
		},
	})
}

// migrator connects for a migrate subcommand, without the schema check the
// other commands make (migrate is what fixes what it would find).
func (m *Main) migrator(ctx context.Context, g *globalFlags) (*schema.Migrator, error) {
	pool, err := m.connect(ctx, g, nil)
	if err != nil {
		return nil, err
	}
	return schema.NewMigrator(pool, &schema.MigratorConfig{Logger: m.logger(g)}), nil
}

func migrateUp(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("migrate up", &g)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	mig, err := m.migrator(ctx, &g)
	if err != nil {
		return err
	}
	steps, err := mig.Up(ctx)
	return m.migrationRun(&g, steps, true, err)
}

func migrateDown(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("migrate down", &g)
	to := fs.Int64("to", -1, "roll back to this version (0: everything, River's tables too); default: the last migration only")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	toSet := false
	fs.Visit(func(f *flag.Flag) { toSet = toSet || f.Name == "to" })
	if toSet && *to < 0 {
		return usageError{fmt.Errorf("invalid -to %d: want a version, 0 or more", *to)}
	}
	mig, err := m.migrator(ctx, &g)
	if err != nil {
		return err
	}
	var steps []schema.Step
	if toSet {
		steps, err = mig.Down(ctx, *to)
	} else {
		steps, err = mig.DownOne(ctx)
	}
	return m.migrationRun(&g, steps, false, err)
}

// migrationRun prints what a run did, a failed one's too, and returns err.
func (m *Main) migrationRun(g *globalFlags, steps []schema.Step, up bool, err error) error {
	run := &render.MigrationRun{Steps: steps, Up: up, Failed: err != nil}
	return cmp.Or(err, output(m, g.JSON, run, render.MigrationSteps))
}

func migrateStatus(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("migrate status", &g)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	mig, err := m.migrator(ctx, &g)
	if err != nil {
		return err
	}
	sts, err := mig.Status(ctx)
	if err != nil {
		return err
	}
	return output(m, g.JSON, sts, render.MigrationStatus)
}
