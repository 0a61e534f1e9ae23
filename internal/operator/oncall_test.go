package operator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
)

// setDeadLetters sets the provider and classification of refs' dead
// letters.
func (b *testBundle) setDeadLetters(t *testing.T, refs []operator.RouteRef, provider, classification string) {
	t.Helper()
	for _, r := range refs {
		b.exec(t, `UPDATE herald.dead_letters SET provider = $3, failure_classification = $4
			WHERE notification_id = $1 AND route_id = $2`, r.NotificationID, r.RouteID, provider, classification)
	}
}

func TestDeadLetterCounts_GroupedByWhatIsAsked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.setDeadLetters(t, operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Channel: "sms", Producer: "billing", Dead: true}), "sms/primary", "http_500")
	b.setDeadLetters(t, operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "sms", Producer: "shop", Dead: true}), "sms/primary", "invalid_destination")
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Channel: "email", Producer: "shop", Dead: true})

	byProducer, err := b.op.DeadLetterCounts(ctx, operator.Filter{}, []string{operator.GroupProducer})
	require.NoError(t, err)
	require.Len(t, byProducer, 2)
	require.Equal(t, "billing", byProducer[0].Producer)
	require.EqualValues(t, 3, byProducer[0].DeadLetters)
	require.Equal(t, "shop", byProducer[1].Producer)
	require.EqualValues(t, 3, byProducer[1].DeadLetters)
	require.Empty(t, byProducer[0].Channel, "only what is grouped by is set")

	by, err := operator.ParseGroups("classification,provider")
	require.NoError(t, err)
	require.Equal(t, []string{"provider", "classification"}, by)
	groups, err := b.op.DeadLetterCounts(ctx, operator.Filter{Channel: "sms"}, by)
	require.NoError(t, err)
	require.Equal(t, []operator.DeadLetterGroup{
		{Provider: "sms/primary", Classification: "http_500", DeadLetters: 3, NewestAt: groups[0].NewestAt},
		{Provider: "sms/primary", Classification: "invalid_destination", DeadLetters: 2, NewestAt: groups[1].NewestAt},
	}, groups)
	_, err = operator.ParseGroups("producer,colour")
	require.Error(t, err)

	st, err := b.op.Stats(ctx, 60e9)
	require.NoError(t, err)
	require.Equal(t, byProducer, st.DeadLettersByProducer)
}

func TestReplay_ByProviderAndClassificationsLeavingPermanentOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.setDeadLetters(t, operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Channel: "sms", Dead: true}), "sms/primary", "http_500")
	b.setDeadLetters(t, operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "sms", Dead: true}), "sms/primary", "timeout")
	b.setDeadLetters(t, operatortest.Seed(t, b.pool, operatortest.Spec{N: 4, Channel: "sms", Dead: true}), "sms/primary", "invalid_destination")
	b.setDeadLetters(t, operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Channel: "sms", Dead: true}), "sms/backup", "http_500")

	// Several classifications, one provider.
	f := operator.Filter{Provider: "sms/primary", Classification: "http_500,timeout"}
	n, err := b.op.CountDeadLetters(ctx, f)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	page, err := b.op.DeadLetters(ctx, f, 50, "")
	require.NoError(t, err)
	require.Len(t, page.DeadLetters, 5)

	// A group among them expands.
	g := operator.Filter{Provider: "sms/primary", Classification: "transient,invalid_destination"}
	require.NoError(t, b.op.ExpandClassification(ctx, &g))
	n, err = b.op.CountDeadLetters(ctx, g)
	require.NoError(t, err)
	require.EqualValues(t, 9, n)

	// No classification: the permanent ones are left out, and counted.
	all := operator.Filter{Provider: "sms/primary"}
	left, err := b.op.LeavePermanentOut(ctx, &all)
	require.NoError(t, err)
	require.EqualValues(t, 4, left)
	res, err := b.op.Replay(ctx, all, operator.ReplayOpts{Actor: "ann", DryRun: true})
	require.NoError(t, err)
	require.EqualValues(t, 5, res.Matched)
	res, err = b.op.Replay(ctx, all, operator.ReplayOpts{Actor: "ann", Reason: "primary back"})
	require.NoError(t, err)
	require.Equal(t, 5, res.Moved)
	n, err = b.op.CountDeadLetters(ctx, operator.Filter{})
	require.NoError(t, err)
	require.EqualValues(t, 5, n, "the permanent ones and the backup's stay")
}

func TestFindNotification_ByProducerAndKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refs := operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Producer: "billing"})
	// The seed's idempotency key is the notification id.
	st, err := b.op.FindNotification(ctx, "billing", refs[1].NotificationID)
	require.NoError(t, err)
	want, err := b.op.Status(ctx, refs[1].NotificationID)
	require.NoError(t, err)
	require.Equal(t, want, st)
	_, err = b.op.FindNotification(ctx, "shop", refs[1].NotificationID)
	require.ErrorIs(t, err, operator.ErrNotFound, "another producer's key is another key")
}
