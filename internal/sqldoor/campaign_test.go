package sqldoor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/store"
)

// The SQL door joins intents to their campaign as the Go door does: an
// entry naming a campaign is stored in it, one with another send_at than
// the campaign's is set aside as invalid_field, and once the campaign's
// cancel was requested an entry of it is set aside as campaign_canceled.
func TestWorker_JoinsCampaignsSetsAsideRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, nil)
	sendAt := testNow.Add(time.Hour)
	entry := func(key string, sendAt time.Time) string {
		return intaketest.EntryWith(func(m map[string]any) {
			m["idempotency_key"] = key
			m["campaign"] = "spring"
			if !sendAt.IsZero() {
				m["send_at"] = sendAt.Format(time.RFC3339Nano)
			}
		})
	}

	b.insert(t, entry("k1", sendAt), entry("k2", sendAt), entry("k3", sendAt.Add(time.Minute)))
	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, accepted)
	require.Equal(t, 1, malformed)
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM herald.records WHERE campaign = 'spring' AND producer = 'shop'"))
	var code, msg string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT failure_code, failure_message FROM herald.malformed_intents
		WHERE idempotency_key = 'k3'`).Scan(&code, &msg))
	require.Equal(t, string(heraldtype.CodeInvalidField), code)
	require.Contains(t, msg, "campaign spring is scheduled for "+sendAt.Format(time.RFC3339Nano))

	row, err := store.New().CampaignCancelBatch(ctx, b.pool, store.CampaignCancelBatchParams{
		Producer: "shop", Campaign: "spring", Actor: "ops", BatchSize: 100})
	require.NoError(t, err)
	require.True(t, row.Done)
	require.Equal(t, int64(12), row.Canceled, "two intents of six routes each")

	b.insert(t, entry("k4", sendAt))
	accepted, malformed, err = b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, accepted)
	require.Equal(t, 1, malformed)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT failure_code, failure_message FROM herald.malformed_intents
		WHERE idempotency_key = 'k4'`).Scan(&code, &msg))
	require.Equal(t, string(heraldtype.CodeCampaignCanceled), code)
	require.Equal(t, fmt.Sprintf("invalid intent: campaign: campaign spring was canceled: nothing more joins it (%s)", code), msg)
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.intake"), "nothing is left behind")
}
