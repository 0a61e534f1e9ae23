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
		run: withSubcommands("campaigns", subcommandFunc{"list", campaignsList}, subcommandFunc{"show", campaignsShow},
			subcommandFunc{"cancel", campaignsCancel}),
	})
}

// campaignClient connects and returns a client acting as actor; the
// campaigns commands go through the public client, as a service would.
func (m *Main) campaignClient(ctx context.Context, g *globalFlags, actor string) (*herald.Client, error) {
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
	c, err := m.campaignClient(ctx, &g, "")
	if err != nil {
		return err
	}
	list, err := c.Campaigns(ctx, &opts)
	if err != nil {
		return err
	}
	return output(m, g.JSON, list, render.Campaigns)
}

// campaignArgs parses the two arguments of show and cancel: the producer
// and the campaign id.
func campaignArgs(pos []string, what string) (string, string, error) {
	if len(pos) != 2 {
		return "", "", usageError{fmt.Errorf("%s takes two arguments: PRODUCER CAMPAIGN", what)}
	}
	return pos[0], pos[1], nil
}

func campaignsShow(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("campaigns show", &g)
	pos, err := m.parseArgs(fs, &g, args, "PRODUCER CAMPAIGN")
	if err != nil {
		return err
	}
	producer, id, err := campaignArgs(pos, "show")
	if err != nil {
		return err
	}
	c, err := m.campaignClient(ctx, &g, "")
	if err != nil {
		return err
	}
	got, err := c.Campaign(ctx, producer, id)
	if errors.Is(err, herald.ErrNotFound) {
		return fmt.Errorf("campaigns show: no campaign %s of %s", id, producer)
	}
	if err != nil {
		return err
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
	if err != nil {
		return err
	}
	producer, id, err := campaignArgs(pos, "cancel")
	if err != nil {
		return err
	}
	if err := a.check(true); err != nil {
		return err
	}
	if *batch < 1 {
		return usageError{fmt.Errorf("invalid -batch-size %d: want at least 1", *batch)}
	}
	c, err := m.campaignClient(ctx, &g, a.actor)
	if err != nil {
		return err
	}
	res, err := c.CancelCampaign(ctx, producer, id, &herald.CancelCampaignOpts{Actor: a.actor, Reason: a.reason, BatchSize: *batch})
	if errors.Is(err, herald.ErrNotFound) {
		return fmt.Errorf("campaigns cancel: no campaign %s of %s", id, producer)
	}
	if err != nil {
		if res != nil {
			return fmt.Errorf("campaigns cancel: stopped after %d batch(es), %d route(s) canceled; run it again to resume: %w",
				res.Batches, res.Canceled, err)
		}
		return err
	}
	got, err := c.Campaign(context.WithoutCancel(ctx), producer, id)
	if err != nil {
		return err
	}
	return output(m, g.JSON, &render.CampaignCancellation{Canceled: res.Canceled, Batches: res.Batches, Campaign: got},
		render.CampaignCanceled)
}
