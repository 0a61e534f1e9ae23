package herald_test

// The HTTP API's identity, checked in the database: a login
// that is a member of herald_api acts as the producer of the API key its
// transaction sets (herald.api_key), and as nobody without a valid one.
// internal/api's tests drive the same rules over HTTP.

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// apiBundle is accessSetup's database with an API login and a client on it.
type apiBundle struct {
	*accessBundle
	apiName string
	asAPI   *pgxpool.Pool
	client  *herald.Client
}

func apiSetup(t *testing.T) *apiBundle {
	t.Helper()
	b := &apiBundle{accessBundle: accessSetup(t)}
	b.apiName, b.asAPI = pgtemp.Login(t, b.admin, "api", "herald_api")
	var err error
	b.client, err = herald.NewClient(b.asAPI, &herald.Config{Actor: "api"})
	require.NoError(t, err)
	t.Cleanup(b.client.Close)
	return b
}

// withKey runs fn in a transaction of db that has set herald.api_key to
// key ("" sets nothing), as the API does for each request, and commits if
// fn returns nil.
func withKey(t *testing.T, db *pgxpool.Pool, key string, fn func(tx pgx.Tx) error) error {
	t.Helper()
	ctx := context.Background()
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if key != "" {
			if _, err := tx.Exec(ctx, `SELECT set_config('herald.api_key', $1, true)`, key); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// intentOf is submit's intent, for a submit inside a transaction.
func intentOf(producer, key string) *herald.Intent {
	return &herald.Intent{
		NotificationType: "order.shipped",
		Producer:         producer,
		IdempotencyKey:   key,
		Audience:         herald.Audience{UserIDs: []string{"42"}, Email: []string{"ops@example.com"}},
		Channels:         []string{"email"},
		Content:          herald.Content{Email: &herald.EmailContent{Subject: "Shipped", Text: "On its way."}},
	}
}

func actingProducer(t *testing.T, tx pgx.Tx) *string {
	t.Helper()
	var who *string
	require.NoError(t, tx.QueryRow(context.Background(), `SELECT herald.acting_producer()`).Scan(&who))
	return who
}

func TestAPIRole_WithoutKeyDoesNothing(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	theirs := submit(t, b.clientA, b.nameA, "k1")
	require.NoError(t, b.clientA.UpsertRecipient(ctx, herald.Recipient{UserID: "42", Email: "a@example.com"}))
	for _, key := range []string{"", "hk_not-a-key", api.NewSecret()} {
		err := withKey(t, b.asAPI, key, func(tx pgx.Tx) error {
			require.Nil(t, actingProducer(t, tx), "key %q", key)
			require.Zero(t, countAs(t, b.asAPI, `SELECT count(*) FROM herald.records`))
			require.Zero(t, countAs(t, b.asAPI, `SELECT count(*) FROM herald.routes`))
			require.Zero(t, countAs(t, b.asAPI, `SELECT count(*) FROM herald.recipients`))
			_, err := b.client.GetTx(ctx, tx, theirs.NotificationID)
			require.ErrorIs(t, err, herald.ErrNotFound)
			return nil
		})
		require.NoError(t, err)
		// Neither in the login's own name nor in a producer's.
		for _, producer := range []string{b.apiName, b.nameA} {
			err = withKey(t, b.asAPI, key, func(tx pgx.Tx) error {
				_, err := b.client.SubmitTx(ctx, tx, intentOf(producer, "k2"))
				return err
			})
			require.ErrorIs(t, err, herald.ErrForbidden, "key %q, producer %s", key, producer)
		}
		err = withKey(t, b.asAPI, key, func(tx pgx.Tx) error {
			_, err := b.client.CancelTx(ctx, tx, theirs.NotificationID, &herald.CancelOpts{Reason: "x"})
			return err
		})
		require.ErrorIs(t, err, herald.ErrNotFound)
		err = withKey(t, b.asAPI, key, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO herald.recipients (owner, user_id, email) VALUES ($1, '7', 'x@example.com')`, b.nameA)
			return err
		})
		requireSQLState(t, err, insufficientPrivilege)
		err = withKey(t, b.asAPI, key, func(tx pgx.Tx) error {
			var deleted bool
			require.NoError(t, tx.QueryRow(ctx, `SELECT herald.recipient_delete('42')`).Scan(&deleted))
			require.False(t, deleted)
			return nil
		})
		require.NoError(t, err)
	}
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE status = 'pending'`))
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.recipients`))
}

func TestAPIRole_KeyActsAsItsProducerOnly(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	key, err := api.CreateKey(ctx, b.asOp, b.nameA, "ops", "shop's api key")
	require.NoError(t, err)
	earlier := submit(t, b.clientA, b.nameA, "k1")
	theirs := submit(t, b.clientB, b.nameB, "k1")

	var viaAPI *herald.Receipt
	require.NoError(t, withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		require.Equal(t, b.nameA, *actingProducer(t, tx))
		viaAPI, err = b.client.SubmitTx(ctx, tx, intentOf(b.nameA, "k2"))
		return err
	}))
	// The same key through the login A uses: a duplicate, as the doors share
	// one idempotency scope.
	require.NoError(t, withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		r, err := b.client.SubmitTx(ctx, tx, intentOf(b.nameA, "k1"))
		require.NoError(t, err)
		require.True(t, r.Duplicate)
		require.Equal(t, earlier.NotificationID, r.NotificationID)
		require.Zero(t, countAs(t, b.asAPI, `SELECT count(*) FROM herald.records`), "outside the key's transaction: nothing")
		n, err := b.client.GetTx(ctx, tx, viaAPI.NotificationID)
		require.NoError(t, err)
		require.Equal(t, b.nameA, n.Producer)
		_, err = b.client.GetTx(ctx, tx, theirs.NotificationID)
		require.ErrorIs(t, err, herald.ErrNotFound)
		return nil
	}))
	require.NoError(t, withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		var n int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM herald.records`).Scan(&n))
		require.Equal(t, 2, n, "A's two notifications, not B's")
		return nil
	}))
	// B's name, B's notification: refused by the database.
	err = withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		_, err := b.client.SubmitTx(ctx, tx, intentOf(b.nameB, "k3"))
		return err
	})
	require.ErrorIs(t, err, herald.ErrForbidden)
	err = withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		_, err := b.client.CancelTx(ctx, tx, theirs.NotificationID, &herald.CancelOpts{Reason: "x"})
		return err
	})
	require.ErrorIs(t, err, herald.ErrNotFound)
	// Its own: canceled, the audit row stamped with the API's login.
	require.NoError(t, withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		res, err := b.client.CancelTx(ctx, tx, viaAPI.NotificationID, &herald.CancelOpts{Actor: "api key " + key.Prefix, Reason: "refund"})
		require.NoError(t, err)
		require.Len(t, res.Canceled, 2)
		return nil
	}))
	var login string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT login FROM herald.audit_log WHERE action = 'cancel'`).Scan(&login))
	require.Equal(t, b.apiName, login)
	// The directory: A's entries, written and deleted in A's name only.
	err = withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO herald.recipients (owner, user_id, email) VALUES ($1, '7', 'x@example.com')`, b.nameB)
		return err
	})
	requireSQLState(t, err, insufficientPrivilege)
	require.NoError(t, withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO herald.recipients (owner, user_id, email) VALUES ($1, '7', 'x@example.com')`, b.nameA)
		require.NoError(t, err)
		var deleted bool
		require.NoError(t, tx.QueryRow(ctx, `SELECT herald.recipient_delete('7')`).Scan(&deleted))
		require.True(t, deleted)
		return nil
	}))
}

func TestAPIKeys_RotateAndRevoke(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	old, err := api.CreateKey(ctx, b.asOp, b.nameA, "ops", "first")
	require.NoError(t, err)
	next, err := api.CreateKey(ctx, b.asOp, b.nameA, "ops", "rotation")
	require.NoError(t, err)
	submit(t, b.clientA, b.nameA, "k1")
	sees := func(key string) int {
		var n int
		require.NoError(t, withKey(t, b.asAPI, key, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM herald.records`).Scan(&n)
		}))
		return n
	}
	require.Equal(t, 1, sees(old.Secret))
	require.Equal(t, 1, sees(next.Secret))
	at, err := api.RevokeKey(ctx, b.asOp, b.nameA, old.ID, "ops", "rotated")
	require.NoError(t, err)
	require.Zero(t, sees(old.Secret))
	require.Equal(t, 1, sees(next.Secret))
	// Revoking again keeps the first revocation, and writes no second row.
	again, err := api.RevokeKey(ctx, b.asOp, b.nameA, old.ID, "ops", "again")
	require.NoError(t, err)
	require.True(t, at.Equal(again))
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.audit_log WHERE action = 'api_key_revoke'`))
	// A key is revoked only under its own producer's name.
	_, err = api.RevokeKey(ctx, b.asOp, b.nameB, next.ID, "ops", "wrong producer")
	require.ErrorIs(t, err, api.ErrKeyNotFound)
	require.Equal(t, 1, sees(next.Secret))
}

func TestAPIKeys_OnlyOperatorsManageAudited(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	key, err := api.CreateKey(ctx, b.asOp, b.nameA, "alice", "shop goes live")
	require.NoError(t, err)
	require.Len(t, key.Secret, len(api.KeyPrefix)+43)
	require.Equal(t, key.Secret[:len(key.Prefix)], key.Prefix)
	// Only the hash is stored.
	require.Zero(t, countAs(t, b.admin, `SELECT count(*) FROM herald.api_keys WHERE position($1 in key_hash::text) > 0 OR position($1 in key_prefix) > 1`,
		key.Secret[len(key.Prefix):]))
	var actor, login string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT actor, login FROM herald.audit_log WHERE action = 'api_key_create'`).Scan(&actor, &login))
	require.Equal(t, "alice", actor)
	require.Equal(t, b.opName, login)
	keys, err := api.ListKeys(ctx, b.asOp, b.nameA)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, key.Prefix, keys[0].Prefix)
	require.Empty(t, keys[0].Secret)
	keys, err = api.ListKeys(ctx, b.asAud, "")
	require.NoError(t, err, "the auditor reads the keys")
	require.Len(t, keys, 1)

	for _, db := range []*pgxpool.Pool{b.asA, b.asAud, b.asAPI, b.asDir, b.asRelay} {
		_, err := api.CreateKey(ctx, db, b.nameA, "mallory", "x")
		requireSQLState(t, err, insufficientPrivilege)
		_, err = api.RevokeKey(ctx, db, b.nameA, key.ID, "mallory", "x")
		requireSQLState(t, err, insufficientPrivilege)
	}
	for _, db := range []*pgxpool.Pool{b.asA, b.asAPI} {
		_, err := db.Exec(ctx, `SELECT * FROM herald.api_keys`)
		requireSQLState(t, err, insufficientPrivilege)
	}
	// A producer's login that sets a key still acts as itself.
	require.NoError(t, withKey(t, b.asB, key.Secret, func(tx pgx.Tx) error {
		require.Equal(t, b.nameB, *actingProducer(t, tx))
		return nil
	}))
	_, err = b.asA.Exec(ctx, `SELECT herald.api_key_touch()`)
	requireSQLState(t, err, insufficientPrivilege)
}

func TestAPIRole_TouchesKeyOncePerMinute(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	key, err := api.CreateKey(ctx, b.asOp, b.nameA, "ops", "x")
	require.NoError(t, err)
	touch := func() {
		require.NoError(t, withKey(t, b.asAPI, key.Secret, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT herald.api_key_touch()`)
			return err
		}))
	}
	touch()
	keys, err := api.ListKeys(ctx, b.asOp, b.nameA)
	require.NoError(t, err)
	require.NotNil(t, keys[0].LastUsedAt)
	first := *keys[0].LastUsedAt
	touch()
	keys, err = api.ListKeys(ctx, b.asOp, b.nameA)
	require.NoError(t, err)
	require.True(t, first.Equal(*keys[0].LastUsedAt))
}

func TestAPIRole_HoldsProducerGrantsPlusKeys(t *testing.T) {
	t.Parallel()
	pool := pgtemp.NewPool(t)
	for _, o := range schemaObjects(t, pool) {
		want := granted(t, pool, "herald_producer", o)
		if o.kind == "function" && o.name == "api_key_touch" {
			want = []string{"execute"}
		}
		require.Equal(t, want, granted(t, pool, "herald_api", o), "herald.%s (%s)", o.name, o.kind)
	}
}
