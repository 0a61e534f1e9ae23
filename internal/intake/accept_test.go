package intake

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtemp"
)

// mustValidate validates in at testNow.
func mustValidate(t *testing.T, in *Intent) *Validated {
	t.Helper()
	v, err := Validate(in, Limits{}, testNow)
	require.NoError(t, err)
	return v
}

// waitForLockWaiter waits until a backend of pool's database waits for a
// lock.
func waitForLockWaiter(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n > 0
	}, 10*time.Second, 5*time.Millisecond)
}

// A key committed by a racing transaction while the statement ran is
// invisible to the statement's snapshot: Accept must find it with a second
// statement, as a duplicate or a conflict.
func TestAcceptResolvesAKeyCommittedByARacingTransaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mutate   func(*Intent)
		conflict bool
	}{
		{"SameRequestIsDuplicate", func(*Intent) {}, false},
		{"OtherRequestIsConflict", func(in *Intent) { in.Content.SMS.Body = "changed" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtemp.NewPool(t)

			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(ctx)
			first, err := Accept(ctx, tx, []*Validated{mustValidate(t, validIntent())}, AcceptParams{})
			require.NoError(t, err)

			second := validIntent()
			tc.mutate(second)
			type result struct {
				out []Outcome
				err error
			}
			done := make(chan result)
			go func() {
				out, err := Accept(ctx, pool, []*Validated{mustValidate(t, second)}, AcceptParams{})
				done <- result{out, err}
			}()
			waitForLockWaiter(t, pool) // the second insert waits for the first
			require.NoError(t, tx.Commit(ctx))

			r := <-done
			require.NoError(t, r.err)
			require.Equal(t, first[0].NotificationID, r.out[0].NotificationID)
			require.Equal(t, !tc.conflict, r.out[0].Duplicate)
			require.Equal(t, tc.conflict, r.out[0].Conflict)
			require.Equal(t, first[0].AcceptedAt, r.out[0].AcceptedAt)
		})
	}
}

func TestAcceptOfNothingSendsNothing(t *testing.T) {
	t.Parallel()
	out, err := Accept(context.Background(), nil, nil, AcceptParams{})
	require.NoError(t, err)
	require.Empty(t, out)
}

func TestHintChannelNamesTheOneChannelOrNone(t *testing.T) {
	t.Parallel()
	sms := &Validated{Routes: []RoutePlan{{Channel: "sms"}, {Channel: "sms"}}}
	mixed := &Validated{Routes: []RoutePlan{{Channel: "sms"}, {Channel: "email"}}}
	require.Equal(t, "sms", HintChannel([]*Validated{sms, sms}))
	require.Empty(t, HintChannel([]*Validated{sms, mixed}))
	require.Empty(t, HintChannel(nil))
}

// Were keys inserted in batch order, this would deadlock: A holds "a",
// B inserts "b" then waits for "a", A then waits for "b". Accept inserts in
// key order, so B waits for "a" before taking "b", and A goes on.
func TestAcceptOfOverlappingBatchesCannotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	batch := func(keys ...string) []*Validated {
		var vs []*Validated
		for _, k := range keys {
			in := validIntent()
			in.IdempotencyKey = k
			vs = append(vs, mustValidate(t, in))
		}
		return vs
	}

	txA, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer txA.Rollback(ctx)
	_, err = Accept(ctx, txA, batch("a"), AcceptParams{})
	require.NoError(t, err)

	type result struct {
		out []Outcome
		err error
	}
	done := make(chan result)
	go func() {
		out, err := Accept(ctx, pool, batch("b", "a"), AcceptParams{})
		done <- result{out, err}
	}()
	waitForLockWaiter(t, pool)
	_, err = Accept(ctx, txA, batch("b"), AcceptParams{})
	require.NoError(t, err, "no deadlock")
	require.NoError(t, txA.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.True(t, r.out[0].Duplicate)
	require.True(t, r.out[1].Duplicate)
}
