package operator

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/internal/routing"
)

// RoutingTest is what routing decides for one route now, as `herald
// routing test` shows it: the decision on Channel at routing Version, the
// circuits Open at the time (provider to until when), and NoRoute when no
// rule of the channel matched (Decision then holds the rules skipped only).
type RoutingTest struct {
	Channel  string
	Version  int64
	Decision routing.Decision
	Open     map[string]time.Time
	NoRoute  *routing.NoRouteError
}

// TestRouting says which provider would take the route in describes, and
// why, reading the rules as applied and the open circuits as serve does.
// A route no rule matches is not an error here: it sets NoRoute.
func (o *Operator) TestRouting(ctx context.Context, in routing.PickInput) (*RoutingTest, error) {
	t, err := routing.Load(ctx, o.pool)
	if err != nil {
		return nil, err
	}
	open, err := routing.OpenCircuits(ctx, o.pool, time.Time{})
	if err != nil {
		return nil, err
	}
	// Routing passes over a provider the operator took out (draining,
	// disabled) as over an open circuit, as the dispatcher does.
	in.IsOpenFunc = func(p string) bool { _, ok := open[p]; return ok || !t.Providers[p].TakesNew() }
	d, err := t.Pick(in)
	rt := &RoutingTest{Channel: in.Channel, Version: t.Version, Decision: d, Open: open}
	if errors.As(err, &rt.NoRoute) {
		rt.Decision.Explanation.Skipped = rt.NoRoute.Skipped
	} else if err != nil {
		return nil, err
	}
	return rt, nil
}

// RoutingApplied is what ApplyRouting did (or, for a dry run, would do):
// the changes, and the routing version after it.
type RoutingApplied struct {
	DryRun  bool             `json:"dry_run"`
	Changes []routing.Change `json:"changes"`
	Version int64            `json:"version"`
}

// ApplyRouting makes the database's providers and rules f's, in one
// audited transaction (routing.Apply, as actor, with opts), and reads the
// routing version after it. Applying what is already there changes
// nothing and writes nothing.
func (o *Operator) ApplyRouting(ctx context.Context, f *routing.File, actor string, opts *routing.ApplyOpts) (*RoutingApplied, error) {
	changes, err := routing.Apply(ctx, o.pool, f, actor, opts)
	if err != nil {
		return nil, err
	}
	version, err := routing.ReadVersion(ctx, o.pool)
	if err != nil {
		return nil, err
	}
	return &RoutingApplied{DryRun: opts != nil && opts.DryRun, Changes: changes, Version: version}, nil
}
