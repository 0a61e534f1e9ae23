package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/store"
)

// Change is one difference an apply made (or, dry, would make).
type Change struct {
	// Kind is "provider" or "rule".
	Kind string `json:"kind"`
	// Name is the provider's name, or the rule's as "<channel>/<rule>".
	Name string `json:"name"`
	// Change is "added", "changed" or "removed".
	Change string `json:"change"`
}

// ApplyOpts are an apply's optional settings.
type ApplyOpts struct {
	// Reason goes into the audit row.
	Reason string
	// DryRun computes the changes without making them.
	DryRun bool
}

// Apply makes the database's providers and rules f's, in one transaction
// (herald.routing_apply): added, changed and removed, audited as actor's
// (required), routing_state's version bumped and serve processes notified
// when anything changed. It returns the changes, sorted by kind and name;
// none when the database already matches f, and then nothing is written.
// f must come from Parse. The login needs herald_operator.
func Apply(ctx context.Context, db store.DBTX, f *File, actor string, opts *ApplyOpts) ([]Change, error) {
	if opts == nil {
		opts = &ApplyOpts{}
	}
	if actor == "" {
		return nil, errors.New("apply: an actor is required")
	}
	doc, err := f.doc()
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	rows, err := queries.RoutingApply(ctx, db, store.RoutingApplyParams{Doc: doc, Actor: actor, Reason: opts.Reason, DryRun: opts.DryRun})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.ForeignKeyViolation {
			// routing_apply's own check, worded as Parse words it.
			return nil, errors.New(pgErr.Message)
		}
		return nil, fmt.Errorf("apply: %w", err)
	}
	out := make([]Change, len(rows))
	for i, r := range rows {
		out[i] = Change{Kind: r.Kind, Name: r.Name, Change: r.Change}
	}
	return out, nil
}

// providerRow and ruleRow are herald.providers' and herald.routing_rules'
// rows as routing_apply's doc gives them, keyed by column.
type providerRow struct {
	Name                string          `json:"name"`
	Channel             string          `json:"channel"`
	Driver              string          `json:"driver"`
	Settings            json.RawMessage `json:"settings"`
	Concurrency         int             `json:"concurrency"`
	CapPerSecond        int             `json:"cap_per_second"`
	CircuitFailureRatio float64         `json:"circuit_failure_ratio"`
	CircuitMinAttempts  int             `json:"circuit_min_attempts"`
	// CircuitCooldown is an interval's text ("30000000 microseconds").
	CircuitCooldown string `json:"circuit_cooldown"`
}

type ruleRow struct {
	Channel         string   `json:"channel"`
	Position        int      `json:"position"`
	Name            string   `json:"name"`
	MatchPrefixes   []string `json:"match_prefixes"`
	MatchProducers  []string `json:"match_producers"`
	MatchTypes      []string `json:"match_types"`
	MatchPriorities []string `json:"match_priorities"`
	Strategy        string   `json:"strategy"`
	Providers       []string `json:"providers"`
	Weights         []int    `json:"weights"`
}

// doc returns routing_apply's doc for f: {"providers": [...], "rules":
// [...]}.
func (f *File) doc() ([]byte, error) {
	t := f.Table()
	var d struct {
		Providers []providerRow `json:"providers"`
		Rules     []ruleRow     `json:"rules"`
	}
	d.Providers, d.Rules = []providerRow{}, []ruleRow{}
	for _, s := range f.Providers {
		p := t.Providers[s.Name]
		settings, err := p.SettingsJSON()
		if err != nil {
			return nil, fmt.Errorf("provider %s: settings: %w", p.Name, err)
		}
		d.Providers = append(d.Providers, providerRow{
			Name:                p.Name,
			Channel:             p.Channel,
			Driver:              p.Driver,
			Settings:            settings,
			Concurrency:         p.Concurrency,
			CapPerSecond:        p.CapPerSecond,
			CircuitFailureRatio: p.Circuit.FailureRatio,
			CircuitMinAttempts:  p.Circuit.MinAttempts,
			CircuitCooldown:     fmt.Sprintf("%d microseconds", p.Circuit.Cooldown.Microseconds()),
		})
	}
	for _, ch := range slices.Sorted(maps.Keys(t.Rules)) {
		for _, r := range t.Rules[ch] {
			d.Rules = append(d.Rules, ruleRow{
				Channel:         r.Channel,
				Position:        r.Position,
				Name:            r.Name,
				MatchPrefixes:   r.Match.Prefixes,
				MatchProducers:  r.Match.Producers,
				MatchTypes:      r.Match.Types,
				MatchPriorities: r.Match.Priorities,
				Strategy:        r.Strategy,
				Providers:       r.Providers,
				Weights:         r.Weights,
			})
		}
	}
	return json.Marshal(d)
}
