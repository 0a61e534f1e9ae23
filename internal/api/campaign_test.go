package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// The HTTP API takes an intent's campaign as the other doors do: the key's
// producer joins its own campaign, and once the campaign is canceled an
// intent of it is refused with campaign_canceled, naming the field.
func TestSubmit_CampaignRefusedOnceCanceled(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	in := intent("shop", "sale-1")
	in["campaign"] = "spring"
	a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records WHERE producer = 'shop' AND campaign = 'spring'`))

	_, err := b.admin.Exec(context.Background(), `SELECT * FROM herald.campaign_cancel_batch('shop', 'spring', 'ops', 'x')`)
	require.NoError(t, err)
	in["idempotency_key"] = "sale-2"
	a = b.do(t, "POST", "/v1/notifications", in, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	p := a.problem(t)
	require.Equal(t, heraldtype.CodeCampaignCanceled, p.Code)
	require.Equal(t, "campaign", p.Field)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.records WHERE producer = 'shop' AND campaign = 'spring'`))
}
