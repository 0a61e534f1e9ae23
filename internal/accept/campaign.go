package accept

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// beginner is what acceptCampaigns needs of Accept's db: a pool, a
// connection, or a transaction (where Begin makes a savepoint).
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// campaignKey names a campaign: its producer and its id.
type campaignKey struct{ producer, campaign string }

// acceptCampaigns is Accept of a batch in which some intents name a
// campaign. In one transaction (a savepoint inside the caller's) it joins
// their campaigns first (herald.campaign_join: created if new, with the
// first intent's send_at, and locked FOR SHARE until commit, so that a
// cancel requested meanwhile waits for this accept to commit and then
// finds its records), refuses the intents of a canceled campaign and those
// whose send_at is not their campaign's, and accepts the others as accept
// does. Batches without a campaign never come here and pay nothing of it.
func acceptCampaigns(ctx context.Context, db store.DBTX, vs []*intake.Validated, p Params) ([]Outcome, error) {
	b, ok := db.(beginner)
	if !ok {
		return nil, fmt.Errorf("accept campaign intents: %T cannot begin a transaction", db)
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("accept campaign intents: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // after Commit, a no-op

	var join store.CampaignJoinParams
	if !p.Now.IsZero() {
		join.Now = &p.Now
	}
	for _, v := range vs {
		if v.Intent.Campaign != "" {
			join.Producers = append(join.Producers, v.Intent.Producer)
			join.Campaigns = append(join.Campaigns, v.Intent.Campaign)
			join.SendAts = append(join.SendAts, v.Intent.SendAt)
		}
	}
	rows, err := store.New().CampaignJoin(ctx, tx, join)
	if err != nil {
		return nil, fmt.Errorf("join campaigns: %w", err)
	}
	joined := make(map[campaignKey]store.CampaignJoinRow, len(rows))
	for _, r := range rows {
		joined[campaignKey{r.Producer, r.Campaign}] = r
	}

	out := make([]Outcome, len(vs))
	keep := make([]*intake.Validated, 0, len(vs))
	from := make([]int, 0, len(vs)) // keep[j] is vs[from[j]]
	for i, v := range vs {
		if c := v.Intent.Campaign; c != "" {
			r, ok := joined[campaignKey{v.Intent.Producer, c}]
			switch {
			case !ok:
				return nil, fmt.Errorf("join campaigns: campaign %q of producer %q neither created nor found", c, v.Intent.Producer)
			case r.Canceled:
				out[i].Refused = &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{
					Field: "campaign", Code: heraldtype.CodeCampaignCanceled,
					Message: fmt.Sprintf("campaign %s was canceled: nothing more joins it", c),
				}}}
				continue
			case !r.SendAt.Equal(v.Intent.SendAt):
				out[i].Refused = &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{
					Field: "send_at", Code: heraldtype.CodeInvalidField,
					Message: fmt.Sprintf("campaign %s is scheduled for %s; every intent of it must carry that send_at",
						c, scheduleText(r.SendAt)),
				}}}
				continue
			}
		}
		keep = append(keep, v)
		from = append(from, i)
	}
	got, err := accept(ctx, tx, keep, p)
	if err != nil {
		return nil, err
	}
	for j, o := range got {
		out[from[j]] = o
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("accept campaign intents: commit: %w", err)
	}
	return out, nil
}

// scheduleText is a campaign's send_at for a message: RFC 3339, or "now"
// for none.
func scheduleText(t time.Time) string {
	if t.IsZero() {
		return "now (no send_at)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
