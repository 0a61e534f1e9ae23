package maintenance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/maintenance"
)

// A producer's open transaction that read its routes holds routes_live
// (the default partition), which attaching a week locks in ACCESS
// EXCLUSIVE mode (PostgreSQL 15 takes it on the default partition however
// the week's table is made). Making weeks gives up within its bound and
// says who held what: the producer's login and pid.
func TestWeeks_NamesBlockingProducerTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	login, asProducer := pgtemp.Login(t, b.pool, "prod", "herald_producer")
	tx, err := asProducer.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT count(*) FROM herald.routes`)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))

	// Weeks far ahead of any made so far.
	m := b.newMaintenance(t, time.Now().Add(60*24*time.Hour), maintenance.Config{FinishedRetention: 7 * day})
	start := time.Now()
	_, _, err = m.Weeks(ctx)
	requireSQLState(t, err, "55P03")
	require.Less(t, time.Since(start), 30*time.Second)
	require.ErrorContains(t, err, login)
	require.ErrorContains(t, err, fmt.Sprintf("pid %d", pid))
	require.ErrorContains(t, err, "AccessShareLock on herald.routes_live")

	_, _, _, err = m.RecordWeeks(ctx)
	requireSQLState(t, err, "55P03")
	require.ErrorContains(t, err, login)

	// Once the producer's transaction ends, the weeks are made.
	require.NoError(t, tx.Rollback(ctx))
	made, _, err := m.Weeks(ctx)
	require.NoError(t, err)
	require.Positive(t, made)
}
