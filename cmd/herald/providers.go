package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/internal/routing"
)

func init() {
	register(&command{
		name:    "providers",
		summary: "apply, export or list the providers and rules; disable, drain or enable a provider; show provider health",
		subs: []*command{
			{name: "apply", summary: "make the database's providers and rules the file's, showing the diff (audited)", run: providersApply,
				example: "herald providers apply -f providers.yaml -dry-run"},
			{name: "list", summary: "list the providers, never a credential", run: providersList, readOnly: true,
				example: "herald providers list --json"},
			{name: "export", summary: "print the providers file apply takes, from the database (credentials as references only)", run: providersExport, readOnly: true,
				example: "herald providers export > providers.yaml"},
			{name: "health", summary: "show each provider's state, circuit, failing streak, outcomes and failovers over a window", run: providersHealth, readOnly: true,
				example: "herald providers health -window 15m --watch"},
			{name: "disable", summary: "send a provider nothing at all: its routes go to the next provider (audited)", run: providersState(operator.ProviderDisabled),
				example: "herald providers disable sms/primary -reason 'HTTP 500 since 14:02'"},
			{name: "drain", summary: "send a provider no new attempt; what it holds finishes there (audited)", run: providersState(operator.ProviderDraining),
				example: "herald providers drain sms/primary -reason 'maintenance at 22:00'"},
			{name: "enable", summary: "let routing send a provider new attempts again (audited)", run: providersState(operator.ProviderEnabled),
				example: "herald providers enable sms/primary -reason 'recovered'"},
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

// providersExport prints the providers file that makes the database what
// it is; notes on values it leaves out go to Stderr as well.
func providersExport(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("providers export", &g)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	out, notes, err := routing.Export(ctx, pool)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(m.Stderr, "herald: note: "+n)
	}
	_, err = m.Stdout.Write(out)
	return err
}

func providersHealth(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	var w watchFlags
	fs := m.newJSONFlagSet("providers health", &g)
	window := fs.Duration("window", 5*time.Minute, "outcomes and failovers over this last stretch of time")
	w.bind(fs)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if *window <= 0 {
		return usageError{fmt.Errorf("invalid -window %s: must be positive", *window)}
	}
	if err := w.check(); err != nil {
		return err
	}
	return answerWatch(ctx, m, &g, w, func(op *operator.Operator) ([]operator.ProviderHealth, error) {
		return op.ProviderHealthOver(ctx, *window)
	}, render.ProviderHealth)
}

// providersState returns the run function of `providers disable`, `drain`
// or `enable`, which set a provider's state.
func providersState(state string) func(context.Context, *Main, []string) error {
	return func(ctx context.Context, m *Main, args []string) error {
		var g globalFlags
		var a auditFlags
		name := map[string]string{operator.ProviderDisabled: "disable", operator.ProviderDraining: "drain", operator.ProviderEnabled: "enable"}[state]
		fs := m.newJSONFlagSet("providers "+name, &g)
		a.bind(fs, m, map[bool]string{true: " (required)", false: ""}[state != operator.ProviderEnabled])
		provider, err := m.parseOneArg(fs, &g, args, name, "PROVIDER")
		if err != nil {
			return err
		}
		if err := a.check(state != operator.ProviderEnabled); err != nil {
			return err
		}
		return answer(ctx, m, &g, 0, func(op *operator.Operator) (*operator.ProviderStateChange, error) {
			return op.SetProviderState(ctx, provider, state, a.actor, a.reason)
		}, render.ProviderStateChange)
	}
}
