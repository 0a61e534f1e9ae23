package herald_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
)

// campaignBatch returns n one-route intents of producer auth's campaign
// (none for ""),
// keys prefixed with prefix, scheduled at sendAt.
func campaignBatch(prefix, campaign string, n int, sendAt time.Time) []*herald.Intent {
	out := make([]*herald.Intent, n)
	for i := range out {
		out[i] = smallIntent(i)
		out[i].IdempotencyKey = fmt.Sprintf("%s-%d", prefix, i)
		out[i].Campaign = campaign
		out[i].SendAt = sendAt
	}
	return out
}

func TestClient_SubmitManyNoCampaignOneStatement(t *testing.T) {
	t.Parallel()
	// The content rules are read by the warm-up and not again within the
	// hour, so a slow machine cannot put a reread inside the counts below.
	// Every submit's wake-up hint rides its own insert (no debounce): a
	// submit within 5 ms of the last would otherwise leave a trailing hint,
	// a statement of the waker's, that a fast machine counts below.
	b := setup(t, func(c *herald.Config) {
		c.ContentRulesMaxAge = time.Hour
		c.NotifyDebounce = -1
	})
	ctx := context.Background()

	_, err := b.client.SubmitMany(ctx, campaignBatch("warm", "", 1, time.Time{})) // the connection's start-up
	require.NoError(t, err)
	q0, w0 := b.queries.Load(), b.writes.Load()
	_, err = b.client.SubmitMany(ctx, campaignBatch("plain", "", 10, time.Time{}))
	require.NoError(t, err)
	require.Equal(t, int64(1), b.queries.Load()-q0, "one statement, as before campaigns")
	require.Equal(t, int64(1), b.writes.Load()-w0, "one round trip")

	q0 = b.queries.Load()
	res, err := b.client.SubmitMany(ctx, campaignBatch("camp", "spring", 10, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	require.Equal(t, int64(4), b.queries.Load()-q0, "begin, campaign_join, the insert, commit")
}

// Inside the caller's transaction the campaign is joined in a savepoint:
// it exists, with its intents, only if the caller commits.
func TestClient_SubmitManyTxCampaignFollowsCaller(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	sendAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	res, err := b.client.SubmitManyTx(ctx, tx, campaignBatch("a", "spring", 3, sendAt))
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.NoError(t, tx.Rollback(ctx))
	_, err = b.client.Campaign(ctx, "auth", "spring")
	require.ErrorIs(t, err, herald.ErrNotFound, "rolled back with the caller")
	require.Zero(t, b.records(t))

	tx, err = b.pool.Begin(ctx)
	require.NoError(t, err)
	res, err = b.client.SubmitManyTx(ctx, tx, campaignBatch("a", "spring", 3, sendAt))
	require.NoError(t, err)
	require.NoError(t, res[2].Err)
	require.NoError(t, tx.Commit(ctx))
	c, err := b.client.Campaign(ctx, "auth", "spring")
	require.NoError(t, err)
	require.Equal(t, int64(3), c.Notifications)
	require.True(t, sendAt.Equal(c.SendAt))
	require.Equal(t, herald.CampaignScheduled, c.State)

	// A bad campaign id is the intent's field error, before anything is sent.
	res, err = b.client.SubmitMany(ctx, campaignBatch("b", "spring sale", 1, sendAt))
	require.NoError(t, err)
	var verr *herald.ValidationError
	require.ErrorAs(t, res[0].Err, &verr)
	require.Equal(t, "campaign", verr.Errors[0].Field)
	require.Equal(t, herald.CodeInvalidField, verr.Code())
	require.Equal(t, 3, b.records(t))
}
