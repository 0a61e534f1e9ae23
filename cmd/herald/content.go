package main

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{name: "templates", summary: "publish templates from a directory, list, show or render them",
		run: withSubcommands("templates", bySub(templatesRun, "apply", "list", "show", "render")...)})
	register(&command{name: "held", summary: "list the intents the content blocklist holds for review, release or reject them (audited)",
		run: withSubcommands("held", bySub(heldRun, "list", "release", "reject")...)})
}

// bySub returns one subcommandFunc per name, each running fn with its name.
func bySub(fn func(context.Context, *Main, string, []string) error, names ...string) (subs []subcommandFunc) {
	for _, n := range names {
		subs = append(subs, subcommandFunc{n, func(ctx context.Context, m *Main, args []string) error { return fn(ctx, m, n, args) }})
	}
	return subs
}

// templatesRun is `herald templates apply|list|show|render` (internal/operator's TemplatesCommand).
func templatesRun(ctx context.Context, m *Main, sub string, args []string) (err error) {
	var g globalFlags
	fs := m.newJSONFlagSet("templates "+sub, &g)
	r := operator.TemplatesRequest{Command: sub}
	fs.StringVar(&r.Dir, "f", "", "apply: the `DIR` of templates, one NAME.json each (required)")
	fs.StringVar(&r.Producer, "producer", "", "the template's producer (default: the login's own; list: all)")
	fs.IntVar(&r.Version, "version", 0, "show, render: this version (default: the current one)")
	fs.StringVar(&r.Data, "data", "{}", "render: the data, a JSON object")
	fs.StringVar(&r.Locale, "locale", "", "render: the recipient's locale (default: the template's)")
	if sub == "show" || sub == "render" {
		r.Name, err = m.parseOneArg(fs, &g, args, "templates "+sub, "NAME")
	} else if err = m.noArgs(fs, &g, args); err == nil && sub == "apply" && r.Dir == "" {
		err = usageError{errors.New("invalid -f: required, the directory of templates to apply")}
	}
	if err != nil {
		return err
	}
	return answer(ctx, m, &g, 0, func(op *operator.Operator) (any, error) { return op.TemplatesCommand(ctx, &r) }, render.TemplatesAnswer)
}

// heldRun is `herald held list|release|reject` (internal/operator's HeldCommand).
func heldRun(ctx context.Context, m *Main, sub string, args []string) error {
	var l listFlags
	var a auditFlags
	fs, argsUsage := m.newListFlagSet("held list", &l), ""
	if sub != "list" {
		fs, argsUsage = m.newJSONFlagSet("held "+sub, &l.globalFlags), "ID..."
		a.bind(fs, m, " (required)")
	}
	pos, err := m.parseArgs(fs, &l.globalFlags, args, argsUsage)
	if err != nil {
		return err
	}
	r, err := operator.NewHeldRequest(sub, pos, l.limit, l.after, a.actor, a.reason)
	if err != nil {
		return usageError{err}
	}
	return answer(ctx, m, &l.globalFlags, 0, func(op *operator.Operator) (any, error) { return op.HeldCommand(ctx, r) }, render.HeldAnswer)
}
