package accept

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// A key is reserved for its window: within it the same
// key is the first notification's duplicate (or conflict); after it the
// key is free, and the next accept of it is a new notification, which
// holds the key for a window of its own. The old notification stays.
// Whichever way the accept goes in: through a pool with the plain insert
// first (which the expired key fails), with ON CONFLICT alone, or in the
// caller's transaction.
func TestAccept_ExpiredKeyIsFree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		optimism bool
		tx       bool
	}{{"PlainInsertFirst", true, false}, {"OnConflict", false, false}, {"InATransaction", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtemp.NewPool(t)
			var o *Optimism
			if tc.optimism {
				o = new(Optimism)
			}
			t0 := time.Now().Truncate(time.Millisecond)
			acceptAt := func(at time.Time, vs []*intake.Validated) []Outcome {
				t.Helper()
				p := Params{Now: at, IdempotencyWindow: time.Hour, Optimism: o}
				if !tc.tx {
					out, err := Accept(ctx, pool, vs, p)
					require.NoError(t, err)
					return out
				}
				var out []Outcome
				require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					var err error
					out, err = Accept(ctx, tx, vs, p)
					return err
				}))
				return out
			}

			first := acceptAt(t0, keyed(t, "k", "other"))
			within := acceptAt(t0.Add(59*time.Minute), keyed(t, "k"))
			require.True(t, within[0].Duplicate, "within the window")
			require.Equal(t, first[0].NotificationID, within[0].NotificationID)

			changed := validIntent()
			changed.IdempotencyKey = "k"
			changed.Content.SMS.Body = "another request"
			// The expired key twice in one batch: one new notification, and
			// its duplicate; a key within its window beside them.
			after := acceptAt(t0.Add(61*time.Minute), []*intake.Validated{
				mustValidate(t, changed), mustValidate(t, changed), keyed(t, "fresh")[0],
			})
			require.False(t, after[0].Duplicate || after[0].Conflict, "the key is free after its window")
			require.NotEqual(t, first[0].NotificationID, after[0].NotificationID)
			require.True(t, after[1].Duplicate)
			require.Equal(t, after[0].NotificationID, after[1].NotificationID)
			require.False(t, after[2].Duplicate || after[2].Conflict)
			if o != nil {
				fresh, fellBack := o.Counts()
				require.Equal(t, [2]int64{1, 2}, [2]int64{fresh, fellBack}, "the plain insert met the held key, then the expired one")
			}

			// The key names the new notification, for a window from its accept.
			var holder string
			var expires time.Time
			require.NoError(t, pool.QueryRow(ctx, `SELECT notification_id, expires_at FROM herald.idempotency_keys
				WHERE idempotency_key = 'k'`).Scan(&holder, &expires))
			require.Equal(t, after[0].NotificationID, holder)
			require.WithinDuration(t, t0.Add(121*time.Minute), expires, time.Millisecond)
			again := acceptAt(t0.Add(62*time.Minute), keyed(t, "k"))
			require.True(t, again[0].Conflict, "the new notification's request is another")
			require.Equal(t, after[0].NotificationID, again[0].NotificationID)
			// Both records stay, each with the key it was accepted with.
			var records int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM herald.records WHERE idempotency_key = 'k'`).Scan(&records))
			require.Equal(t, 2, records)
			// The other key, never used again, is untouched.
			var otherHolder string
			require.NoError(t, pool.QueryRow(ctx, `SELECT notification_id FROM herald.idempotency_keys
				WHERE idempotency_key = 'other'`).Scan(&otherHolder))
			require.Equal(t, first[1].NotificationID, otherHolder)
		})
	}
}

// Two accepts that meet the same expired key at once: both release it
// (the second finds nothing left to release), both insert it again, and
// one notification holds it; the other accept gets it as its duplicate.
func TestAccept_RacingForExpiredKeyGetOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	t0 := time.Now().Truncate(time.Millisecond)
	_, err := Accept(ctx, pool, keyed(t, "k"), Params{Now: t0, IdempotencyWindow: time.Hour})
	require.NoError(t, err)

	later := Params{Now: t0.Add(2 * time.Hour), IdempotencyWindow: time.Hour}
	txA, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer txA.Rollback(ctx)
	outA, err := Accept(ctx, txA, keyed(t, "k"), later)
	require.NoError(t, err)
	require.False(t, outA[0].Duplicate)

	type result struct {
		out []Outcome
		err error
	}
	done := make(chan result)
	go func() {
		out, err := Accept(ctx, pool, keyed(t, "k"), later)
		done <- result{out, err}
	}()
	waitForLockWaiter(t, pool) // B's release waits for A's
	require.NoError(t, txA.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.True(t, r.out[0].Duplicate)
	require.Equal(t, outA[0].NotificationID, r.out[0].NotificationID)
}

// The release function frees only expired keys still held by the
// notification the caller names: a key taken over since, or within its
// window, is left.
func TestAccept_ReleaseFreesOnlyNamedExpiredKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	t0 := time.Now().Truncate(time.Millisecond)
	out, err := Accept(ctx, pool, keyed(t, "a", "b"), Params{Now: t0, IdempotencyWindow: time.Hour})
	require.NoError(t, err)
	producer := validIntent().Producer
	release := func(at time.Time, key, id string) int32 {
		t.Helper()
		n, err := store.New().IdempotencyKeysRelease(ctx, pool, store.IdempotencyKeysReleaseParams{
			Producers: []string{producer}, IdempotencyKeys: []string{key}, NotificationIds: []string{id}, Now: &at,
		})
		require.NoError(t, err)
		return n
	}
	require.Zero(t, release(t0.Add(30*time.Minute), "a", out[0].NotificationID), "within its window")
	require.Zero(t, release(t0.Add(2*time.Hour), "a", out[1].NotificationID), "held by another notification")
	require.Equal(t, int32(1), release(t0.Add(2*time.Hour), "a", out[0].NotificationID))
	require.Zero(t, release(t0.Add(2*time.Hour), "a", out[0].NotificationID), "gone already")
	var left []string
	rows, err := pool.Query(ctx, `SELECT idempotency_key FROM herald.idempotency_keys ORDER BY 1`)
	require.NoError(t, err)
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, left)
}
