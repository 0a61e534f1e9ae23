package accept

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/pgarray"
	"github.com/heraldhq/herald/internal/store"
)

// TestWithArrays_RegistersOnTheConnectionUsed: through a pool, a pool's
// connection or a transaction, the insert runs on a connection whose type
// map pgarray encodes with, and Accept stores the batch all the same.
func TestWithArrays_RegistersOnTheConnectionUsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)

	var used *pgxpool.Conn
	require.NoError(t, withArrays(ctx, pool, func(db store.DBTX) error {
		used = db.(*pgxpool.Conn)
		require.True(t, pgarray.Registered(used.Conn().TypeMap()))
		return nil
	}))

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	require.NoError(t, withArrays(ctx, conn, func(db store.DBTX) error {
		require.Same(t, conn, db)
		return nil
	}))
	require.True(t, pgarray.Registered(conn.Conn().TypeMap()))

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	require.NoError(t, withArrays(ctx, tx, func(db store.DBTX) error {
		require.Same(t, tx, db)
		return nil
	}))
	require.True(t, pgarray.Registered(tx.Conn().TypeMap()))

	for key, db := range map[string]store.DBTX{"arrays-pool": pool, "arrays-tx": tx} {
		in := validIntent()
		in.IdempotencyKey = key
		v := mustValidate(t, in)
		outs, err := Accept(ctx, db, []*intake.Validated{v}, Params{Optimism: new(Optimism)})
		require.NoError(t, err)
		require.Len(t, outs, 1)
		require.False(t, outs[0].Duplicate || outs[0].Conflict)
		var routes int
		require.NoError(t, db.QueryRow(ctx, "select count(*) from herald.routes where notification_id = $1",
			outs[0].NotificationID).Scan(&routes))
		require.Equal(t, len(v.Routes), routes)
	}
}
