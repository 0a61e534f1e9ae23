package receipt_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
)

// keyParts publishes the route as its completion would for a message the
// provider took in parts, ids in part order, its attempt claimed at
// keyedAt.
func (b *testBundle) keyParts(t *testing.T, nid, provider string, keyedAt time.Time, ids ...string) {
	t.Helper()
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = provider + " " + id
	}
	var parts []string
	if len(keys) > 1 {
		parts = keys
	}
	_, err := b.pool.Exec(context.Background(), `
		UPDATE herald.routes SET status = 'published', next_attempt_at = NULL, published_at = now(),
			attempt_count = attempt_count + 1, provider_message_id = $2, providers = ARRAY[$3],
			receipt_key = $4, receipt_parts = $5, receipt_keyed_at = $6,
			delivery_status = NULL, part_delivery_statuses = NULL
		WHERE notification_id = $1`, nid, ids[0], provider, keys[0], parts, keyedAt)
	require.NoError(t, err)
}

func (b *testBundle) parts(t *testing.T, nid string) []string {
	t.Helper()
	var p []string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT part_delivery_statuses FROM herald.routes WHERE notification_id = $1`, nid).Scan(&p))
	return p
}

func TestPartsStatus_IsTheWorstPart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		parts []string
		want  string
	}{
		{[]string{"", "", ""}, ""},
		{[]string{"", "unknown", ""}, "unknown"},
		{[]string{"", "", "delivered"}, "delivered"},
		{[]string{"delivered", "unknown", ""}, "delivered"},
		{[]string{"delivered", "expired", "delivered"}, "expired"},
		{[]string{"expired", "undelivered", "delivered"}, "undelivered"},
	} {
		require.Equal(t, tt.want, receipt.PartsStatus(tt.parts), "%q", tt.parts)
	}
}

// TestMatcher_PartsDecideTheRoute: a message sent
// in three parts gets receipts for its parts in any order (the SMSC sends
// one for the part that completed it, or one per part): each is matched
// to the route, none is unmatched, and the route's status is delivered
// while every part that reported is delivered and undelivered once one
// is; a part's second receipt is a duplicate.
func TestMatcher_PartsDecideTheRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().Add(2 * time.Second) // the receipts below are due, and past DuplicateSettle, by then
	m := b.matcher(t, nil, &now)
	ctx := context.Background()
	keyed := time.Now().Add(-time.Minute)
	long := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, long, "sms/acme", keyed, "p-1", "p-2", "p-3")
	lastOnly := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, lastOnly, "sms/acme", keyed, "q-1", "q-2")

	last := b.store(t, "sms/acme", "p-3", "DELIVRD", "000")
	q2 := b.store(t, "sms/acme", "q-2", "DELIVRD", "000")
	_, err := m.MatchOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, ptr("delivered"), b.delivery(t, long).Status, "the last part's receipt decides it")
	require.Equal(t, []string{"", "", "delivered"}, b.parts(t, long))
	require.Equal(t, ptr("delivered"), b.delivery(t, lastOnly).Status)
	for _, id := range []int64{last, q2} {
		st, _ := b.state(t, id)
		require.Equal(t, "matched", st)
	}

	first := b.store(t, "sms/acme", "p-1", "DELIVRD", "000")
	again := b.store(t, "sms/acme", "p-1", "DELIVRD", "000")
	_, err = m.MatchOnce(ctx)
	require.NoError(t, err)
	st, _ := b.state(t, first)
	require.Equal(t, "matched", st, "another part's receipt is matched, not counted as unmatched")
	st, _ = b.state(t, again)
	require.Equal(t, "duplicate", st, "the same part's second receipt changes nothing")
	require.Equal(t, ptr("delivered"), b.delivery(t, long).Status)

	failed := b.store(t, "sms/acme", "p-2", "UNDELIV", "P9")
	_, err = m.MatchOnce(ctx)
	require.NoError(t, err)
	st, _ = b.state(t, failed)
	require.Equal(t, "matched", st)
	d := b.delivery(t, long)
	require.Equal(t, ptr("undelivered"), d.Status, "a part undelivered makes the message undelivered")
	require.Equal(t, "P9", d.Error)
	require.Equal(t, []string{"delivered", "undelivered", "delivered"}, b.parts(t, long))

	late := b.store(t, "sms/acme", "p-2", "DELIVRD", "000")
	_, err = m.MatchOnce(ctx)
	require.NoError(t, err)
	st, _ = b.state(t, late)
	require.Equal(t, "duplicate", st)
	require.Equal(t, ptr("undelivered"), b.delivery(t, long).Status, "a part's final status never changes")

	var unmatched int
	require.NoError(t, b.pool.QueryRow(ctx,
		`SELECT count(*) FROM herald.delivery_receipts WHERE state NOT IN ('matched', 'duplicate')`).Scan(&unmatched))
	require.Zero(t, unmatched)
}

// TestMatcher_MostRecentRouteWins: a provider's ids
// repeat (an SMSC restarted with its counter reset). A receipt goes to the
// route most recently given its id before it arrived, whatever an older
// route with the id has already been told; one that arrived before the
// newer route got the id stays with the older one; and one that finds only
// an older route already decided waits a moment for a newer route whose
// completion has not committed yet, rather than being a duplicate.
func TestMatcher_MostRecentRouteWins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().Add(2 * time.Second)
	m := b.matcher(t, &routing.Receipts{}, &now)

	old := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, old, "sms/acme", time.Now().Add(-time.Hour), "00000001")
	r := b.store(t, "sms/acme", "00000001", "DELIVRD", "000")
	_, err := m.MatchOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, ptr("delivered"), b.delivery(t, old).Status)

	// The SMSC restarts: a new route gets the same id.
	fresh := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, fresh, "sms/acme", time.Now().Add(-time.Second), "00000001")
	r2 := b.store(t, "sms/acme", "00000001", "UNDELIV", "P1")
	_, err = m.MatchOnce(ctx)
	require.NoError(t, err)
	st, _ := b.state(t, r2)
	require.Equal(t, "matched", st, "the older route's match does not block the newer one's")
	require.Equal(t, ptr("undelivered"), b.delivery(t, fresh).Status)
	require.Equal(t, ptr("delivered"), b.delivery(t, old).Status, "the older route keeps its status")
	var rn string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT notification_id FROM herald.delivery_receipts WHERE id = $1`, r2).Scan(&rn))
	require.Equal(t, fresh, rn)
	st, _ = b.state(t, r)
	require.Equal(t, "matched", st)

	// A receipt that arrived before a newer route was given the id
	// belongs to the older one.
	third := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, third, "sms/acme", time.Now().Add(time.Hour), "00000001")
	early := b.store(t, "sms/acme", "00000001", "DELIVRD", "000")
	_, err = m.MatchOnce(ctx)
	require.NoError(t, err)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT notification_id FROM herald.delivery_receipts WHERE id = $1`, early).Scan(&rn))
	require.Equal(t, fresh, rn)
	require.Nil(t, b.delivery(t, third).Status)

	// The receipt of a route whose completion is not visible yet finds
	// only an older, decided route with its id: it waits, then matches.
	live := time.Now()
	lm := b.matcher(t, &routing.Receipts{}, &live)
	racing := b.store(t, "sms/acme", "00000002", "DELIVRD", "000")
	older := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, older, "sms/acme", time.Now().Add(-time.Hour), "00000002")
	_, err = b.pool.Exec(ctx, `UPDATE herald.routes SET delivery_status = 'delivered' WHERE notification_id = $1`, older)
	require.NoError(t, err)
	live = time.Now()
	_, err = lm.MatchOnce(ctx)
	require.NoError(t, err)
	st, _ = b.state(t, racing)
	require.Equal(t, "new", st, "too young to be a duplicate: kept for another try")
	newer := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, newer, "sms/acme", time.Now().Add(-time.Minute), "00000002")
	live = time.Now().Add(5 * time.Second)
	_, err = lm.MatchOnce(ctx)
	require.NoError(t, err)
	st, _ = b.state(t, racing)
	require.Equal(t, "matched", st)
	require.Equal(t, ptr("delivered"), b.delivery(t, newer).Status)
}

// TestMatcher_TimelineCarriesAttempt: a route retried after
// its first receipt shows each receipt with the attempt it was matched
// to, not the route's last.
func TestMatcher_TimelineCarriesAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().Add(2 * time.Second)
	m := b.matcher(t, nil, &now)
	nid := b.publishedRoute(t, "sms/acme", "")
	b.keyParts(t, nid, "sms/acme", time.Now().Add(-time.Minute), "a-1")
	b.store(t, "sms/acme", "a-1", "UNDELIV", "T1")
	_, err := m.MatchOnce(ctx)
	require.NoError(t, err)
	b.keyParts(t, nid, "sms/acme", time.Now().Add(-time.Second), "a-2") // the retry, attempt 2
	b.store(t, "sms/acme", "a-2", "DELIVRD", "000")
	_, err = m.MatchOnce(ctx)
	require.NoError(t, err)

	rows, err := b.pool.Query(ctx, `
		SELECT attempt FROM herald.notification_timeline($1) WHERE event = 'receipt' ORDER BY at`, nid)
	require.NoError(t, err)
	var attempts []int32
	for rows.Next() {
		var a int32
		require.NoError(t, rows.Scan(&a))
		attempts = append(attempts, a)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []int32{1, 2}, attempts)
}
