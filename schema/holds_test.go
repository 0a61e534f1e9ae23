package schema_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/schema"
)

// A producer holding every advisory key a migrate run ever waited on (the
// run's own, goose's default session key) holds no migrate up: the run's
// lock is a leased row of herald.goose_lock, which a producer may neither
// write nor lock.
func TestMigrator_ProducerLocksHoldUpNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	_, asProducer := pgtemp.Login(t, pool, "prod", "herald_producer")
	holder, err := asProducer.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(x'686572616c64'::bigint), pg_advisory_lock(4097083626)`)
	require.NoError(t, err)
	defer holder.Exec(context.Background(), `SELECT pg_advisory_unlock_all()`)

	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m := schema.NewMigrator(pool, nil)
	steps, err := m.DownOne(mctx)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	steps, err = m.Up(mctx)
	require.NoError(t, err)
	require.Len(t, steps, 1)

	// The lock the runs take instead is one the producer cannot take.
	for _, sql := range []string{
		`SELECT 1 FROM herald.goose_lock FOR UPDATE`,
		`UPDATE herald.goose_lock SET locked = true`,
		`INSERT INTO herald.goose_lock (lock_id, locked) VALUES (1, true)`,
	} {
		_, err = holder.Exec(ctx, sql)
		require.ErrorContains(t, err, "permission denied", sql)
	}
}
