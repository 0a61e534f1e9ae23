package herald_test

// Campaigns as each role: a producer submits into,
// reads and cancels its own campaigns only, through the Go client and
// through SQL; an operator reads and cancels any; an auditor reads all
// and cancels none. The SQL here is what each login would type in psql.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
)

// submitCampaign stores n one-route intents of producer's campaign through
// c, scheduled an hour ahead, and returns the schedule.
func submitCampaign(t *testing.T, c *herald.Client, producer, campaign string, n int) time.Time {
	t.Helper()
	sendAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	ins := make([]*herald.Intent, n)
	for i := range ins {
		ins[i] = &herald.Intent{
			NotificationType: "sale.started",
			Producer:         producer,
			IdempotencyKey:   fmt.Sprintf("%s-%d", campaign, i),
			Audience:         herald.Audience{Email: []string{fmt.Sprintf("c%d@example.com", i)}},
			Channels:         []string{"email"},
			Content:          herald.Content{Email: &herald.EmailContent{Subject: "Sale", Text: "Spring sale."}},
			SendAt:           sendAt,
			Campaign:         campaign,
		}
	}
	res, err := c.SubmitMany(context.Background(), ins)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	return sendAt
}

func TestCampaigns_ProducerCancelsOnlyOwn(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	submitCampaign(t, b.clientA, b.nameA, "spring", 3)
	submitCampaign(t, b.clientB, b.nameB, "spring", 2)

	// Get names a notification's campaign.
	var id string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT notification_id FROM herald.records WHERE producer = $1 LIMIT 1`, b.nameA).Scan(&id))
	n, err := b.clientA.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "spring", n.Campaign)

	// Reading: its own only, by the client and by the view.
	mine, err := b.clientA.Campaigns(ctx, nil)
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Equal(t, b.nameA, mine[0].Producer)
	require.Equal(t, herald.CampaignScheduled, mine[0].State)
	require.Equal(t, int64(3), mine[0].Pending)
	_, err = b.clientA.Campaign(ctx, b.nameB, "spring")
	require.ErrorIs(t, err, herald.ErrNotFound, "another's campaign is not found, as an unknown one")
	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.campaign_progress_view`))
	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.campaigns`))
	require.Equal(t, 2, countAs(t, b.asB, `SELECT routes FROM herald.campaign_progress_view WHERE campaign = 'spring'`))

	// Writing the table directly: no privilege at all.
	_, err = b.asA.Exec(ctx, `UPDATE herald.campaigns SET canceled_at = now()`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.campaigns (producer, campaign, created_at) VALUES ($1, 'x', now())`, b.nameB)
	requireSQLState(t, err, insufficientPrivilege)
	// Joining another's campaign: refused, as submitting in its name is.
	_, err = b.asA.Exec(ctx, `SELECT * FROM herald.campaign_join(ARRAY[$1], ARRAY['spring'], ARRAY[NULL::timestamptz])`, b.nameB)
	requireSQLState(t, err, insufficientPrivilege)

	// Canceling another's: not found, by the client and by SQL; nothing moves.
	_, err = b.clientA.CancelCampaign(ctx, b.nameB, "spring", &herald.CancelCampaignOpts{Reason: "x"})
	require.ErrorIs(t, err, herald.ErrNotFound)
	_, err = b.asA.Exec(ctx, `SELECT * FROM herald.campaign_cancel_batch($1, 'spring', 'svc-a', 'x')`, b.nameB)
	requireSQLState(t, err, noDataFound)
	_, err = b.asA.Exec(ctx, `CALL herald.campaign_cancel($1, 'spring', 'svc-a', 'x')`, b.nameB)
	requireSQLState(t, err, noDataFound)
	require.Equal(t, 2, countAs(t, b.admin, `SELECT pending FROM herald.campaign_progress_view WHERE producer = $1`, b.nameB))

	// Its own: by the client, audited with the actor and the login.
	res, err := b.clientA.CancelCampaign(ctx, b.nameA, "spring", &herald.CancelCampaignOpts{Reason: "postponed"})
	require.NoError(t, err)
	require.True(t, res.Done)
	require.Equal(t, int64(3), res.Canceled)
	var actor, login string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT actor, login FROM herald.audit_log WHERE action = 'campaign_cancel'
		AND filter ->> 'producer' = $1`, b.nameA).Scan(&actor, &login))
	require.Equal(t, "svc-a", actor)
	require.Equal(t, b.nameA, login)
	c, err := b.clientA.Campaign(ctx, b.nameA, "spring")
	require.NoError(t, err)
	require.Equal(t, herald.CampaignCanceled, c.State)
	require.Equal(t, int64(3), c.Canceled)

	// Nothing joins it any more: Submit refuses with campaign_canceled.
	_, err = b.clientA.Submit(ctx, &herald.Intent{
		NotificationType: "sale.started", Producer: b.nameA, IdempotencyKey: "late",
		Audience: herald.Audience{Email: []string{"late@example.com"}}, Channels: []string{"email"},
		Content: herald.Content{Email: &herald.EmailContent{Subject: "Sale", Text: "Spring sale."}},
		SendAt:  c.SendAt, Campaign: "spring",
	})
	var verr *herald.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, herald.CodeCampaignCanceled, verr.Code())
	require.Equal(t, 3, countAs(t, b.admin, `SELECT count(*) FROM herald.records WHERE producer = $1`, b.nameA))

	// B cancels its own with psql's procedure.
	_, err = b.asB.Exec(ctx, `CALL herald.campaign_cancel($1, 'spring', 'svc-b', 'by hand')`, b.nameB)
	require.NoError(t, err)
	require.Equal(t, 2, countAs(t, b.admin, `SELECT canceled FROM herald.campaign_progress_view WHERE producer = $1`, b.nameB))
}

func TestCampaigns_OperatorCancelsAuditorReads(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	submitCampaign(t, b.clientA, b.nameA, "spring", 2)
	submitCampaign(t, b.clientB, b.nameB, "autumn", 2)

	// The auditor reads every campaign and cancels none.
	require.Equal(t, 2, countAs(t, b.asAud, `SELECT count(*) FROM herald.campaign_progress_view`))
	require.Equal(t, 2, countAs(t, b.asAud, `SELECT count(*) FROM herald.campaigns`))
	_, err := b.asAud.Exec(ctx, `SELECT * FROM herald.campaign_cancel_batch($1, 'spring', 'aud', 'x')`, b.nameA)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asAud.Exec(ctx, `CALL herald.campaign_cancel($1, 'spring', 'aud', 'x')`, b.nameA)
	requireSQLState(t, err, insufficientPrivilege)
	aud, err := herald.NewClient(b.asAud, nil)
	require.NoError(t, err)
	defer aud.Close()
	list, err := aud.Campaigns(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list, 2)
	_, err = aud.CancelCampaign(ctx, b.nameA, "spring", nil)
	require.ErrorIs(t, err, herald.ErrForbidden)

	// The operator reads and cancels anyone's, and may not submit into one.
	op, err := herald.NewClient(b.asOp, &herald.Config{Actor: "ops"})
	require.NoError(t, err)
	defer op.Close()
	list, err = op.Campaigns(ctx, &herald.CampaignsOpts{Producer: b.nameB})
	require.NoError(t, err)
	require.Len(t, list, 1)
	res, err := op.CancelCampaign(ctx, b.nameB, "autumn", &herald.CancelCampaignOpts{Reason: "abuse"})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Canceled)
	_, err = b.asOp.Exec(ctx, `SELECT * FROM herald.campaign_join(ARRAY[$1], ARRAY['spring'], ARRAY[NULL::timestamptz])`, b.nameA)
	requireSQLState(t, err, insufficientPrivilege)
	require.Equal(t, 2, countAs(t, b.admin, `SELECT pending FROM herald.campaign_progress_view WHERE producer = $1`, b.nameA),
		"the other producer's campaign is untouched")
}
