package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecipients_PutNormalizedAndDelete(t *testing.T) {
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

func TestGetRecipient_ReadsOnlyTheProducersOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.do(t, "GET", "/v1/recipients/42", nil, "")
	require.Equal(t, http.StatusUnauthorized, a.status, "authenticated first")
	a = b.do(t, "PUT", "/v1/recipients/42", map[string]any{"phone": "+1 415 555 0123", "locale": "en-US",
		"opted_out": []string{"sms"}}, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var put Recipient
	a.json(t, &put)

	a = b.do(t, "GET", "/v1/recipients/42", nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var got Recipient
	a.json(t, &got)
	require.Equal(t, put, got)

	// mall has no entry for 42: shop's is not its to read.
	a = b.do(t, "GET", "/v1/recipients/42", nil, b.mallKey)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, "no such recipient", a.problem(t).Detail)
	// Nor is the shared directory's.
	_, err := b.admin.Exec(t.Context(), `INSERT INTO herald.recipients (owner, user_id, email, updated_at)
		VALUES ('', '77', 'shared@example.com', now())`)
	require.NoError(t, err)
	a = b.do(t, "GET", "/v1/recipients/77", nil, b.shopKey)
	require.Equal(t, http.StatusNotFound, a.status)
	a = b.do(t, "GET", "/v1/recipients/"+strings.Repeat("x", 256), nil, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
}
