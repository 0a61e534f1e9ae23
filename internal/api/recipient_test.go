package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecipientsArePutNormalizedAndDeletedInTheProducersOwnDirectory(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.do(t, "PUT", "/v1/recipients/42", map[string]any{"phone": "+1 415 555 0123", "email": "Ann@Example.COM",
		"opted_out": []string{"sms"}}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var r Recipient
	a.json(t, &r)
	require.Equal(t, "+14155550123", r.Phone)
	require.Equal(t, "Ann@example.com", r.Email)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.recipients WHERE owner = 'shop' AND user_id = '42'`))
	a = b.do(t, "PUT", "/v1/recipients/42", map[string]any{"phone": "555"}, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "phone", a.problem(t).Field)
	// mall has no entry for 42: its delete finds none, and shop's stays.
	a = b.do(t, "DELETE", "/v1/recipients/42", nil, b.mallKey)
	require.Equal(t, http.StatusNotFound, a.status)
	a = b.do(t, "DELETE", "/v1/recipients/42", nil, b.shopKey)
	require.Equal(t, http.StatusNoContent, a.status)
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.recipients`))
}
