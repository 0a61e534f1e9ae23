package routing

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/channel"
)

// ErrNoRoute is matched (errors.Is) by the *NoRouteError Pick returns when
// a channel has rules and none matches the route: the route is
// dead-lettered with classification no_route.
var ErrNoRoute = errors.New("no route")

// NoRouteError says that no rule of Channel matches a route, and how to fix
// it. Its message holds the destination masked.
type NoRouteError struct {
	Channel string
	// Destination is masked (channel.MaskAddress).
	Destination string
	// Skipped says why each rule did not match, in order.
	Skipped []SkippedRule
}

func (e *NoRouteError) Error() string {
	return fmt.Sprintf("no rule of channel %s matches %s: %s", e.Channel, e.Destination, e.Hint())
}

// Hint says how to fix the channel's rule set, for the dead letter's
// recovery hint.
func (e *NoRouteError) Hint() string {
	return "add a rule (or a catch-all rule without matchers) with herald providers apply"
}

// Is reports whether target is ErrNoRoute.
func (e *NoRouteError) Is(target error) bool { return target == ErrNoRoute }

var phoneDestinationRE = regexp.MustCompile(`^\+[0-9]+$`)

// GuessChannel returns the channel a destination belongs to, for a
// PickInput given without one: +digits sms, an http(s) URL webhook, an
// address with @ email; "" when none fits.
func GuessChannel(dest string) string {
	switch {
	case phoneDestinationRE.MatchString(dest):
		return "sms"
	case strings.HasPrefix(dest, "https://") || strings.HasPrefix(dest, "http://"):
		return "webhook"
	case strings.Contains(dest, "@"):
		return "email"
	}
	return ""
}

// PickInput is one route's hop, as Pick needs it: the dispatcher builds
// one per route it routes (through its Plane's PickFunc, which is Pick),
// and herald routing test one from its flags.
type PickInput struct {
	Channel string
	// Destination is the resolved address: an E.164 number for sms, an
	// e-mail address for email, a URL for webhook.
	Destination      string
	Producer         string
	NotificationType string
	// Priority is "transactional" or "bulk".
	Priority string
	// Tried are the providers of the route's earlier attempts, in order;
	// the last one is the one that just failed transiently, if any.
	Tried []string
	// IsOpenFunc reports whether a provider's circuit is open; nil means
	// every circuit is closed.
	IsOpenFunc func(provider string) bool
	// Rand is the source for weighted rules; nil means math/rand/v2's.
	Rand *rand.Rand
}

// Decision is which provider takes a route's next attempt, and why.
type Decision struct {
	// Provider is the provider to use; "" with NoRules. With AllOpen it is
	// the one that would be used were its circuit closed.
	Provider string
	// Rule is the name of the rule that matched; Strategy is its strategy.
	Rule     string
	Strategy string
	// NoRules says the channel has no rules: the dispatcher uses the
	// channel's one configured driver.
	NoRules bool
	// AllOpen says every provider of the rule has its circuit open: the
	// route should wait (for the first cool-down to end), not fail.
	AllOpen bool
	// Wrap says this hop starts the rule's providers over: every one with
	// a closed circuit has been tried since the route's last wrap. The
	// dispatcher backs off only then; a failover is immediate.
	Wrap bool
	// Explanation says how the decision was reached, for herald routing
	// test.
	Explanation Explanation
}

// Explanation says how Pick decided.
type Explanation struct {
	// Skipped are the rules before the matching one, each with why it did
	// not match.
	Skipped []SkippedRule `json:"skipped"`
	// Candidates are the matching rule's providers in the order the
	// strategy considers them for this hop (failover: the one it starts
	// at first; weighted: the rule's order).
	Candidates []Candidate `json:"candidates"`
	// Reason says why Provider, in a sentence.
	Reason string `json:"reason"`
}

// SkippedRule is a rule that did not match, and why.
type SkippedRule struct {
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Candidate is one provider of the matching rule as Pick saw it.
type Candidate struct {
	Provider string `json:"provider"`
	// Weight is its weight in a weighted rule; 0 for failover.
	Weight int `json:"weight,omitempty"`
	// Open says its circuit is open.
	Open bool `json:"open,omitempty"`
	// Last says it took the route's last attempt.
	Last bool `json:"last,omitempty"`
}

// Pick decides which provider takes in's route: the first rule of its
// channel that matches, then the rule's strategy. A channel without rules
// gives Decision{NoRules: true}; one with rules none of which match gives
// a *NoRouteError (errors.Is ErrNoRoute).
func (t *Table) Pick(in PickInput) (Decision, error) {
	rules := t.Rules[in.Channel]
	if len(rules) == 0 {
		return Decision{NoRules: true, Explanation: Explanation{
			Reason: fmt.Sprintf("channel %s has no rules: its configured driver delivers", in.Channel),
		}}, nil
	}
	var skipped []SkippedRule
	for _, r := range rules {
		if why := r.mismatch(in); why != "" {
			skipped = append(skipped, SkippedRule{Rule: r.Name, Reason: why})
			continue
		}
		d := r.pick(in)
		d.Explanation.Skipped = nonNil(skipped)
		return d, nil
	}
	return Decision{}, &NoRouteError{Channel: in.Channel, Destination: channel.MaskAddress(in.Destination), Skipped: skipped}
}

// mismatch returns why r does not match in, or "" if it does.
func (r *Rule) mismatch(in PickInput) string {
	m := r.Match
	switch {
	case len(m.Prefixes) > 0 && !slices.ContainsFunc(m.Prefixes, func(p string) bool { return prefixMatches(r.Channel, p, in.Destination) }):
		return fmt.Sprintf("destination %s does not match prefixes %s", channel.MaskAddress(in.Destination), strings.Join(m.Prefixes, ", "))
	case len(m.Producers) > 0 && !slices.Contains(m.Producers, in.Producer):
		return fmt.Sprintf("producer %q is not one of %s", in.Producer, strings.Join(m.Producers, ", "))
	case len(m.Types) > 0 && !slices.Contains(m.Types, in.NotificationType):
		return fmt.Sprintf("type %q is not one of %s", in.NotificationType, strings.Join(m.Types, ", "))
	case len(m.Priorities) > 0 && !slices.Contains(m.Priorities, in.Priority):
		return fmt.Sprintf("priority %q is not one of %s", in.Priority, strings.Join(m.Priorities, ", "))
	}
	return ""
}

// prefixMatches reports whether destination dest of channel ch matches
// prefix p: for email, "@domain" is the address's domain exactly and
// anything else the start of the address, ignoring case; otherwise the
// start of dest.
func prefixMatches(ch, p, dest string) bool {
	if ch != channel.Email {
		return strings.HasPrefix(dest, p)
	}
	dest, p = strings.ToLower(dest), strings.ToLower(p)
	if strings.HasPrefix(p, "@") {
		at := strings.LastIndexByte(dest, '@')
		return at >= 0 && dest[at:] == p
	}
	return strings.HasPrefix(dest, p)
}

// pick applies r's strategy to in.
func (r *Rule) pick(in PickInput) Decision {
	isOpen := in.IsOpenFunc
	if isOpen == nil {
		isOpen = func(string) bool { return false }
	}
	var last string
	if n := len(in.Tried); n > 0 {
		last = in.Tried[n-1]
	}
	open := make([]bool, len(r.Providers))
	closed := map[string]bool{}
	for i, p := range r.Providers {
		open[i] = isOpen(p)
		if !open[i] {
			closed[p] = true
		}
	}
	d := Decision{Rule: r.Name, Strategy: r.Strategy}
	if r.Strategy == StrategyWeighted {
		r.pickWeighted(&d, in.Rand, last, open)
	} else {
		r.pickFailover(&d, last, open)
	}
	d.AllOpen = len(closed) == 0
	if d.AllOpen {
		// Every provider counts for the wrap, none being available.
		for _, p := range r.Providers {
			closed[p] = true
		}
	}
	d.Wrap = wraps(in.Tried, closed)
	return d
}

// pickFailover takes the provider after last in r's order (the first when
// last is not r's), skipping open circuits.
func (r *Rule) pickFailover(d *Decision, last string, open []bool) {
	n := len(r.Providers)
	start := 0
	if i := slices.Index(r.Providers, last); i >= 0 {
		start = (i + 1) % n
	}
	var chosen string
	var skippedOpen []string
	for k := range n {
		i := (start + k) % n
		p := r.Providers[i]
		d.Explanation.Candidates = append(d.Explanation.Candidates, Candidate{Provider: p, Open: open[i], Last: p == last})
		if chosen == "" {
			if open[i] {
				skippedOpen = append(skippedOpen, p)
			} else {
				chosen = p
			}
		}
	}
	switch {
	case chosen == "":
		d.Provider = r.Providers[start]
		d.Explanation.Reason = fmt.Sprintf("rule %s (failover): every provider's circuit is open; %s would be next", r.Name, d.Provider)
	case len(skippedOpen) > 0:
		d.Provider = chosen
		d.Explanation.Reason = fmt.Sprintf("rule %s (failover): %s, after %s (circuit open)", r.Name, chosen, strings.Join(skippedOpen, ", "))
	case last != "" && slices.Contains(r.Providers, last):
		d.Provider = chosen
		d.Explanation.Reason = fmt.Sprintf("rule %s (failover): %s, the next after %s, which took the last attempt", r.Name, chosen, last)
	default:
		d.Provider = chosen
		d.Explanation.Reason = fmt.Sprintf("rule %s (failover): %s, the first", r.Name, chosen)
	}
}

// pickWeighted picks by weight among the providers with closed circuits,
// not last when another is available (among all when every circuit is
// open).
func (r *Rule) pickWeighted(d *Decision, rnd *rand.Rand, last string, open []bool) {
	pool := make([]int, 0, len(r.Providers)) // indexes of r.Providers
	for i, p := range r.Providers {
		d.Explanation.Candidates = append(d.Explanation.Candidates, Candidate{Provider: p, Weight: r.Weights[i], Open: open[i], Last: p == last})
		if !open[i] {
			pool = append(pool, i)
		}
	}
	allOpen := len(pool) == 0
	if allOpen {
		for i := range r.Providers {
			pool = append(pool, i)
		}
	}
	avoided := ""
	if len(pool) > 1 {
		if j := slices.IndexFunc(pool, func(i int) bool { return r.Providers[i] == last }); j >= 0 {
			pool = slices.Delete(pool, j, j+1)
			avoided = last
		}
	}
	total := 0
	for _, i := range pool {
		total += r.Weights[i]
	}
	var x int
	if rnd != nil {
		x = rnd.IntN(total)
	} else {
		x = rand.IntN(total)
	}
	chosen := pool[len(pool)-1]
	for _, i := range pool {
		if x < r.Weights[i] {
			chosen = i
			break
		}
		x -= r.Weights[i]
	}
	d.Provider = r.Providers[chosen]
	share := fmt.Sprintf("%d of %d", r.Weights[chosen], total)
	switch {
	case allOpen:
		d.Explanation.Reason = fmt.Sprintf("rule %s (weighted): every provider's circuit is open; %s would be picked (weight %s)", r.Name, d.Provider, share)
	case avoided != "":
		d.Explanation.Reason = fmt.Sprintf("rule %s (weighted): %s, picked by weight (%s) among the providers with closed circuits other than %s, which took the last attempt", r.Name, d.Provider, share, avoided)
	default:
		d.Explanation.Reason = fmt.Sprintf("rule %s (weighted): %s, picked by weight (%s) among the providers with closed circuits", r.Name, d.Provider, share)
	}
}

// wraps reports whether tried's last attempt completed a round: going
// through tried in order, a round completes when every provider of
// providers has been tried since the previous round's end.
func wraps(tried []string, providers map[string]bool) bool {
	if len(tried) == 0 || len(providers) == 0 {
		return false
	}
	seen := map[string]bool{}
	wrapped := false
	for _, p := range tried {
		wrapped = false
		if !providers[p] {
			continue
		}
		seen[p] = true
		if len(seen) == len(providers) {
			wrapped = true
			clear(seen)
		}
	}
	return wrapped
}

// String describes the explanation on a few lines, for a terminal.
func (e Explanation) String() string {
	var b strings.Builder
	for _, s := range e.Skipped {
		fmt.Fprintf(&b, "rule %s skipped: %s\n", s.Rule, s.Reason)
	}
	b.WriteString(e.Reason)
	return b.String()
}
