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
func TestSubmitJoinsACampaignAndIsRefusedOnceItIsCanceled(t *testing.T) {
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

// GET shows what the Go client's Get shows, read by the same loader: the
// campaign an intent joined, and a templated notification's template (at
// the version it was accepted with) and data.
func TestGetShowsTheCampaignAndTheTemplateAsTheGoClientDoes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// The SQL is the test's own: shop publishing a template.
	_, err := b.admin.Exec(t.Context(), `INSERT INTO herald.templates (producer, name, version, default_locale, locales)
		VALUES ('shop', 'hello', 1, 'en', '{"en": {"sms": {"body": "Hello {{.name}}"}}}')`)
	require.NoError(t, err)
	in := intent("shop", "tpl-1")
	delete(in, "content")
	in["channels"] = []string{"sms"}
	in["audience"] = map[string]any{"sms": []string{"+14155550123"}}
	in["template"] = map[string]any{"name": "hello"}
	in["data"] = map[string]any{"name": "Ana"}
	in["campaign"] = "spring"
	a := b.do(t, "POST", "/v1/notifications", in, b.shopKey)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	var r Receipt
	a.json(t, &r)

	a = b.do(t, "GET", "/v1/notifications/"+r.NotificationID, nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var n Notification
	a.json(t, &n)
	require.Equal(t, "spring", n.Campaign)
	require.Equal(t, &heraldtype.TemplateRef{Name: "hello", Version: 1}, n.Template)
	require.Equal(t, map[string]any{"name": "Ana"}, n.Data)

	// A notification with content shows neither.
	a = b.do(t, "POST", "/v1/notifications", intent("shop", "plain"), b.shopKey)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	a.json(t, &r)
	a = b.do(t, "GET", "/v1/notifications/"+r.NotificationID, nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.NotContains(t, string(a.body), `"campaign"`)
	require.NotContains(t, string(a.body), `"template"`)
}
