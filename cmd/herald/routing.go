package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/internal/routing"
)

func init() {
	register(&command{
		name:    "routing",
		summary: "list the routing rules, or test which provider a destination would get and why",
		run:     runRouting,
	})
}

func runRouting(ctx context.Context, m *Main, args []string) error {
	sub, args, err := m.subcommand("routing", args, "list", "test")
	if err != nil {
		return err
	}
	if sub == "list" {
		return routingList(ctx, m, args)
	}
	return routingTest(ctx, m, args)
}

// routingList prints each channel's rules in order.
func routingList(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("routing list", &g)
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
	if g.JSON {
		return writeJSON(m.Stdout, struct {
			Version int64                     `json:"version"`
			Rules   map[string][]routing.Rule `json:"rules"`
		}{t.Version, t.Rules})
	}
	if len(t.Rules) == 0 {
		fmt.Fprintln(m.Stdout, "no rules: each channel delivers through serve's configured driver")
		return nil
	}
	tw := render.NewTable(m.Stdout)
	fmt.Fprintln(tw, "CHANNEL\t#\tRULE\tMATCH\tSTRATEGY\tPROVIDERS")
	for _, ch := range sortedNames(t.Rules) {
		for _, r := range t.Rules[ch] {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", ch, r.Position, r.Name, describeMatch(r.Match), r.Strategy, describeProviders(r))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "version %d; the first rule of a channel whose every matcher matches decides; a route no rule matches is dead-lettered as no_route\n", t.Version)
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

var phoneArgRE = regexp.MustCompile(`^\+[0-9]+$`)

// guessChannel returns the channel a destination belongs to: +digits sms,
// an address with @ email, an http(s) URL webhook; "" when none fits.
func guessChannel(dest string) string {
	switch {
	case phoneArgRE.MatchString(dest):
		return "sms"
	case strings.HasPrefix(dest, "https://") || strings.HasPrefix(dest, "http://"):
		return "webhook"
	case strings.Contains(dest, "@"):
		return "email"
	}
	return ""
}

// routingTest says which provider a route to a destination would get now,
// and why: the rules as applied and the circuits as serve sees them.
func routingTest(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("routing test", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	ch := fs.String("channel", "", "the route's channel: "+strings.Join(intake.Channels(), ", ")+" (default: from DESTINATION: +digits sms, an address email, a URL webhook)")
	producer := fs.String("producer", "", "the notification's producer")
	typ := fs.String("type", "", "the notification's type")
	priority := fs.String("priority", string(heraldtype.PriorityTransactional), "the route's priority: transactional or bulk")
	tried := fs.String("tried", "", "the providers of the route's earlier attempts, comma-separated, the last having just failed")
	dest, err := m.parseOneArg(fs, &g, args, "routing test", "DESTINATION")
	if err != nil {
		return err
	}
	if *ch == "" {
		if *ch = guessChannel(dest); *ch == "" {
			return usageError{fmt.Errorf("cannot tell the channel of %s: give -channel", quoteArg(dest))}
		}
	}
	if _, err := parseChannel(*ch); err != nil {
		return err
	}
	if *priority != string(heraldtype.PriorityTransactional) && *priority != string(heraldtype.PriorityBulk) {
		return usageError{fmt.Errorf("invalid -priority %s: want transactional or bulk", quoteArg(*priority))}
	}
	in := routing.PickInput{Channel: *ch, Destination: dest, Producer: *producer, NotificationType: *typ, Priority: *priority}
	if *tried != "" {
		in.Tried = strings.Split(*tried, ",")
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	t, err := routing.Load(ctx, pool)
	if err != nil {
		return err
	}
	open, err := routing.OpenCircuits(ctx, pool, time.Time{})
	if err != nil {
		return err
	}
	in.IsOpenFunc = func(p string) bool { _, ok := open[p]; return ok }
	d, err := t.Pick(in)
	var nr *routing.NoRouteError
	if errors.As(err, &nr) {
		d.Explanation.Skipped = nr.Skipped
	} else if err != nil {
		return err
	}
	if g.JSON {
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
		}{*ch, t.Version, d.Provider, d.Rule, d.Strategy, d.NoRules, nr != nil, d.AllOpen, d.Wrap, d.Explanation}
		if out.Skipped == nil {
			out.Skipped = []routing.SkippedRule{}
		}
		if out.Candidates == nil {
			out.Candidates = []routing.Candidate{}
		}
		if nr != nil {
			out.Reason = nr.Error()
		}
		if werr := writeJSON(m.Stdout, out); werr != nil {
			return werr
		}
		return err
	}
	printDecision(m.Stdout, *ch, t.Version, d, open)
	return err
}

// printDecision prints Pick's decision for a terminal.
func printDecision(w io.Writer, ch string, version int64, d routing.Decision, open map[string]time.Time) {
	fmt.Fprintf(w, "channel %s, routing version %d\n", ch, version)
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
			notes = append(notes, "circuit open until "+render.Stamp(open[c.Provider]))
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
