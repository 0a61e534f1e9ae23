package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCancel_OwnOnlyAudited(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var r Receipt
	b.do(t, "POST", "/v1/notifications", intent("shop", "c"), b.shopKey).json(t, &r)
	a := b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", map[string]any{"reason": "x"}, b.mallKey)
	require.Equal(t, http.StatusNotFound, a.status)
	a = b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", `{"why": 1}`, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	a = b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", map[string]any{"reason": "order refunded"}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var c Cancellation
	a.json(t, &c)
	require.Len(t, c.Canceled, 3)
	var actor, reason string
	require.NoError(t, b.admin.QueryRow(context.Background(),
		`SELECT actor, reason FROM herald.audit_log WHERE action = 'cancel'`).Scan(&actor, &reason))
	require.Equal(t, "api key "+b.shopKey[:keyDisplayLen], actor)
	require.Equal(t, "order refunded", reason)
	// Nothing left to cancel: 200 with none, no body needed.
	a = b.do(t, "POST", "/v1/notifications/"+r.NotificationID+"/cancel", nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status)
	a.json(t, &c)
	require.Empty(t, c.Canceled)
}
