package accept

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// One batch of every kind: the pipeline returns one Result per item, in
// order, each with its kind and what a door needs to answer it.
func TestPipeline_RunReturnsOneResultPerItemWithItsKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	// The SQL is the test's own: an operator's blocklist.
	_, err := pool.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES
		('word', 'casino', 'refuse'), ('word', 'lottery', 'review')`)
	require.NoError(t, err)

	with := func(key, body string) *intake.Intent {
		in := validIntent()
		in.IdempotencyKey = key
		in.Content.SMS.Body = body
		return in
	}
	invalid := with("invalid", "hi")
	invalid.Channels = append(invalid.Channels, "fax")
	decodeErr := errors.New("not json")
	items := []Item{
		{Intent: with("new", "Order 9 shipped")},
		{Intent: with("new", "Order 9 shipped")},  // the same request again
		{Intent: with("new", "Order 9 was lost")}, // the same key, another request
		{Intent: with("blocked", "casino night")}, // a refuse rule
		{Intent: with("held", "lottery results")}, // a review rule
		{Intent: with("reviewed", "lottery again"), Reviewed: true},
		{Intent: invalid},
		{Err: decodeErr},
		{Intent: with("other", "Order 9 shipped"), Actor: "billing"},
		{Validated: mustValidate(t, with("prevalidated", "Order 9 shipped"))},
	}
	var holds []int
	p := &Pipeline{Content: content.NewChecker(&content.CheckerConfig{RulesMaxAge: -1})}
	res, committed, err := p.Run(ctx, pool, items, RunOpts{Now: testNow,
		HoldFunc: func(_ context.Context, _ store.DBTX, i int, v *intake.Validated, m *content.Match) error {
			holds = append(holds, i)
			require.Equal(t, "held", v.Intent.IdempotencyKey)
			require.Equal(t, "lottery", m.Rule.Pattern)
			return nil
		}})
	require.NoError(t, err)
	committed()
	require.Len(t, res, len(items))
	kinds := make([]Kind, len(res))
	for i, r := range res {
		kinds[i] = r.Kind
	}
	require.Equal(t, []Kind{KindAccepted, KindDuplicate, KindConflict, KindRefused, KindHeld, KindAccepted,
		KindInvalid, KindInvalid, KindForbidden, KindAccepted}, kinds)
	require.Equal(t, []int{4}, holds)

	require.NotEmpty(t, res[0].NotificationID)
	require.Len(t, res[0].RouteIDs, len(res[0].Validated.Routes))
	require.Equal(t, res[0].NotificationID, res[1].NotificationID, "the duplicate names the original")
	require.Equal(t, res[0].NotificationID, res[2].NotificationID, "the conflict names the key's holder")
	var ve *heraldtype.ValidationError
	require.ErrorAs(t, res[3].Err, &ve)
	require.Equal(t, heraldtype.CodeContentBlocked, ve.Code())
	require.NotNil(t, res[4].Held)
	require.Empty(t, res[4].NotificationID, "a HoldFunc keeps it: nothing stored")
	require.ErrorAs(t, res[6].Err, &ve)
	require.Equal(t, heraldtype.CodeUnknownChannel, ve.Code())
	require.Same(t, decodeErr, res[7].Err)
	require.Nil(t, res[8].Err, "refused for its actor, not by the database")
	require.Equal(t, "shop", res[8].Validated.Intent.Producer)

	var records int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM herald.records`).Scan(&records))
	require.Equal(t, 3, records, "new, reviewed and prevalidated")
}

// Without a HoldFunc, an intent a review rule matched is stored for the
// engine's vetter to hold, and says so.
func TestPipeline_WithoutAHoldFuncStoresTheHeldIntentForTheVetter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	_, err := pool.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES ('word', 'lottery', 'review')`)
	require.NoError(t, err)
	in := validIntent()
	in.Content.SMS.Body = "lottery results"
	p := &Pipeline{Content: content.NewChecker(&content.CheckerConfig{RulesMaxAge: -1})}
	res, _, err := p.Run(ctx, pool, []Item{{Intent: in}, {Intent: in}}, RunOpts{Now: testNow})
	require.NoError(t, err)
	require.Equal(t, KindHeld, res[0].Kind)
	require.NotEmpty(t, res[0].NotificationID)
	require.NotNil(t, res[0].Held)
	require.Equal(t, KindDuplicate, res[1].Kind)
	require.NotNil(t, res[1].Held, "a replay of a held intent says so too")
}
