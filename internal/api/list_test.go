package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestList_PagesOwnNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for i := range 5 {
		require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("shop", fmt.Sprint("l", i)), b.shopKey).status)
	}
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/v1/notifications", intent("mall", "l0"), b.mallKey).status)
	var keys []string
	path := "/v1/notifications?limit=2"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4)
		a := b.do(t, "GET", path, nil, b.shopKey)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		var l List
		a.json(t, &l)
		for _, n := range l.Notifications {
			require.Equal(t, "shop", n.Producer)
			keys = append(keys, n.IdempotencyKey)
		}
		if l.Next == "" {
			break
		}
		path = "/v1/notifications?limit=2&after=" + l.Next
	}
	require.Equal(t, []string{"l4", "l3", "l2", "l1", "l0"}, keys)
	// The list pages by id: a cursor whose time is not its row's (as in one
	// handed out when the list was ordered by accepted_at, before migration
	// 00024) goes on from its row all the same.
	var l3 string
	require.NoError(t, b.admin.QueryRow(context.Background(), `SELECT notification_id FROM herald.records
		WHERE producer = 'shop' AND idempotency_key = 'l3'`).Scan(&l3))
	a := b.do(t, "GET", "/v1/notifications?limit=2&after="+encodeCursor(time.Unix(0, 0), l3), nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var l List
	a.json(t, &l)
	require.Len(t, l.Notifications, 2)
	require.Equal(t, "l2", l.Notifications[0].IdempotencyKey)
	require.Equal(t, "l1", l.Notifications[1].IdempotencyKey)
	for _, q := range []string{"limit=0", "limit=x", "after=%21%21"} {
		a := b.do(t, "GET", "/v1/notifications?"+q, nil, b.shopKey)
		require.Equal(t, http.StatusBadRequest, a.status, q)
		require.Equal(t, heraldtype.CodeInvalidField, a.problem(t).Code)
	}
}
