package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/heraldhq/herald/internal/config"
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
	return providersList(ctx, m, args)
}

// providersApply makes the database's providers and rules the file's.
func providersApply(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("providers apply", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
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
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	changes, err := routing.Apply(ctx, pool, f, *actor, &routing.ApplyOpts{Reason: *reason, DryRun: *dryRun})
	if err != nil {
		return err
	}
	version, err := routing.ReadVersion(ctx, pool)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(m.Stdout, struct {
			DryRun  bool             `json:"dry_run"`
			Changes []routing.Change `json:"changes"`
			Version int64            `json:"version"`
		}{*dryRun, changes, version})
	}
	if len(changes) == 0 {
		fmt.Fprintf(m.Stdout, "no changes (version %d)\n", version)
		return nil
	}
	tw := render.NewTable(m.Stdout)
	for _, c := range changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Change, c.Kind, c.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *dryRun {
		fmt.Fprintf(m.Stdout, "dry run: %d change(s), nothing applied (version %d)\n", len(changes), version)
	} else {
		fmt.Fprintf(m.Stdout, "applied %d change(s): version %d\n", len(changes), version)
	}
	return nil
}

// providersList prints every provider: never a credential, only where it
// is read from.
func providersList(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("providers list", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
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
	names := sortedNames(t.Providers)
	if g.JSON {
		type circuit struct {
			FailureRatio float64 `json:"failure_ratio"`
			MinAttempts  int     `json:"min_attempts"`
			Cooldown     string  `json:"cooldown"`
		}
		type provider struct {
			Name         string          `json:"name"`
			Channel      string          `json:"channel"`
			Driver       string          `json:"driver"`
			Concurrency  int             `json:"concurrency"`
			CapPerSecond int             `json:"cap_per_second"`
			Circuit      circuit         `json:"circuit"`
			Settings     json.RawMessage `json:"settings"`
		}
		out := struct {
			Version   int64      `json:"version"`
			Providers []provider `json:"providers"`
		}{Version: t.Version, Providers: []provider{}}
		for _, n := range names {
			p := t.Providers[n]
			settings, err := p.SettingsJSON()
			if err != nil {
				return err
			}
			out.Providers = append(out.Providers, provider{
				Name: p.Name, Channel: p.Channel, Driver: p.Driver, Concurrency: p.Concurrency, CapPerSecond: p.CapPerSecond,
				Circuit:  circuit{p.Circuit.FailureRatio, p.Circuit.MinAttempts, p.Circuit.Cooldown.String()},
				Settings: settings,
			})
		}
		return writeJSON(m.Stdout, out)
	}
	if len(names) == 0 {
		fmt.Fprintln(m.Stdout, "no providers: each channel delivers through serve's configured driver (herald providers apply -f FILE adds some)")
		return nil
	}
	tw := render.NewTable(m.Stdout)
	fmt.Fprintln(tw, "NAME\tCHANNEL\tDRIVER\tCONCURRENCY\tCAP/S\tTIMEOUT\tCIRCUIT\tTARGET\tCREDENTIALS")
	for _, n := range names {
		p := t.Providers[n]
		concurrency, capacity, timeout := "channel's", "none", "channel's"
		if p.Concurrency > 0 {
			concurrency = fmt.Sprint(p.Concurrency)
		}
		if p.CapPerSecond > 0 {
			capacity = fmt.Sprint(p.CapPerSecond)
		}
		if p.Timeout > 0 {
			timeout = p.Timeout.String()
		}
		target, creds := describeProvider(p)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Channel, p.Driver, concurrency, capacity, timeout,
			fmt.Sprintf("ratio %g, min %d, cooldown %s", p.Circuit.FailureRatio, p.Circuit.MinAttempts, p.Circuit.Cooldown),
			render.Dash(target), render.Dash(creds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "version %d; a circuit opens when at least min attempts since it closed failed transiently at ratio or more, for cooldown\n", t.Version)
	return nil
}

// describeProvider returns where p delivers and where its credentials are
// read from (never their values).
func describeProvider(p routing.Provider) (target, creds string) {
	secret := func(name string, s config.Secret) string {
		if s.IsZero() {
			return ""
		}
		return name + " " + s.String()
	}
	switch p.Driver {
	case config.DriverWebhook:
		return "", secret("secrets", p.Webhook.Secrets)
	case config.DriverSMTP:
		port := ""
		if p.SMTP.Port > 0 {
			port = fmt.Sprintf(":%d", p.SMTP.Port)
		}
		return p.SMTP.Host + port, secret("password", p.SMTP.Password)
	case config.DriverSMSHTTP:
		return p.SMSHTTP.URL, secret("api_key", p.SMSHTTP.APIKey)
	}
	return "", ""
}

// sortedNames returns m's keys, sorted.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
