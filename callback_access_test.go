package herald_test

// Who may do what with status callbacks: a producer
// manages only its own subscription and never reads a secret, operators and
// auditors read subscriptions without secrets, and no producer can submit
// on herald's own callback channel. The SQL here is the test's own: the
// statements a hostile login would type.

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
)

var callbackSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("sixteen+ byte key for tests"))

func TestCallbackSubscriptions_OwnOnlyNoSecrets(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	require.NoError(t, b.clientA.SetCallbackSubscription(ctx, herald.CallbackSubscription{
		URL: "https://a.example.com/herald", Secret: callbackSecret, Events: []string{herald.CallbackDelivered}}))
	require.NoError(t, b.clientB.SetCallbackSubscription(ctx, herald.CallbackSubscription{
		URL: "https://b.example.com/herald", BearerToken: "b-token-0123456789abcdef"}))
	// Set again: replaced, not added.
	require.NoError(t, b.clientA.SetCallbackSubscription(ctx, herald.CallbackSubscription{
		URL: "https://a.example.com/herald/v2", Secret: callbackSecret}))

	// A sees only its own subscription, without the secret.
	var url string
	var events []string
	rows, err := b.asA.Query(ctx, `SELECT url, events FROM herald.callback_subscriptions`)
	require.NoError(t, err)
	subs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		URL    string
		Events []string
	}])
	require.NoError(t, err)
	require.Len(t, subs, 1)
	require.Equal(t, "https://a.example.com/herald/v2", subs[0].URL)
	require.Empty(t, subs[0].Events)
	for _, db := range []*pgxpool.Pool{b.asA, b.asOp, b.asAud} {
		var s *string
		err := db.QueryRow(ctx, `SELECT secret FROM herald.callback_subscriptions LIMIT 1`).Scan(&s)
		requireSQLState(t, err, insufficientPrivilege)
		err = db.QueryRow(ctx, `SELECT bearer_token FROM herald.callback_subscriptions LIMIT 1`).Scan(&s)
		requireSQLState(t, err, insufficientPrivilege)
	}
	// Operators and auditors read every subscription's other columns.
	require.Equal(t, 2, countAs(t, b.asOp, `SELECT count(*) FROM herald.callback_subscriptions`))
	require.Equal(t, 2, countAs(t, b.asAud, `SELECT count(url) FROM herald.callback_subscriptions`))

	// A cannot write B's subscription, directly or through the function.
	_, err = b.asA.Exec(ctx, `SELECT herald.callback_subscription_set('https://evil.example.com/', '{}', $1, NULL, $2)`,
		callbackSecret, b.nameB)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `UPDATE herald.callback_subscriptions SET url = 'https://evil.example.com/'`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.callback_subscriptions (producer, url, secret) VALUES ($1, 'https://evil.example.com/', $2)`,
		b.nameB, callbackSecret)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `SELECT herald.callback_subscription_delete($1)`, b.nameB)
	requireSQLState(t, err, insufficientPrivilege)
	// Operators and auditors manage none.
	_, err = b.asOp.Exec(ctx, `SELECT herald.callback_subscription_set('https://op.example.com/', '{}', $1)`, callbackSecret)
	requireSQLState(t, err, insufficientPrivilege)

	// Deleting removes A's only.
	deleted, err := b.clientA.DeleteCallbackSubscription(ctx)
	require.NoError(t, err)
	require.True(t, deleted)
	deleted, err = b.clientA.DeleteCallbackSubscription(ctx)
	require.NoError(t, err)
	require.False(t, deleted)
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT url, events FROM herald.callback_subscriptions WHERE producer = $1`, b.nameB).Scan(&url, &events))
	require.Equal(t, "https://b.example.com/herald", url)

	// Bad subscriptions are refused, naming what is wrong, never quoting a
	// secret.
	for _, bad := range []herald.CallbackSubscription{
		{URL: "ftp://a.example.com/", Secret: callbackSecret},
		{URL: "https://a.example.com/", Secret: callbackSecret, Events: []string{"opened"}},
		{URL: "https://a.example.com/"},
		{URL: "https://a.example.com/", Secret: callbackSecret, BearerToken: "b-token-0123456789abcdef"},
		{URL: "https://a.example.com/", Secret: "whsec_c2hvcnQ="},
		{URL: "https://a.example.com/", BearerToken: "short"},
	} {
		err := b.clientA.SetCallbackSubscription(ctx, bad)
		var verr *herald.ValidationError
		require.ErrorAs(t, err, &verr, "%+v", bad)
		require.NotContains(t, err.Error(), "c2hvcnQ")
	}
}

func TestClient_SubmitRefusesCallbackChannel(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	_, err := b.clientA.Submit(ctx, &herald.Intent{
		NotificationType: "x", Producer: b.nameA, IdempotencyKey: "k", Channels: []string{"callback"},
		Audience: herald.Audience{Webhook: []string{"https://a.example.com/"}},
	})
	var verr *herald.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, herald.CodeUnknownChannel, verr.Errors[0].Code)

	// Nor with raw INSERTs: a record listing the channel, or a route on it
	// (its address would pass as a "user:" reference).
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
		payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at, channels)
		VALUES ('n-cb', 'x', $1, 'users', '{}', 'k-cb', 'f', now(), now(), now(), now(), '{callback}')`, b.nameA)
	requireSQLState(t, err, insufficientPrivilege)
	r := submit(t, b.clientA, b.nameA, "k1")
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
		max_attempts, next_attempt_at, created_at, updated_at)
		VALUES ($1, 'callback:000000000000', 'callback', 'user:42', 'pending', 0, now(), now(), now())`, r.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
}

// herald.callback_subscription_get answers a producer's login its own
// subscription and which kind of credential signs it, never the
// credential; operators and auditors, who read the table's other columns,
// may not call it.
func TestCallbackSubscriptionGet_OwnKindNeverTheSecret(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	require.NoError(t, b.clientA.SetCallbackSubscription(ctx, herald.CallbackSubscription{
		URL: "https://a.example.com/herald", Secret: callbackSecret}))
	require.NoError(t, b.clientB.SetCallbackSubscription(ctx, herald.CallbackSubscription{
		URL: "https://b.example.com/herald", BearerToken: "b-token-0123456789abcdef"}))
	for _, c := range []struct {
		db                  *pgxpool.Pool
		producer, url, auth string
	}{
		{b.asA, b.nameA, "https://a.example.com/herald", "secret"},
		{b.asB, b.nameB, "https://b.example.com/herald", "bearer_token"},
	} {
		rows, err := c.db.Query(ctx, `SELECT producer, url, auth FROM herald.callback_subscription_get()`)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Producer, URL, Auth string }])
		require.NoError(t, err)
		require.Equal(t, []struct{ Producer, URL, Auth string }{{c.producer, c.url, c.auth}}, got)
	}
	for _, db := range []*pgxpool.Pool{b.asOp, b.asAud} {
		_, err := db.Exec(ctx, `SELECT * FROM herald.callback_subscription_get()`)
		requireSQLState(t, err, insufficientPrivilege)
	}
}
