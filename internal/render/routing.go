package render

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/routing"
)

// AppliedChanges writes what `herald providers apply` changed, a line per
// provider or rule, or "no changes".
func AppliedChanges(w io.Writer, a *operator.RoutingApplied) error {
	if len(a.Changes) == 0 {
		fmt.Fprintf(w, "no changes (version %d)\n", a.Version)
		return nil
	}
	tw := newTable(w)
	for _, c := range a.Changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Change, c.Kind, c.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.DryRun {
		fmt.Fprintf(w, "dry run: %d change(s), nothing applied (version %d)\n", len(a.Changes), a.Version)
	} else {
		fmt.Fprintf(w, "applied %d change(s): version %d\n", len(a.Changes), a.Version)
	}
	return nil
}

// ProvidersJSON writes t's providers as `herald providers list --json`
// prints them: settings with credential references, never values.
func ProvidersJSON(w io.Writer, t *routing.Table) error {
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
	for _, n := range sortedNames(t.Providers) {
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
	return JSON(w, out)
}

// Providers writes t's providers as `herald providers list` shows them: a
// row each, with where it delivers and where its credentials are read from.
func Providers(w io.Writer, t *routing.Table) error {
	names := sortedNames(t.Providers)
	if len(names) == 0 {
		fmt.Fprintln(w, "no providers: each channel delivers through serve's configured driver (herald providers apply -f FILE adds some)")
		return nil
	}
	tw := newTable(w)
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
			dash(target), dash(creds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "version %d; a circuit opens when at least min attempts since it closed failed transiently at ratio or more, for cooldown\n", t.Version)
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
	case config.DriverSMPP:
		s := p.SMPP
		port := s.Port
		if port == 0 {
			port = 2775
		}
		creds := "system_id " + s.SystemID
		if pw := secret("password", s.Password); pw != "" {
			creds += ", " + pw
		}
		return fmt.Sprintf("smpp://%s:%d", s.Host, port), creds
	}
	return "", ""
}

// RulesJSON writes t's rules as `herald routing list --json` prints them.
func RulesJSON(w io.Writer, t *routing.Table) error {
	return JSON(w, struct {
		Version int64                     `json:"version"`
		Rules   map[string][]routing.Rule `json:"rules"`
	}{t.Version, t.Rules})
}

// Rules writes t's rules as `herald routing list` shows them: each
// channel's, in order.
func Rules(w io.Writer, t *routing.Table) error {
	if len(t.Rules) == 0 {
		fmt.Fprintln(w, "no rules: each channel delivers through serve's configured driver")
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "CHANNEL\t#\tRULE\tMATCH\tSTRATEGY\tPROVIDERS")
	for _, ch := range sortedNames(t.Rules) {
		for _, r := range t.Rules[ch] {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", ch, r.Position, r.Name, describeMatch(r.Match), r.Strategy, describeProviders(r))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "version %d; the first rule of a channel whose every matcher matches decides; a route no rule matches is dead-lettered as no_route\n", t.Version)
	return nil
}

// describeMatch shows a rule's matchers on one line; "any" for none.
func describeMatch(mt routing.Match) string {
	var parts []string
	for _, l := range []struct {
		key    string
		values []string
	}{{"prefix", mt.Prefixes}, {"producer", mt.Producers}, {"type", mt.Types}, {"priority", mt.Priorities}} {
		if len(l.values) > 0 {
			parts = append(parts, l.key+" "+strings.Join(l.values, ","))
		}
	}
	if len(parts) == 0 {
		return "any"
	}
	return strings.Join(parts, "; ")
}

// describeProviders shows a rule's providers, with their weights.
func describeProviders(r routing.Rule) string {
	if len(r.Weights) == 0 {
		return strings.Join(r.Providers, ", ")
	}
	parts := make([]string, len(r.Providers))
	for i, p := range r.Providers {
		parts[i] = fmt.Sprintf("%s %d", p, r.Weights[i])
	}
	return strings.Join(parts, ", ")
}

// RoutingTestJSON writes rt as `herald routing test --json` prints it.
func RoutingTestJSON(w io.Writer, rt *operator.RoutingTest) error {
	d := rt.Decision
	out := struct {
		Channel  string `json:"channel"`
		Version  int64  `json:"version"`
		Provider string `json:"provider"`
		Rule     string `json:"rule"`
		Strategy string `json:"strategy"`
		NoRules  bool   `json:"no_rules"`
		NoRoute  bool   `json:"no_route"`
		AllOpen  bool   `json:"all_open"`
		Wrap     bool   `json:"wrap"`
		routing.Explanation
	}{rt.Channel, rt.Version, d.Provider, d.Rule, d.Strategy, d.NoRules, rt.NoRoute != nil, d.AllOpen, d.Wrap, d.Explanation}
	if out.Skipped == nil {
		out.Skipped = []routing.SkippedRule{}
	}
	if out.Candidates == nil {
		out.Candidates = []routing.Candidate{}
	}
	if rt.NoRoute != nil {
		out.Reason = rt.NoRoute.Error()
	}
	return JSON(w, out)
}

// RoutingDecision writes rt as `herald routing test` shows it: the rules
// skipped and why, the rule that matched, its providers in the order they
// would be tried, and the provider. When no rule matched it writes the
// rules skipped only (the command's error says the rest).
func RoutingDecision(w io.Writer, rt *operator.RoutingTest) {
	d := rt.Decision
	fmt.Fprintf(w, "channel %s, routing version %d\n", rt.Channel, rt.Version)
	for _, s := range d.Explanation.Skipped {
		fmt.Fprintf(w, "  rule %s: skipped, %s\n", s.Rule, s.Reason)
	}
	switch {
	case d.NoRules:
		fmt.Fprintf(w, "  %s\n", d.Explanation.Reason)
		return
	case d.Rule == "":
		return // no route: the error says so
	}
	fmt.Fprintf(w, "  rule %s: matched (%s)\n", d.Rule, d.Strategy)
	for _, c := range d.Explanation.Candidates {
		var notes []string
		if c.Weight > 0 {
			notes = append(notes, fmt.Sprintf("weight %d", c.Weight))
		}
		if c.Open {
			notes = append(notes, "circuit open until "+stamp(rt.Open[c.Provider]))
		}
		if c.Last {
			notes = append(notes, "took the last attempt")
		}
		note := ""
		if len(notes) > 0 {
			note = " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(w, "    %s%s\n", c.Provider, note)
	}
	fmt.Fprintf(w, "provider: %s\n", d.Provider)
	if d.AllOpen {
		fmt.Fprintln(w, "every provider's circuit is open: the route waits for the first cool-down to end")
	}
	fmt.Fprintf(w, "why: %s\n", d.Explanation.Reason)
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
