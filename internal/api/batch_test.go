package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestBatch_AnswersEachIntentInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", "old"), b.shopKey).status)
	conflicting := intent("shop", "old")
	conflicting["notification_type"] = "other"
	badEmail := intent("shop", "e")
	badEmail["channels"] = []string{"email"}
	badEmail["audience"] = map[string]any{"email": []string{"not an address"}}
	delete(badEmail["content"].(map[string]any), "sms")
	body := map[string]any{"intents": []any{
		intent("shop", "new"), intent("shop", "old"), conflicting, badEmail, intent("mall", "m"), intent("", "mine"),
		"not an object",
	}}
	a := b.do(t, "POST", "/v1/notifications/batch", body, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var out struct{ Results []BatchResult }
	a.json(t, &out)
	var statuses []int
	for _, r := range out.Results {
		statuses = append(statuses, r.Status)
	}
	require.Equal(t, []int{201, 200, 409, 400, 403, 201, 400}, statuses)
	require.Equal(t, heraldtype.CodeInvalidEmail, out.Results[3].Error.Code)
	require.Equal(t, "audience.email[0]", out.Results[3].Error.Field)
	require.Equal(t, heraldtype.CodeWrongShape, out.Results[6].Error.Code)
	require.Equal(t, a.header.Get("X-Request-Id"), out.Results[3].Error.RequestID)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM herald.records`))

	tooMany := make([]any, DefaultMaxBatch+1)
	for i := range tooMany {
		tooMany[i] = intent("shop", fmt.Sprint("n", i))
	}
	a = b.do(t, "POST", "/v1/notifications/batch", map[string]any{"intents": tooMany}, b.shopKey)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Equal(t, "intents", a.problem(t).Field)
	a = b.do(t, "POST", "/v1/notifications/batch", map[string]any{"intents": []any{}}, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, heraldtype.CodeMissingField, a.problem(t).Code)
	a = b.do(t, "POST", "/v1/notifications/batch", `[1]`, b.shopKey)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, heraldtype.CodeWrongShape, a.problem(t).Code)
}
