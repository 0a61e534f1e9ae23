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
		name:    "campaigns",
		summary: "list, show or cancel campaigns: intents grouped under a producer's campaign id",
		subs: []*command{
			{name: "list", summary: "list the campaigns, newest first", run: campaignsList, readOnly: true, replicaReads: true,
				example: "herald campaigns list -producer shop"},
			{name: "show", summary: "show one campaign's counts", run: campaignsShow, readOnly: true, replicaReads: true,
				example: "herald campaigns show shop black-friday"},
			{name: "cancel", summary: "cancel every route of a campaign not delivered yet (audited, resumable)", run: campaignsCancel,
				example: "herald campaigns cancel -reason 'sale postponed' shop black-friday"},
		},
	})
}

// client connects and returns a client acting as actor: cancel and the
// campaigns commands go through the public client, as a service would.
func (m *Main) client(ctx context.Context, g *globalFlags, actor string) (*herald.Client, error) {
	pool, err := m.pool(ctx, g)
	if err != nil {
		return nil, err
	}
	return herald.NewClient(pool, &herald.Config{Actor: actor})
}

func campaignsList(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("campaigns list", &g)
	var opts herald.CampaignsOpts
	fs.StringVar(&opts.Producer, "producer", "", "only this producer's campaigns")
	fs.IntVar(&opts.Limit, "limit", 100, "at most this many, newest first (1 to 10000)")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if opts.Limit < 1 || opts.Limit > 10000 {
		return usageError{fmt.Errorf("invalid -limit %d: want 1 to 10000", opts.Limit)}
	}
	c, err := m.client(ctx, &g, "")
	if err != nil {
		return err
	}
	list, err := c.Campaigns(ctx, &opts)
	if err != nil {
		return err
	}
	return output(m, g.JSON, list, render.Campaigns)
}

// campaignFound names a campaign that does not exist (or that the login
// may not see) in the command's one-line failure.
func campaignFound(err error, what string, pos []string) error {
	if errors.Is(err, herald.ErrNotFound) {
		return fmt.Errorf("campaigns %s: no campaign %s of %s", what, pos[1], pos[0])
	}
	return err
}

func campaignsShow(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("campaigns show", &g)
	pos, err := m.parseArgs(fs, &g, args, "PRODUCER CAMPAIGN")
	if err != nil || len(pos) != 2 {
		return cmpOrUsage(err, "show takes two arguments: PRODUCER CAMPAIGN")
	}
	c, err := m.client(ctx, &g, "")
	if err != nil {
		return err
	}
	got, err := c.Campaign(ctx, pos[0], pos[1])
	if err != nil {
		return campaignFound(err, "show", pos)
	}
	return output(m, g.JSON, got, render.Campaign)
}

// campaignsCancel cancels through the public client: batches of short
// transactions, audited with -actor and -reason. Interrupted (Ctrl-C), it
// says how far it got; running it again resumes.
func campaignsCancel(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("campaigns cancel", &g)
	var a auditFlags
	a.bind(fs, m, " (required)")
	batch := fs.Int("batch-size", 5000, "notifications per batch, each batch one short transaction")
	pos, err := m.parseArgs(fs, &g, args, "PRODUCER CAMPAIGN")
	if err != nil || len(pos) != 2 {
		return cmpOrUsage(err, "cancel takes two arguments: PRODUCER CAMPAIGN")
	}
	if err := a.check(true); err != nil {
		return err
	}
	if *batch < 1 {
		return usageError{fmt.Errorf("invalid -batch-size %d: want at least 1", *batch)}
	}
	c, err := m.client(ctx, &g, a.actor)
	if err != nil {
		return err
	}
	res, err := c.CancelCampaign(ctx, pos[0], pos[1], &herald.CancelCampaignOpts{Actor: a.actor, Reason: a.reason, BatchSize: *batch})
	if err != nil && res != nil && res.Batches > 0 {
		return fmt.Errorf("campaigns cancel: stopped after %d batch(es), %d route(s) canceled; run it again to resume: %w",
			res.Batches, res.Canceled, err)
	}
	if err != nil {
		return campaignFound(err, "cancel", pos)
	}
	got, err := c.Campaign(context.WithoutCancel(ctx), pos[0], pos[1])
	if err != nil {
		return err
	}
	return output(m, g.JSON, &render.CampaignCancellation{Canceled: res.Canceled, Batches: res.Batches, Campaign: got},
		render.CampaignCanceled)
}

// cmpOrUsage returns err if it is not nil, else a usage error saying msg.
func cmpOrUsage(err error, msg string) error {
	if err != nil {
		return err
	}
	return usageError{errors.New(msg)}
}
