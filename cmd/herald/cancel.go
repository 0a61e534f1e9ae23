package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "cancel",
		summary: "cancel the routes of one notification that are not delivered yet (audited)",
		example: "herald cancel -reason 'sent by mistake' 0192f1c2-3b4a-7d5e-8f60-123456789abc",
		run:     runCancel,
	})
}

// runCancel cancels through the public client, as a service would: the
// same statement, the same audit row (actor and reason), the same answer
// for a notification that does not exist.
func runCancel(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("cancel", &g)
	var a auditFlags
	a.bind(fs, m, " (required)")
	arg, err := m.parseOneArg(fs, &g, args, "cancel", "NOTIFICATION_ID")
	if err != nil {
		return err
	}
	id, err := parseNotificationID(arg)
	if err != nil {
		return err
	}
	if err := a.check(true); err != nil {
		return err
	}
	client, err := m.client(ctx, &g, a.actor)
	if err != nil {
		return err
	}
	res, err := client.Cancel(ctx, id, &herald.CancelOpts{Actor: a.actor, Reason: a.reason})
	if errors.Is(err, herald.ErrNotFound) {
		return fmt.Errorf("cancel %s: no such notification", id)
	}
	if err != nil {
		return err
	}
	out := &render.Cancellation{NotificationID: res.NotificationID, Canceled: []render.CanceledRoute{}}
	for _, r := range res.Canceled {
		out.Canceled = append(out.Canceled, render.CanceledRoute{RouteID: r.RouteID, Channel: string(r.Channel)})
	}
	return output(m, g.JSON, out, render.Canceled)
}
