package routing

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/store"
)

// Table is the routing table: every provider, and each channel's rules in
// order, as of one version.
type Table struct {
	// Version is routing_state.version when the table was read: 0 before
	// any apply, bumped by each apply that changed something.
	Version int64
	// Providers by name.
	Providers map[string]Provider
	// Rules per channel, in order; a channel without rules has no key.
	Rules map[string][]Rule
}

// Rule is one routing rule of a channel.
type Rule struct {
	Channel string `json:"channel"`
	// Position is the rule's place in its channel's list, from 1.
	Position int    `json:"position"`
	Name     string `json:"name"`
	Match    Match  `json:"match"`
	// Strategy is StrategyFailover or StrategyWeighted.
	Strategy  string   `json:"strategy"`
	Providers []string `json:"providers"`
	// Weights are the providers' shares, for StrategyWeighted only.
	Weights []int `json:"weights"`
}

// TxBeginner starts transactions: a *pgxpool.Pool or a *pgx.Conn.
type TxBeginner interface {
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
}

var queries = store.New()

// Load reads the routing table: providers, rules and version in one
// read-only REPEATABLE READ transaction, so they are of one apply. With no
// providers and rules it returns an empty Table (every channel NoRules).
func Load(ctx context.Context, db TxBeginner) (_ *Table, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("load routing table: %w", err)
		}
	}()
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	state, err := queries.RoutingStateGet(ctx, tx)
	if err != nil {
		return nil, err
	}
	prows, err := queries.ProviderList(ctx, tx)
	if err != nil {
		return nil, err
	}
	rrows, err := queries.RoutingRuleList(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	t := &Table{Version: state.Version, Providers: map[string]Provider{}, Rules: map[string][]Rule{}}
	for _, r := range prows {
		p, err := providerFromRow(r)
		if err != nil {
			return nil, err
		}
		t.Providers[p.Name] = p
	}
	for _, r := range rrows {
		weights := make([]int, len(r.Weights))
		for i, w := range r.Weights {
			weights[i] = int(w)
		}
		t.Rules[r.Channel] = append(t.Rules[r.Channel], Rule{
			Channel:  r.Channel,
			Position: int(r.Position),
			Name:     r.Name,
			Match: Match{
				Prefixes:   r.MatchPrefixes,
				Producers:  r.MatchProducers,
				Types:      r.MatchTypes,
				Priorities: r.MatchPriorities,
			},
			Strategy:  r.Strategy,
			Providers: r.Providers,
			Weights:   weights,
		})
	}
	return t, nil
}

// ReadVersion returns routing_state.version: a serve process reloads its
// Table when it differs from the Table's.
func ReadVersion(ctx context.Context, db store.DBTX) (int64, error) {
	s, err := queries.RoutingStateGet(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("read routing version: %w", err)
	}
	return s.Version, nil
}

// OpenCircuits returns the providers whose circuit is open at now (the
// database's clock when now is zero), each with the end of its cool-down.
// A circuit past its cool-down counts as closed. An empty map means none.
func OpenCircuits(ctx context.Context, db store.DBTX, now time.Time) (map[string]time.Time, error) {
	var at *time.Time
	if !now.IsZero() {
		at = &now
	}
	rows, err := queries.ProviderListOpenCircuits(ctx, db, at)
	if err != nil {
		return nil, fmt.Errorf("read open circuits: %w", err)
	}
	out := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		out[r.Provider] = r.OpenUntil
	}
	return out, nil
}

// Table returns the routing table f describes, at version 0: what Load
// would return after f is applied. f must have been checked by Parse.
func (f *File) Table() *Table {
	t := &Table{Providers: map[string]Provider{}, Rules: map[string][]Rule{}}
	for _, p := range f.Providers {
		t.Providers[p.Name] = p.provider()
	}
	for _, ch := range slices.Sorted(maps.Keys(f.Rules)) {
		for i, r := range f.Rules[ch] {
			t.Rules[ch] = append(t.Rules[ch], Rule{
				Channel:   ch,
				Position:  i + 1,
				Name:      r.Name,
				Match:     r.Match.normalized(),
				Strategy:  cmp.Or(r.Strategy, StrategyFailover),
				Providers: nonNil(r.Providers),
				Weights:   nonNil(r.Weights),
			})
		}
	}
	return t
}

// normalized returns m with nil lists made empty, as the database returns
// them.
func (m Match) normalized() Match {
	return Match{
		Prefixes:   nonNil(m.Prefixes),
		Producers:  nonNil(m.Producers),
		Types:      nonNil(m.Types),
		Priorities: nonNil(m.Priorities),
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
