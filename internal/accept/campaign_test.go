package accept

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

// Intents without a campaign never reach campaign_join: a batch of them
// creates no campaign and stores NULL.
func TestAccept_WithoutCampaignStoresNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	_, err := Accept(ctx, pool, []*intake.Validated{mustValidate(t, validIntent())}, Params{})
	require.NoError(t, err)
	var records, campaigns int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.records WHERE campaign IS NULL").Scan(&records))
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.campaigns").Scan(&campaigns))
	require.Equal(t, 1, records)
	require.Zero(t, campaigns)
}
