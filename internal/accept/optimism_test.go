package accept

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

// keyed returns validIntent under each of keys, validated.
func keyed(t *testing.T, keys ...string) []*intake.Validated {
	t.Helper()
	vs := make([]*intake.Validated, len(keys))
	for i, k := range keys {
		in := validIntent()
		in.IdempotencyKey = k
		vs[i] = mustValidate(t, in)
	}
	return vs
}

// keysN returns n keys prefix0, prefix1, ...
func keysN(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return ks
}

// stored returns how many records and routes pool's database holds.
func stored(t *testing.T, pool *pgxpool.Pool) (records, routes int) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM herald.records), (SELECT count(*) FROM herald.routes)`).Scan(&records, &routes))
	return records, routes
}

// counts returns o's counts as a pair, for one require.Equal.
func counts(o *Optimism) [2]int64 {
	fresh, fellBack := o.Counts()
	return [2]int64{fresh, fellBack}
}

// New keys go in with the plain insert, every record and route once.
func TestOptimism_StoresNewKeysWithPlainInsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	var o Optimism
	vs := keyed(t, keysN("k", 50)...)

	out, err := Accept(ctx, pool, vs, Params{Optimism: &o})
	require.NoError(t, err)
	require.Equal(t, [2]int64{1, 0}, counts(&o))
	ids := map[string]bool{}
	for _, r := range out {
		require.False(t, r.Duplicate || r.Conflict)
		ids[r.NotificationID] = true
	}
	require.Len(t, ids, 50)
	records, routes := stored(t, pool)
	require.Equal(t, 50, records)
	require.Equal(t, 50*len(vs[0].Routes), routes)
}

// A key that exists fails the plain insert, which writes nothing; the ON
// CONFLICT insert then stores the batch: duplicates and conflicts answered
// as without optimism, new keys stored once. The Optimism stays
// pessimistic for DefaultPessimism, then tries the plain insert again.
func TestOptimism_FallsBackOnExistingKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	var o Optimism
	at := testNow

	first, err := Accept(ctx, pool, keyed(t, keysN("k", 10)...), Params{Now: at, Optimism: &o})
	require.NoError(t, err)
	require.Equal(t, [2]int64{1, 0}, counts(&o))

	// k5..k9 again as they were (duplicates), k3 with other content (a
	// conflict), and ten new keys.
	batch := keyed(t, append(keysN("k", 10)[5:], keysN("n", 10)...)...)
	changed := validIntent()
	changed.IdempotencyKey = "k3"
	changed.Content.SMS.Body = "changed"
	batch = append(batch, mustValidate(t, changed))
	out, err := Accept(ctx, pool, batch, Params{Now: at, Optimism: &o})
	require.NoError(t, err)
	require.Equal(t, [2]int64{1, 1}, counts(&o), "the plain insert failed, ON CONFLICT stored the batch")
	for i := range 5 {
		require.True(t, out[i].Duplicate, "k%d", 5+i)
		require.Equal(t, first[5+i].NotificationID, out[i].NotificationID)
	}
	for i := 5; i < 15; i++ {
		require.False(t, out[i].Duplicate || out[i].Conflict, "n%d is new", i-5)
	}
	require.True(t, out[15].Conflict)
	require.Equal(t, first[3].NotificationID, out[15].NotificationID)
	records, routes := stored(t, pool)
	require.Equal(t, 20, records)
	require.Equal(t, 20*len(batch[0].Routes), routes)

	// Pessimistic: new keys go through ON CONFLICT, no plain insert tried.
	_, err = Accept(ctx, pool, keyed(t, keysN("p", 5)...), Params{Now: at.Add(DefaultPessimism - time.Second), Optimism: &o})
	require.NoError(t, err)
	require.Equal(t, [2]int64{1, 1}, counts(&o))

	// The period over, the plain insert again.
	_, err = Accept(ctx, pool, keyed(t, keysN("q", 5)...), Params{Now: at.Add(DefaultPessimism), Optimism: &o})
	require.NoError(t, err)
	require.Equal(t, [2]int64{2, 1}, counts(&o))
	records, _ = stored(t, pool)
	require.Equal(t, 30, records)
}

// In a transaction a failed statement would abort it: Accept never tries
// the plain insert there, and the transaction goes on after a duplicate.
func TestOptimism_NeverTriedInATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	var o Optimism
	_, err := Accept(ctx, pool, keyed(t, "k"), Params{})
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	out, err := Accept(ctx, tx, keyed(t, "k", "new"), Params{Optimism: &o})
	require.NoError(t, err)
	require.True(t, out[0].Duplicate)
	require.Equal(t, [2]int64{0, 0}, counts(&o))
	_, err = Accept(ctx, tx, keyed(t, "newer"), Params{Optimism: &o})
	require.NoError(t, err, "the transaction is still usable")
	require.NoError(t, tx.Commit(ctx))
	records, _ := stored(t, pool)
	require.Equal(t, 3, records)

	// A connection: standalone outside a transaction, not inside one
	// begun by a plain BEGIN.
	c, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	require.True(t, standalone(pool))
	require.True(t, standalone(c))
	require.True(t, standalone(c.Conn()))
	_, err = c.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	require.False(t, standalone(c))
	require.False(t, standalone(c.Conn()))
	out, err = Accept(ctx, c, keyed(t, "k"), Params{Optimism: &o})
	require.NoError(t, err)
	require.True(t, out[0].Duplicate)
	require.Equal(t, [2]int64{0, 0}, counts(&o))
	_, err = c.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.False(t, standalone(tx))
}

// Another constraint's unique violation is the caller's error, as without
// optimism: not retried, nothing stored, the constraint named.
func TestOptimism_ReturnsOtherUniqueViolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	// Records are partitioned by id, and a unique index
	// of a partitioned table must hold its key: a unique index of the
	// routes in flight instead, which both intents' routes share.
	_, err := pool.Exec(ctx, `CREATE UNIQUE INDEX routes_one_recipient ON herald.routes_live (channel, recipient_ref)`)
	require.NoError(t, err)
	var o Optimism

	_, err = Accept(ctx, pool, keyed(t, "a", "b"), Params{Optimism: &o}) // the same recipients, two keys
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, pgerrcode.UniqueViolation, pgErr.Code)
	require.Equal(t, "routes_one_recipient", pgErr.ConstraintName)
	require.Equal(t, [2]int64{0, 0}, counts(&o))
	records, routes := stored(t, pool)
	require.Zero(t, records)
	require.Zero(t, routes)
}

// Racing batches of overlapping keys through one Optimism: each key stored
// once, every intent answered as new or duplicate, whichever insert ran.
func TestOptimism_RacingBatchesStoreKeyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	var o Optimism
	const workers, rounds, per, space = 4, 6, 12, 40

	var mu sync.Mutex
	ids := map[string]string{} // key -> notification id
	var news int
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				ks := make([]string, per)
				for i := range ks {
					ks[i] = fmt.Sprintf("k%d", (w*7+r*per+i*3)%space)
				}
				vs := keyed(t, ks...)
				// Without this, racing pessimism would leave most batches
				// to ON CONFLICT: the plain insert must meet the races.
				o.pessimisticUntil.Store(0)
				out, err := Accept(ctx, pool, vs, Params{Optimism: &o})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen := map[string]bool{}
				for i, res := range out {
					if res.Conflict {
						errs <- fmt.Errorf("key %s: conflict for the same request", ks[i])
					}
					if id, ok := ids[ks[i]]; ok && id != res.NotificationID {
						errs <- fmt.Errorf("key %s: two notifications %s and %s", ks[i], id, res.NotificationID)
					}
					ids[ks[i]] = res.NotificationID
					if !res.Duplicate && !seen[ks[i]] {
						news++
					}
					seen[ks[i]] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	records, _ := stored(t, pool)
	require.Equal(t, len(ids), records)
	require.Equal(t, len(ids), news, "each stored key answered as new exactly once")
	fresh, fellBack := o.Counts()
	require.Positive(t, fresh)
	require.Positive(t, fellBack)
}
