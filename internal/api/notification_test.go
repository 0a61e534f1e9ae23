package api

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestGet_AnswersRoutesWithAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var r Receipt
	b.do(t, "POST", "/v1/notifications", intent("shop", "g"), b.shopKey).json(t, &r)
	// As the dispatcher would leave a route that failed once at one provider.
	_, err := b.admin.Exec(context.Background(), `UPDATE herald.routes
		SET status = 'failed', attempt_count = 1, providers = '{sms/acme}', last_error_classification = 'transient',
			last_error_message = 'HTTP 503', last_error_at = now()
		WHERE notification_id = $1 AND recipient_ref = '+14155550123'`, r.NotificationID)
	require.NoError(t, err)
	a := b.do(t, "GET", "/v1/notifications/"+r.NotificationID, nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var n Notification
	a.json(t, &n)
	require.Equal(t, "shop", n.Producer)
	require.Equal(t, []string{"42"}, n.UserIDs)
	require.Len(t, n.Routes, 3)
	sms := n.Routes[slices.IndexFunc(n.Routes, func(rt Route) bool { return rt.RecipientRef == "+14155550123" })]
	require.Equal(t, "failed", sms.Status)
	require.Equal(t, 1, sms.Attempts)
	require.Equal(t, []string{"sms/acme"}, sms.Providers)
	require.Equal(t, "HTTP 503", sms.LastError)
	require.NotNil(t, sms.LastErrorAt)
	require.JSONEq(t, `{"sms":{"body":"Order 9 shipped"},"email":{"subject":"Order 9 shipped","text":"On its way."}}`, string(n.Content))

	// Another producer's notification is not found, exactly as an unknown one.
	for _, id := range []string{r.NotificationID, "0190a8b2-0000-7000-8000-000000000000"} {
		a = b.do(t, "GET", "/v1/notifications/"+id, nil, b.mallKey)
		require.Equal(t, http.StatusNotFound, a.status)
		require.Equal(t, CodeNotFound, a.problem(t).Code)
	}
}

func TestGet_AnswersDeliveryStatus(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var r Receipt
	b.do(t, "POST", "/v1/notifications", intent("shop", "d"), b.shopKey).json(t, &r)
	// As the receipts matcher leaves a published route whose receipt said
	// undelivered.
	_, err := b.admin.Exec(context.Background(), `UPDATE herald.routes
		SET status = 'published', next_attempt_at = NULL, published_at = now(), attempt_count = 1,
			delivery_status = 'undelivered', delivery_status_at = now(), delivery_error = '27',
			delivery_error_permanent = false
		WHERE notification_id = $1 AND recipient_ref = '+14155550123'`, r.NotificationID)
	require.NoError(t, err)
	a := b.do(t, "GET", "/v1/notifications/"+r.NotificationID, nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var n Notification
	a.json(t, &n)
	for _, rt := range n.Routes {
		if rt.RecipientRef == "+14155550123" {
			require.Equal(t, "undelivered", rt.DeliveryStatus)
			require.Equal(t, "27", rt.DeliveryError)
			require.NotNil(t, rt.DeliveryStatusAt)
		} else {
			require.Empty(t, rt.DeliveryStatus, "no receipt yet")
			require.Nil(t, rt.DeliveryStatusAt)
		}
	}
}

// GET shows what the Go client's Get shows, read by the same loader: the
// campaign an intent joined, and a templated notification's template (at
// the version it was accepted with) and data.
func TestGet_ShowsCampaignAndTemplateAsTheClient(t *testing.T) {
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
