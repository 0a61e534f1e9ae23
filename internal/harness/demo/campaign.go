package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// CampaignPart is the summary's campaign part: the
// run's producer submits a campaign, scheduled an hour ahead, in one
// SubmitMany; the campaign is shown as scheduled, canceled in batches,
// shown again, and an intent submitted into it afterwards is refused. Its
// notifications' request_id starts with "campaign:" and the run id, so the
// run's own counts leave them out.
type CampaignPart struct {
	Producer string `json:"producer"`
	Campaign string `json:"campaign"`
	// Intents were submitted, each with a route by SMS and one by e-mail.
	Intents int `json:"intents"`
	// Scheduled is the campaign as it stood after the submit; Canceled
	// after the cancel.
	Scheduled *heraldtype.Campaign `json:"scheduled"`
	Canceled  *heraldtype.Campaign `json:"canceled"`
	// CanceledRoutes and Batches are what the cancel said it did; AuditRows
	// and AuditedRoutes what the audit log says.
	CanceledRoutes int64 `json:"canceled_routes"`
	Batches        int   `json:"batches"`
	AuditRows      int64 `json:"audit_rows"`
	AuditedRoutes  int64 `json:"audited_routes"`
	// LateRefusal is the client's answer to an intent submitted into the
	// campaign after its cancel.
	LateRefusal string `json:"late_refusal"`
}

// campaignIntents is the size of the demo's campaign, and campaignBatch
// its cancel's batch size: several batches, each its own transaction.
const (
	campaignIntents = 40
	campaignBatch   = 15
)

// runCampaign runs the campaign part through client, as producer.
func runCampaign(ctx context.Context, pool *pgxpool.Pool, client Client, producer string, w *workload) (*CampaignPart, error) {
	part := &CampaignPart{Producer: producer, Campaign: "spring-sale-" + w.runID[len(w.runID)-6:], Intents: campaignIntents}
	sendAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	intent := func(i int) *intake.Intent {
		return &intake.Intent{
			NotificationType: "sale.started",
			Producer:         producer,
			IdempotencyKey:   fmt.Sprintf("%s-%d", part.Campaign, i),
			Audience:         intake.Audience{UserIDs: []string{w.userID(1 + i%w.users)}},
			Channels:         []string{"sms", "email"},
			Content: intake.Content{
				SMS:   &intake.SMSContent{Body: "Spring sale: 20% off everything, tomorrow only."},
				Email: &intake.EmailContent{Subject: "Spring sale", Text: "20% off everything, tomorrow only."},
			},
			SendAt:    sendAt,
			Priority:  heraldtype.PriorityBulk,
			RequestID: fmt.Sprintf("campaign:%s:%d", w.runID, i),
			Campaign:  part.Campaign,
		}
	}
	ins := make([]*intake.Intent, campaignIntents)
	for i := range ins {
		ins[i] = intent(i)
	}
	res, err := client.SubmitMany(ctx, ins)
	if err != nil {
		return nil, fmt.Errorf("submit the campaign: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("submit the campaign: %w", r.Err)
		}
	}
	if part.Scheduled, err = client.Campaign(ctx, producer, part.Campaign); err != nil {
		return nil, fmt.Errorf("read the campaign: %w", err)
	}
	if part.CanceledRoutes, part.Batches, err = client.CancelCampaign(ctx, producer, part.Campaign,
		"spring sale postponed", campaignBatch); err != nil {
		return nil, fmt.Errorf("cancel the campaign: %w", err)
	}
	if part.Canceled, err = client.Campaign(ctx, producer, part.Campaign); err != nil {
		return nil, fmt.Errorf("read the campaign: %w", err)
	}
	res, err = client.SubmitMany(ctx, []*intake.Intent{intent(campaignIntents)})
	if err != nil {
		return nil, fmt.Errorf("submit into the canceled campaign: %w", err)
	}
	var verr *heraldtype.ValidationError
	if !errors.As(res[0].Err, &verr) {
		return nil, fmt.Errorf("submit into the canceled campaign: want a refusal, got %v", res[0].Err)
	}
	part.LateRefusal = verr.Error()
	a, err := benchstore.New().DemoCampaignCancelAudit(ctx, pool, benchstore.DemoCampaignCancelAuditParams{
		Producer: producer, Campaign: part.Campaign})
	if err != nil {
		return nil, fmt.Errorf("read the campaign's audit rows: %w", err)
	}
	part.AuditRows, part.AuditedRoutes = a.AuditRows, a.AuditedRoutes
	return part, nil
}

// writeCampaign prints the campaign part of the summary.
func writeCampaign(out io.Writer, c *CampaignPart, row func(name string, v any, note string)) {
	s, x := c.Scheduled, c.Canceled
	fmt.Fprintf(out, "\ncampaign %s of %s: %d intents, one SubmitMany, send_at %s\n", c.Campaign, c.Producer, c.Intents,
		s.SendAt.UTC().Format(time.RFC3339))
	row("scheduled", s.Routes, fmt.Sprintf("routes, state %s: %d pending, %d published", s.State, s.Pending, s.Published))
	row("canceled", c.CanceledRoutes, fmt.Sprintf("routes in %d batches of up to %d notifications, each its own transaction; state %s",
		c.Batches, campaignBatch, x.State))
	row("audited", c.AuditedRoutes, fmt.Sprintf("routes in %d herald.audit_log rows (action campaign_cancel)", c.AuditRows))
	row("late intent", "refused", c.LateRefusal)
	fmt.Fprintf(out, "  see it: herald campaigns show %s %s\n", c.Producer, c.Campaign)
}
