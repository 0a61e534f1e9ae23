package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
)

func TestMalformedCmd_ListAndShow(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	require.NoError(t, store.New().MalformedIntentInsertMany(context.Background(), b.pool, store.MalformedIntentInsertManyParams{
		EntryRefs:         []string{"intake:1", "intake:2", "intake:3"},
		NotificationTypes: []string{"", "order.shipped", "order.shipped"},
		Producers:         []string{"", "shop", "billing"},
		IdempotencyKeys:   []string{"", "k2", "k3"},
		FailureCodes:      []string{"invalid_json", "missing_field", "missing_field"},
		FailureMessages:   []string{"body is not JSON", "recipients: required", "channels: required"},
		RawFields:         [][]byte{[]byte(`{"body":"{"}`), []byte(`{"producer":"shop"}`), []byte(`{"producer":"billing"}`)},
	}))

	var page operator.MalformedPage
	runJSON(t, b.env, &page, "malformed", "list")
	require.Len(t, page.Malformed, 3)
	runJSON(t, b.env, &page, "malformed", "list", "--code", "missing_field", "--producer", "shop")
	require.Len(t, page.Malformed, 1)
	require.Equal(t, "intake:2", page.Malformed[0].EntryRef)

	var first, second operator.MalformedPage
	runJSON(t, b.env, &first, "malformed", "list", "--limit", "2")
	require.Len(t, first.Malformed, 2)
	runJSON(t, b.env, &second, "malformed", "list", "--limit", "2", "--after", first.Next)
	require.Len(t, second.Malformed, 1)

	var e operator.Malformed
	runJSON(t, b.env, &e, "malformed", "show", "intake:1")
	require.Equal(t, "invalid_json", e.FailureCode)
	require.JSONEq(t, `{"body":"{"}`, string(e.RawFields))

	out, _, err := run(t, b.env, "malformed", "show", "intake:3")
	require.NoError(t, err)
	require.Contains(t, out, "raw fields:")
	out, _, err = run(t, b.env, "malformed", "list")
	require.NoError(t, err)
	require.Contains(t, out, "missing_field")
	_, _, err = run(t, b.env, "malformed", "show", "intake:99")
	require.ErrorIs(t, err, operator.ErrNotFound)
}
