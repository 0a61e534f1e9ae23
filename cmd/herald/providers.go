package main

import (
	"cmp"
	"context"
	"errors"
	"io"

	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/internal/routing"
)

func init() {
	register(&command{
		name:    "providers",
		summary: "apply a providers and routing file (audited, with a diff), or list the providers",
		run:     runProviders,
	})
}

func runProviders(ctx context.Context, m *Main, args []string) error {
	sub, args, err := m.subcommand("providers", args, "apply", "list")
	if err != nil {
		return err
	}
	if sub == "apply" {
		return providersApply(ctx, m, args)
	}
	// Every provider: never a credential, only where it is read from.
	return routingShow(ctx, m, "providers list", args, render.ProvidersJSON, render.Providers)
}

// providersApply makes the database's providers and rules the file's.
func providersApply(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("providers apply", &g)
	file := fs.String("f", "", "the providers and rules `FILE` (YAML) to apply (required)")
	dryRun := fs.Bool("dry-run", false, "show what would change, change nothing")
	reason := fs.String("reason", "", "why: recorded in herald.audit_log")
	actor := fs.String("actor", cmp.Or(m.Getenv("USER"), m.Getenv("LOGNAME")), "who: recorded in herald.audit_log (default $USER)")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("invalid -f: required, the providers file to apply")}
	}
	if *actor == "" {
		return usageError{errors.New("invalid -actor: empty, and $USER is unset")}
	}
	f, err := routing.ReadFile(*file)
	if err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	res, err := op.ApplyRouting(ctx, f, *actor, &routing.ApplyOpts{Reason: *reason, DryRun: *dryRun})
	if err != nil {
		return err
	}
	return output(m, g.JSON, res, render.AppliedChanges)
}

// routingShow runs a command that prints the providers and rules as
// applied (providers list, routing list): as JSON with asJSON, else text.
func routingShow(ctx context.Context, m *Main, name string, args []string, asJSON, text func(io.Writer, *routing.Table) error) error {
	var g globalFlags
	fs := m.newJSONFlagSet(name, &g)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	t, err := routing.Load(ctx, pool)
	if err != nil {
		return err
	}
	if g.JSON {
		return asJSON(m.Stdout, t)
	}
	return text(m.Stdout, t)
}
