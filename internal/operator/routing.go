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
	in.IsOpenFunc = func(p string) bool { _, ok := open[p]; return ok }
	d, err := t.Pick(in)
	rt := &RoutingTest{Channel: in.Channel, Version: t.Version, Decision: d, Open: open}
	if errors.As(err, &rt.NoRoute) {
		rt.Decision.Explanation.Skipped = rt.NoRoute.Skipped
	} else if err != nil {
		return nil, err
	}
	return rt, nil
}
