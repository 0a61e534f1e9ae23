package receipt_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
)

// A receipt the endpoint stores with a matcher is matched in the
// transaction that stores it: written once, already decided, never queued
// and never updated; only a receipt that is new and due wakes the matcher.
func TestStoreMatched_WritesOnceWakesNoMatcher(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	settings := &routing.Receipts{Token: secretEnv("ACME_TOKEN")}
	m, err := receipt.NewMatcher(b.pool, receipt.MatcherConfig{
		ReceiptsFunc: func(string) *routing.Receipts { return settings },
	})
	require.NoError(t, err)
	srv := httptest.NewServer(receipt.Handler(receipt.HandlerConfig{
		Pool:         b.pool,
		ReceiptsFunc: func(string) *routing.Receipts { return settings },
		GetenvFunc:   func(string) string { return "s3cret" },
		Matcher:      m,
	}))
	t.Cleanup(srv.Close)
	post := func(body string) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/receipts/sms/acme?token=s3cret", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}

	// A connection of the pool's login listening on the matcher's topic.
	listener, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(listener.Release)
	var topic string
	require.NoError(t, listener.QueryRow(ctx, `SELECT herald.notify_topic($1)`, receipt.NotifyTopic).Scan(&topic))
	_, err = listener.Exec(ctx, "LISTEN "+pgx.Identifier{topic}.Sanitize())
	require.NoError(t, err)

	nid := b.publishedRoute(t, "sms/acme", "m-1")
	post(`{"id":"m-1","status":"DELIVRD"}`)
	post(`{"id":"m-nobody","status":"DELIVRD"}`) // no route has its id yet
	post(`not json`)

	// Decided before the sender was answered, with no round of the matcher.
	require.Equal(t, ptr("delivered"), b.delivery(t, nid).Status)
	type row struct {
		State          string
		Notification   *string
		Attempt        *int32
		MatchAttempts  int32
		MatchedAtIsArr bool
		RetryIn        time.Duration
	}
	read := func(id string) row {
		t.Helper()
		var r row
		var retry float64
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT state, notification_id, attempt, match_attempts, matched_at IS NOT DISTINCT FROM received_at,
				extract(epoch FROM next_match_at - received_at)::float8
			FROM herald.delivery_receipts WHERE provider_message_id = $1`, id).
			Scan(&r.State, &r.Notification, &r.Attempt, &r.MatchAttempts, &r.MatchedAtIsArr, &retry))
		r.RetryIn = time.Duration(retry * float64(time.Second))
		return r
	}
	got := read("m-1")
	require.Equal(t, "matched", got.State)
	require.Equal(t, &nid, got.Notification)
	require.Equal(t, ptr(int32(1)), got.Attempt, "the attempt it was about")
	require.Equal(t, int32(1), got.MatchAttempts)
	require.True(t, got.MatchedAtIsArr, "matched in the transaction that stored it")
	got = read("m-nobody")
	require.Equal(t, "new", got.State, "kept for the matcher")
	require.Nil(t, got.Notification)
	require.Equal(t, time.Second, got.RetryIn, "due after the first backoff")
	require.Equal(t, "malformed", read("").State)

	// The SQL door's receipt is new and due: it wakes the matcher. It is
	// the one notification: notifications arrive in commit order, so one
	// from the posts above would have come first.
	b.store(t, "sms/acme", "m-sql", "DELIVRD", "")
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = listener.Conn().WaitForNotification(wait)
	require.NoError(t, err)
	wait, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = listener.Conn().WaitForNotification(wait)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the posted receipts notified no one")

	// The receipt kept new is the matcher's once its route has the id.
	nid2 := b.publishedRoute(t, "sms/acme", "m-nobody")
	now := time.Now().Add(2 * time.Second)
	_, err = b.matcher(t, settings, &now).MatchOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "matched", read("m-nobody").State)
	require.Equal(t, ptr("delivered"), b.delivery(t, nid2).Status)
}
