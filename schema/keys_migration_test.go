package schema_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/schema"
)

// insertKeyedRecord inserts a record of producer's holding key until
// expires, as any migration's records table takes one.
func insertKeyedRecord(t *testing.T, pool *pgxpool.Pool, id, producer, key string, expires time.Time) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO herald.records (notification_id, notification_type, producer,
		audience_kind, payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at,
		idempotency_expires_at)
		VALUES ($1, 't', $2, 'users', '{}', $3, 'fp', now(), now(), now(), $4)`, id, producer, key, expires)
	require.NoError(t, err)
}

// Migration 00026 moves the idempotency check from records' UNIQUE
// constraint to herald.idempotency_keys, taking every record's key with
// it; its down migration puts the constraint back, and stops with a clear
// error where a key taken over after its window names two records.
func TestMigrator_KeysMoveOutAndBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	m := schema.NewMigrator(pool, nil)
	_, err := m.Down(ctx, 25)
	require.NoError(t, err)
	live, expired := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond), time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	insertKeyedRecord(t, pool, "n1", "shop", "k1", live)
	insertKeyedRecord(t, pool, "n2", "shop", "k2", expired)

	_, err = m.Up(ctx)
	require.NoError(t, err)
	type key struct {
		Producer, IdempotencyKey, NotificationID string
		ExpiresAt                                time.Time
	}
	keys := func() []key {
		rows, err := pool.Query(ctx, `SELECT producer, idempotency_key, notification_id, expires_at
			FROM herald.idempotency_keys ORDER BY idempotency_key`)
		require.NoError(t, err)
		ks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[key])
		require.NoError(t, err)
		for i := range ks {
			ks[i].ExpiresAt = ks[i].ExpiresAt.UTC()
		}
		return ks
	}
	require.Equal(t, []key{{"shop", "k1", "n1", live}, {"shop", "k2", "n2", expired}}, keys())
	// The key is the check now: records take the same key twice.
	insertKeyedRecord(t, pool, "n3", "shop", "k1", live)

	_, err = m.Down(ctx, 25)
	require.ErrorContains(t, err, "cannot restore records_idempotency_unique: producer shop has 2 records with idempotency key k1")
	_, err = pool.Exec(ctx, `DELETE FROM herald.records WHERE notification_id = 'n3'`)
	require.NoError(t, err)
	_, err = m.Down(ctx, 25)
	require.NoError(t, err)
	require.False(t, tableExists(t, pool, "herald.idempotency_keys"))
	_, err = pool.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
		payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
		VALUES ('n4', 't', 'shop', 'users', '{}', 'k2', 'fp', now(), now(), now(), now())`)
	requirePgError(t, err, "23505", "records_idempotency_unique")

	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, []key{{"shop", "k1", "n1", live}, {"shop", "k2", "n2", expired}}, keys())
}

// requirePgError requires err to be Postgres's error code on constraint.
func requirePgError(t *testing.T, err error, code, constraint string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, code, pgErr.Code)
	require.Equal(t, constraint, pgErr.ConstraintName)
}
