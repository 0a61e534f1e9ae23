package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
)

// seedCampaign submits n one-route intents of producer's campaign, an hour
// ahead, through the public client.
func seedCampaign(t *testing.T, b *opBundle, producer, campaign string, n int) {
	t.Helper()
	c, err := herald.NewClient(b.pool, nil)
	require.NoError(t, err)
	defer c.Close()
	sendAt := time.Now().Add(time.Hour)
	var ins []*herald.Intent
	for i := range n {
		ins = append(ins, &herald.Intent{
			NotificationType: "sale.started", Producer: producer, IdempotencyKey: fmt.Sprintf("%s-%d", campaign, i),
			Audience: herald.Audience{SMS: []string{"+14155550123"}}, Channels: []string{"sms"},
			Content: herald.Content{SMS: &herald.SMSContent{Body: "Spring sale"}}, SendAt: sendAt, Campaign: campaign,
		})
	}
	res, err := c.SubmitMany(context.Background(), ins)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
}

func TestCampaignsCmd_ListShowCancelAudited(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	seedCampaign(t, b, "shop", "spring", 7)
	seedCampaign(t, b, "news", "weekly", 2)

	var list []herald.Campaign
	runJSON(t, b.env, &list, "campaigns", "list")
	require.Len(t, list, 2)
	runJSON(t, b.env, &list, "campaigns", "list", "-producer", "shop")
	require.Len(t, list, 1)
	require.Equal(t, herald.CampaignScheduled, list[0].State)
	require.Equal(t, int64(7), list[0].Pending)
	out, _, err := run(t, b.env, "campaigns", "list")
	require.NoError(t, err)
	require.Contains(t, out, "PRODUCER")
	require.Regexp(t, `shop\s+spring\s+scheduled`, out)

	// herald status names a notification's campaign.
	var id string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT notification_id FROM herald.records WHERE campaign = 'spring' LIMIT 1`).Scan(&id))
	out, _, err = run(t, b.env, "status", id)
	require.NoError(t, err)
	require.Regexp(t, `campaign:\s+spring \(herald campaigns show shop spring\)`, out)

	out, _, err = run(t, b.env, "campaigns", "show", "shop", "spring")
	require.NoError(t, err)
	require.Regexp(t, `state:\s+scheduled`, out)
	require.Regexp(t, `pending:\s+7`, out)

	// Usage errors exit 2 with one line; a missing campaign exits 1.
	for _, args := range [][]string{
		{"campaigns", "cancel", "shop", "spring"},                                       // no -reason
		{"campaigns", "cancel", "--reason", "x", "shop"},                                // one argument
		{"campaigns", "cancel", "--reason", "x", "--batch-size", "0", "shop", "spring"}, // bad batch
		{"campaigns", "show", "shop"},
		{"campaigns", "list", "-limit", "0"},
		{"campaigns", "pause"},
	} {
		_, _, err := run(t, b.env, args...)
		require.Equal(t, 2, exitCode(err), "%v: %v", args, err)
	}
	_, _, err = run(t, b.env, "campaigns", "show", "shop", "autumn")
	require.Equal(t, 1, exitCode(err))
	require.ErrorContains(t, err, "no campaign autumn of shop")
	_, _, err = run(t, b.env, "campaigns", "cancel", "--reason", "x", "shop", "autumn")
	require.Equal(t, 1, exitCode(err))
	out, _, err = run(t, b.env, "campaigns", "cancel", "-h")
	require.NoError(t, err)
	require.Contains(t, out+"", "")

	var res struct {
		Canceled int64           `json:"canceled"`
		Batches  int             `json:"batches"`
		Campaign herald.Campaign `json:"campaign"`
	}
	runJSON(t, b.env, &res, "campaigns", "cancel", "--reason", "sale postponed", "--batch-size", "3", "shop", "spring")
	require.Equal(t, int64(7), res.Canceled)
	require.Equal(t, 3, res.Batches)
	require.Equal(t, herald.CampaignCanceled, res.Campaign.State)
	require.Equal(t, "tester", res.Campaign.CanceledBy, "$USER by default")
	require.Equal(t, "sale postponed", res.Campaign.CancelReason)
	var audited int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT sum(affected) FROM herald.audit_log
		WHERE action = 'campaign_cancel' AND actor = 'tester' AND reason = 'sale postponed'`).Scan(&audited))
	require.Equal(t, 7, audited)

	// Again: nothing more to cancel, said plainly; the other campaign is untouched.
	out, _, err = run(t, b.env, "campaigns", "cancel", "--reason", "again", "shop", "spring")
	require.NoError(t, err)
	require.Contains(t, out, "shop/spring: canceled 0 route(s)")
	require.Regexp(t, `state:\s+canceled`, out)
	runJSON(t, b.env, &list, "campaigns", "list", "-producer", "news")
	require.Equal(t, int64(2), list[0].Pending)
}
