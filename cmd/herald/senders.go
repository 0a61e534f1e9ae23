package main

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "senders",
		summary: "list, approve or revoke the senders (from_sender) each producer's SMS may show, audited",
		subs: []*command{
			{name: "list", summary: "list the approved senders, by producer", run: sendersList, readOnly: true,
				example: "herald senders list -producer shop --json"},
			{name: "approve", summary: "approve a sender for a producer's SMS", run: sendersChange("approve"),
				example: "herald senders approve -reason 'registration 2291' shop HERALDSHOP"},
			{name: "revoke", summary: "revoke a producer's sender (-reason required)", run: sendersChange("revoke"),
				example: "herald senders revoke -reason 'brand retired' shop HERALDSHOP"},
		},
	})
}

func sendersList(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("senders list", &g)
	producer := fs.String("producer", "", "only this producer's senders")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	list, err := op.Senders(ctx, *producer)
	if err != nil {
		return err
	}
	return output(m, g.JSON, list, render.Senders)
}

// sendersChange approves (-reason optional: the registration's reference)
// or revokes (-reason required) PRODUCER's SENDER, audited.
func sendersChange(action string) func(context.Context, *Main, []string) error {
	return func(ctx context.Context, m *Main, args []string) error {
		var g globalFlags
		var a auditFlags
		fs := m.newJSONFlagSet("senders "+action, &g)
		a.bind(fs, m, map[bool]string{true: " (required)", false: " (optional)"}[action == "revoke"])
		pos, err := m.parseArgs(fs, &g, args, "PRODUCER SENDER")
		if err != nil || len(pos) != 2 {
			return cmpOrUsage(err, action+" takes two arguments: PRODUCER SENDER")
		}
		if _, err := operator.ParseProducer(pos[0]); err != nil {
			return usageError{err}
		} else if _, err := operator.ParseSender(pos[1]); err != nil {
			return usageError{err}
		} else if err := a.check(action == "revoke"); err != nil {
			return err
		}
		op, err := m.operatorFor(ctx, &g, 0)
		if err != nil {
			return err
		}
		change := op.ApproveSender
		if action == "revoke" {
			change = op.RevokeSender
		}
		res, err := change(ctx, pos[0], pos[1], a.actor, a.reason)
		if err == nil && action == "revoke" && !res.Changed {
			err = fmt.Errorf("senders revoke: %s is not an approved sender of %s", pos[1], pos[0])
		}
		if err != nil {
			return err
		}
		return output(m, g.JSON, res, render.SenderChange)
	}
}
