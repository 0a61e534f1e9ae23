package main

import (
	"context"
	"errors"
	"flag"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{name: "templates", summary: "publish templates from a directory, list, show or render them",
		subs: []*command{
			{name: "apply", summary: "publish the templates of a directory, one NAME.json each, as new versions", run: templatesApply,
				example: "herald templates apply -f templates/ -producer shop"},
			{name: "list", summary: "list the templates and their current versions", run: templatesList, readOnly: true,
				example: "herald templates list -producer shop"},
			{name: "show", summary: "show one template, its current version or another", run: templatesShow, readOnly: true,
				example: "herald templates show -version 2 order_shipped"},
			{name: "render", summary: "render a template with data, as a delivery would", run: templatesRender, readOnly: true,
				example: `herald templates render -data '{"order":"A17"}' -locale fr order_shipped`},
		}})
	register(&command{name: "held", summary: "list the intents the content blocklist holds for review, release or reject them (audited)",
		subs: []*command{
			{name: "list", summary: "list the held intents, oldest first", run: heldList, readOnly: true,
				example: "herald held list -limit 20"},
			{name: "release", summary: "submit held intents as they are (audited)", run: heldDecide("release"),
				example: "herald held release -reason 'reviewed: a real order' 12 13"},
			{name: "reject", summary: "refuse held intents: they become malformed entries (audited)", run: heldDecide("reject"),
				example: "herald held reject -reason 'phishing' 14"},
		}})
}

// The templates subcommands go through internal/operator's TemplatesCommand;
// each binds only the fields of the request it uses.

func templatesApply(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	r := operator.TemplatesRequest{Command: "apply"}
	fs := m.newJSONFlagSet("templates apply", &g)
	fs.StringVar(&r.Dir, "f", "", "the `DIR` of templates, one NAME.json each (required)")
	bindTemplateProducer(fs, &r, "the templates' producer (default: the login's own)")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if r.Dir == "" {
		return usageError{errors.New("invalid -f: required, the directory of templates to apply")}
	}
	return templatesAnswer(ctx, m, &g, &r)
}

func templatesList(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	r := operator.TemplatesRequest{Command: "list"}
	fs := m.newJSONFlagSet("templates list", &g)
	bindTemplateProducer(fs, &r, "only this producer's templates (default: all)")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	return templatesAnswer(ctx, m, &g, &r)
}

func templatesShow(ctx context.Context, m *Main, args []string) (err error) {
	var g globalFlags
	r := operator.TemplatesRequest{Command: "show"}
	fs := m.newJSONFlagSet("templates show", &g)
	bindTemplateProducer(fs, &r, "the template's producer (default: the login's own)")
	fs.IntVar(&r.Version, "version", 0, "this version (default: the current one)")
	if r.Name, err = m.parseOneArg(fs, &g, args, "templates show", "NAME"); err != nil {
		return err
	}
	return templatesAnswer(ctx, m, &g, &r)
}

func templatesRender(ctx context.Context, m *Main, args []string) (err error) {
	var g globalFlags
	r := operator.TemplatesRequest{Command: "render"}
	fs := m.newJSONFlagSet("templates render", &g)
	bindTemplateProducer(fs, &r, "the template's producer (default: the login's own)")
	fs.IntVar(&r.Version, "version", 0, "this version (default: the current one)")
	fs.StringVar(&r.Data, "data", "{}", "the data, a JSON object")
	fs.StringVar(&r.Locale, "locale", "", "the recipient's locale (default: the template's)")
	if r.Name, err = m.parseOneArg(fs, &g, args, "templates render", "NAME"); err != nil {
		return err
	}
	return templatesAnswer(ctx, m, &g, &r)
}

func bindTemplateProducer(fs *flag.FlagSet, r *operator.TemplatesRequest, help string) {
	fs.StringVar(&r.Producer, "producer", "", help)
}

func templatesAnswer(ctx context.Context, m *Main, g *globalFlags, r *operator.TemplatesRequest) error {
	return answer(ctx, m, g, 0, func(op *operator.Operator) (any, error) { return op.TemplatesCommand(ctx, r) }, render.TemplatesAnswer)
}

// The held subcommands go through internal/operator's HeldCommand.

func heldList(ctx context.Context, m *Main, args []string) error {
	var l listFlags
	fs := m.newListFlagSet("held list", &l)
	if err := m.parseList(fs, &l, args); err != nil {
		return err
	}
	return heldAnswer(ctx, m, &l.globalFlags, "list", nil, l.limit, l.after, &auditFlags{})
}

// heldDecide returns the run function of held release or held reject.
func heldDecide(sub string) func(context.Context, *Main, []string) error {
	return func(ctx context.Context, m *Main, args []string) error {
		var g globalFlags
		var a auditFlags
		fs := m.newJSONFlagSet("held "+sub, &g)
		a.bind(fs, m, " (required)")
		pos, err := m.parseArgs(fs, &g, args, "ID...")
		if err != nil {
			return err
		}
		return heldAnswer(ctx, m, &g, sub, pos, 0, "", &a)
	}
}

func heldAnswer(ctx context.Context, m *Main, g *globalFlags, sub string, ids []string, limit int, after string, a *auditFlags) error {
	r, err := operator.NewHeldRequest(sub, ids, limit, after, a.actor, a.reason)
	if err != nil {
		return usageError{err}
	}
	return answer(ctx, m, g, 0, func(op *operator.Operator) (any, error) { return op.HeldCommand(ctx, r) }, render.HeldAnswer)
}
