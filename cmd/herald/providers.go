package main

import (
	"context"
	"errors"
	"io"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/internal/routing"
)

func init() {
	register(&command{
		name:    "providers",
		summary: "apply a providers and routing file (audited, with a diff), or list the providers",
		subs: []*command{
			{name: "apply", summary: "make the database's providers and rules the file's, showing the diff (audited)", run: providersApply,
				example: "herald providers apply -f providers.yaml -dry-run"},
			{name: "list", summary: "list the providers, never a credential", run: providersList, readOnly: true,
				example: "herald providers list --json"},
		},
	})
}

// providersList prints every provider: never a credential, only where it
// is read from.
func providersList(ctx context.Context, m *Main, args []string) error {
	return routingShow(ctx, m, "providers list", args, render.ProvidersJSON, render.Providers)
}

// providersApply makes the database's providers and rules the file's.
func providersApply(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("providers apply", &g)
	file := fs.String("f", "", "the providers and rules `FILE` (YAML) to apply (required)")
	dryRun := fs.Bool("dry-run", false, "show what would change, change nothing")
	var a auditFlags
	a.bind(fs, m, "")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("invalid -f: required, the providers file to apply")}
	}
	// A dry run records nothing, so it needs no actor; routing.Apply asks
	// for one all the same.
	if *dryRun && a.actor == "" {
		a.actor = "dry-run"
	} else if err := a.check(false); err != nil {
		return err
	}
	f, err := routing.ReadFile(*file)
	if err != nil {
		return err
	}
	return answer(ctx, m, &g, 0, func(op *operator.Operator) (*operator.RoutingApplied, error) {
		return op.ApplyRouting(ctx, f, a.actor, &routing.ApplyOpts{Reason: a.reason, DryRun: *dryRun})
	}, render.AppliedChanges)
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
		text = asJSON
	}
	return text(m.Stdout, t)
}
