package dispatch

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
)

// TestDirectory_OwnEntryThenSharedNeverOthers
// proves, end to end, that another producer writing an entry
// for the same user id must not receive this producer's deliveries.
func TestDirectory_OwnEntryThenSharedNeverOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	owner := func(s string) *string { return &s }
	for _, u := range []store.RecipientUpsertParams{
		{Owner: owner(""), UserID: "50", Email: "shared50@example.com", OptedOut: []string{}},
		{Owner: owner("shop"), UserID: "50", Email: "shop50@example.com", OptedOut: []string{}},
		{Owner: owner(""), UserID: "51", Email: "shared51@example.com", OptedOut: []string{}},
		{Owner: owner("evil"), UserID: "51", Email: "evil51@example.com", OptedOut: []string{}},
		{Owner: owner("evil"), UserID: "52", Email: "evil52@example.com", OptedOut: []string{}},
	} {
		require.NoError(t, b.q.RecipientUpsert(ctx, b.pool, u))
	}
	record := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		return channel.Outcome{Class: channel.Delivered}
	})
	// b.insert submits as producer "shop".
	ks := b.insert(t,
		routeSpec{channel: channel.Email, ref: "user:50"},
		routeSpec{channel: channel.Email, ref: "user:51"},
		routeSpec{channel: channel.Email, ref: "user:52"},
	)
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.Email: {Deliverer: record}}})

	require.Equal(t, "shop50@example.com", b.waitStatus(t, ks[0], "published").ResolvedEmail, "its own entry wins")
	require.Equal(t, "shared51@example.com", b.waitStatus(t, ks[1], "published").ResolvedEmail, "then the shared one")
	r := b.waitStatus(t, ks[2], "skipped")
	require.Equal(t, ClassUnknownRecipient, r.LastErrorClassification, "another producer's entry is never used")
	require.Empty(t, r.ResolvedEmail)
}
