package main

import (
	"context"
	"strings"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "routing",
		summary: "list the routing rules, or test which provider a destination would get and why",
		subs: []*command{
			{name: "list", summary: "list each channel's rules, in order", run: routingList, readOnly: true,
				example: "herald routing list"},
			{name: "test", summary: "say which provider a route to a destination would get now, and why", run: routingTest, readOnly: true,
				example: "herald routing test -producer shop +14155550100"},
		},
	})
}

// routingList prints each channel's rules, in order.
func routingList(ctx context.Context, m *Main, args []string) error {
	return routingShow(ctx, m, "routing list", args, render.RulesJSON, render.Rules)
}

// routingTest says which provider a route to a destination would get now,
// and why: the rules as applied and the circuits as serve sees them.
func routingTest(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("routing test", &g)
	var a operator.RoutingTestArgs
	fs.StringVar(&a.Channel, "channel", "", "the route's channel: "+strings.Join(intake.Channels(), ", ")+" (default: from DESTINATION: +digits sms, an address email, a URL webhook)")
	fs.StringVar(&a.Producer, "producer", "", "the notification's producer")
	fs.StringVar(&a.NotificationType, "type", "", "the notification's type")
	fs.StringVar(&a.Priority, "priority", string(heraldtype.PriorityTransactional), "the route's priority: transactional or bulk")
	fs.StringVar(&a.Tried, "tried", "", "the providers of the route's earlier attempts, comma-separated, the last having just failed")
	var err error
	if a.Destination, err = m.parseOneArg(fs, &g, args, "routing test", "DESTINATION"); err != nil {
		return err
	}
	in, err := usage(a.PickInput())
	if err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	rt, err := op.TestRouting(ctx, in)
	if err != nil {
		return err
	}
	if g.JSON {
		err = render.RoutingTestJSON(m.Stdout, rt)
	} else {
		render.RoutingDecision(m.Stdout, rt)
	}
	if err == nil && rt.NoRoute != nil {
		return rt.NoRoute // exit 1, with what no rule matched
	}
	return err
}
