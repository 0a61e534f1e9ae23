package accept

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// Fixtures shared with package intake's tests.
var (
	testNow    = intaketest.Now
	fuzzLimits = intake.Limits(intaketest.Limits)
)

const validEntry = intaketest.ValidEntry

// validIntent returns validEntry decoded: the valid intent of intake's
// tests, one user and one direct address on each of the three channels.
func validIntent() *intake.Intent {
	in, err := intake.DecodeRaw([]byte(validEntry), intake.Limits{})
	if err != nil {
		panic(err)
	}
	return in
}

// mustValidate validates in at testNow.
func mustValidate(t *testing.T, in *intake.Intent) *intake.Validated {
	t.Helper()
	v, err := intake.Validate(in, intake.Limits{}, testNow)
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
func TestAccept_ResolvesKeyOfRacingTx(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mutate   func(*intake.Intent)
		conflict bool
	}{
		{"SameRequestIsDuplicate", func(*intake.Intent) {}, false},
		{"OtherRequestIsConflict", func(in *intake.Intent) { in.Content.SMS.Body = "changed" }, true},
	} {
		for _, o := range []*Optimism{nil, new(Optimism)} {
			name := tc.name
			if o != nil {
				name += "AfterThePlainInsert" // which fails on the key, once committed
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				pool := pgtemp.NewPool(t)

				tx, err := pool.Begin(ctx)
				require.NoError(t, err)
				defer tx.Rollback(ctx)
				first, err := Accept(ctx, tx, []*intake.Validated{mustValidate(t, validIntent())}, Params{})
				require.NoError(t, err)

				second := validIntent()
				tc.mutate(second)
				type result struct {
					out []Outcome
					err error
				}
				done := make(chan result)
				go func() {
					out, err := Accept(ctx, pool, []*intake.Validated{mustValidate(t, second)}, Params{Optimism: o})
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
				if o != nil {
					require.Equal(t, [2]int64{0, 1}, counts(o))
				}
			})
		}
	}
}

func TestAccept_NothingSendsNothing(t *testing.T) {
	t.Parallel()
	out, err := Accept(context.Background(), nil, nil, Params{})
	require.NoError(t, err)
	require.Empty(t, out)
}

func TestHintChannel_NamesOneChannelOrNone(t *testing.T) {
	t.Parallel()
	sms := &intake.Validated{Routes: []intake.RoutePlan{{Channel: "sms"}, {Channel: "sms"}}}
	mixed := &intake.Validated{Routes: []intake.RoutePlan{{Channel: "sms"}, {Channel: "email"}}}
	require.Equal(t, "sms", HintChannel([]*intake.Validated{sms, sms}))
	require.Empty(t, HintChannel([]*intake.Validated{sms, mixed}))
	require.Empty(t, HintChannel(nil))
}

// Were keys inserted in batch order, this would deadlock: A holds "a",
// B inserts "b" then waits for "a", A then waits for "b". Accept inserts in
// key order, so B waits for "a" before taking "b", and A goes on.
func TestAccept_OverlappingBatchesNeverDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	txA, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer txA.Rollback(ctx)
	_, err = Accept(ctx, txA, keyed(t, "a"), Params{})
	require.NoError(t, err)

	type result struct {
		out []Outcome
		err error
	}
	done := make(chan result)
	go func() {
		out, err := Accept(ctx, pool, keyed(t, "b", "a"), Params{})
		done <- result{out, err}
	}()
	waitForLockWaiter(t, pool)
	_, err = Accept(ctx, txA, keyed(t, "b"), Params{})
	require.NoError(t, err, "no deadlock")
	require.NoError(t, txA.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.True(t, r.out[0].Duplicate)
	require.True(t, r.out[1].Duplicate)
}
