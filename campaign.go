package herald

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/campaign"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// Campaigns: intents grouped under Intent.Campaign,
// scheduled, shown and canceled as one. See "Campaigns" in the package
// documentation.

// Campaign is one campaign with its progress: Producer and Campaign (its
// id), its State, its SendAt (zero: at once), when it was created, its
// routes counted by where they stand (Pending, Published, Delivered, Dead,
// Canceled, Skipped, of Routes in Notifications) and, once canceled, who
// canceled it, why and when (CancelRequestedAt, CanceledBy, CancelReason,
// CanceledAt).
type Campaign = heraldtype.Campaign

// CampaignsOpts are Client.Campaigns' optional arguments.
type CampaignsOpts struct {
	// Producer keeps to one producer's campaigns; "" means every campaign
	// the login may see (a producer's login sees its own only).
	Producer string
	// Limit bounds how many are returned, newest first; 0 means 100.
	Limit int
}

// CancelCampaignOpts are Client.CancelCampaign's optional arguments.
type CancelCampaignOpts struct {
	// Actor is who cancels, for the audit log; "" means Config.Actor.
	Actor string
	// Reason is why, for the audit log.
	Reason string
	// BatchSize is how many of the campaign's notifications one batch (one
	// short transaction) covers; 0 means 5,000.
	BatchSize int
}

// CancelCampaignResult is what Client.CancelCampaign did.
type CancelCampaignResult struct {
	// Producer and Campaign name the campaign.
	Producer string
	Campaign string
	// Canceled is how many routes this call canceled; Batches how many
	// batches it ran.
	Canceled int64
	Batches  int
	// Done reports that every route of the campaign is final: false only
	// with an error, and then calling CancelCampaign again resumes.
	Done bool
}

// Campaign returns producer's campaign with its progress. It returns
// ErrNotFound if there is no such campaign or the login may not see it (a
// producer's login sees only its own).
func (c *Client) Campaign(ctx context.Context, producer, id string) (*Campaign, error) {
	got, err := campaign.Get(ctx, c.pool, producer, id)
	if errors.Is(err, campaign.ErrNotFound) {
		return nil, ErrNotFound
	}
	return got, err
}

// Campaigns returns the campaigns the login may see, newest first, with
// their progress. Each campaign's routes are counted: for campaigns of
// millions of routes, ask for one producer's, or one campaign (Campaign).
// opts may be nil.
func (c *Client) Campaigns(ctx context.Context, opts *CampaignsOpts) ([]Campaign, error) {
	if opts == nil {
		opts = &CampaignsOpts{}
	}
	return campaign.List(ctx, c.pool, opts.Producer, opts.Limit)
}

// CancelCampaign cancels every route of producer's campaign that has not
// gone out (pending, or failed and waiting to be retried), in batches,
// each a short transaction of its own, so that canceling a campaign of a
// million routes holds no long transaction and other campaigns' deliveries
// do not wait for it. Each batch writes an audit_log row (action
// "campaign_cancel") with opts.Actor (or Config.Actor) and, whatever the
// actor says, the database login. From the first batch on, no intent joins
// the campaign: Submit refuses one with CodeCampaignCanceled.
//
// A route that a dispatcher is delivering right now is left to finish:
// it ends published, or failed and is then canceled. So a route of the
// campaign is either delivered or canceled, never both, and CancelCampaign
// returns once every route of it is final (waiting for deliveries in
// flight, at most their lease).
//
// It returns ErrNotFound if there is no such campaign or the login may not
// cancel it (a producer's login may cancel only its own; an operator's or
// the engine's, any), and an error matching ErrForbidden for a login that
// may cancel none (an auditor's). If ctx ends first, it returns what it did with ctx's
// error; calling it again resumes where it stopped. Canceling a canceled
// campaign changes nothing. opts may be nil.
func (c *Client) CancelCampaign(ctx context.Context, producer, id string, opts *CancelCampaignOpts) (*CancelCampaignResult, error) {
	if opts == nil {
		opts = &CancelCampaignOpts{}
	}
	co := campaign.CancelOpts{Actor: cmp.Or(opts.Actor, c.actor), Reason: opts.Reason, BatchSize: opts.BatchSize}
	if c.now != nil {
		co.NowFunc = c.now
	}
	began := time.Now()
	res, err := campaign.Cancel(ctx, c.pool, producer, id, co)
	if errors.Is(err, campaign.ErrNotFound) {
		return nil, ErrNotFound
	}
	out := &CancelCampaignResult{Producer: producer, Campaign: id}
	if res != nil {
		out.Canceled, out.Batches, out.Done = res.Canceled, res.Batches, res.Done
	}
	if err != nil {
		return out, fmt.Errorf("cancel campaign: %w", forbidden(err))
	}
	c.logger.DebugContext(ctx, "campaign canceled", slog.String("campaign", id), slog.Int64("routes", out.Canceled),
		slog.Int("batches", out.Batches), slog.Duration("took", time.Since(began)))
	return out, nil
}
