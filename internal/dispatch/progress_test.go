package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
)

// holdLock runs sql (a LOCK TABLE or a SELECT … FOR UPDATE: statements
// that exist only to take a lock, so they are written here rather than in
// queries/) in a transaction of its own on the bundle's pool, whose role
// owns the tables, and returns a function that ends the transaction,
// releasing the lock; it is also called when the test ends.
func (b *testBundle) holdLock(t *testing.T, sql string, args ...any) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, sql, args...)
	require.NoError(t, err)
	var done atomic.Bool
	unlock = func() {
		if done.CompareAndSwap(false, true) {
			require.NoError(t, tx.Rollback(ctx))
		}
	}
	t.Cleanup(unlock)
	return unlock
}

// count returns how many log lines contain msg.
func count(logs *syncBuffer, msg string) int {
	return strings.Count(logs.String(), `"msg":"`+msg+`"`)
}

// claimParams claims up to 10 due routes of ch, on the database's clock.
func claimParams(ch string) store.RouteClaimDueParams {
	return store.RouteClaimDueParams{LeaseSeconds: 60, Max: 10, Channel: ch}
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, code, pgErr.Code, "%v", err)
}

// The timeouts are run-time parameters of the dispatcher's own sessions,
// so they bound even the wait for a table lock, which a statement takes
// before anything inside it runs; the caller's pool (maintenance, intake)
// keeps its own settings.
func TestDispatcher_SessionsBoundLockWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})
	d := b.newDispatcher(t, &Config{
		Channels:         map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}},
		LockTimeout:      150 * time.Millisecond,
		StatementTimeout: 300 * time.Millisecond,
	})
	ctx := context.Background()
	show := func(db interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, name string) string {
		var v string
		// SHOW is a server setting: no table for sqlc.
		require.NoError(t, db.QueryRow(ctx, "SHOW "+name).Scan(&v))
		return v
	}
	require.Equal(t, "150ms", show(d.pool, "lock_timeout"))
	require.Equal(t, "300ms", show(d.pool, "statement_timeout"))
	require.Equal(t, "0", show(b.pool, "lock_timeout"), "the caller's pool is left alone")
	require.Equal(t, "0", show(b.pool, "statement_timeout"), "the caller's pool is left alone")

	unlock := b.holdLock(t, "LOCK TABLE herald.routes IN ACCESS EXCLUSIVE MODE")
	// A generous deadline: were the wait unbounded, the claim would end by
	// it with a context error, not with lock_not_available.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := d.q.RouteClaimDue(cctx, d.pool, claimParams(channel.SMS))
	requireCode(t, err, pgerrcode.LockNotAvailable)
	require.Equal(t, "lock", timeoutKind(err))
	unlock()

	// statement_timeout: a statement that outruns it is canceled.
	_, err = d.pool.Exec(cctx, "SELECT pg_sleep(30)")
	requireCode(t, err, pgerrcode.QueryCanceled)
	require.Equal(t, "statement", timeoutKind(err))

	rows, err := d.q.RouteClaimDue(cctx, d.pool, claimParams(channel.SMS))
	require.NoError(t, err)
	require.Len(t, rows, 1, "the lock gone, the claim succeeds")
}

// An operator's LOCK TABLE stops every claim. The dispatcher must not hang
// behind it: each claim times out, is counted, and is retried with
// backoff; the failure is logged once; CheckProgress reports the stall with
// its reason; and when the lock goes the routes are delivered and the
// dispatcher is ready again by itself.
func TestClaim_LockTimeoutIsReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys := b.insert(t,
		routeSpec{channel: channel.SMS, ref: "+33612345671"},
		routeSpec{channel: channel.SMS, ref: "+33612345672"},
		routeSpec{channel: channel.SMS, ref: "+33612345673"},
	)
	var delivered atomic.Int32
	counting := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		delivered.Add(1)
		return channel.Outcome{Class: channel.Delivered}
	})
	m := metrics.New(nil)
	var logs syncBuffer
	unlock := b.holdLock(t, "LOCK TABLE herald.routes IN ACCESS EXCLUSIVE MODE")
	d := b.start(t, &Config{
		Channels:     map[string]ChannelConfig{channel.SMS: {Deliverer: counting}},
		LockTimeout:  100 * time.Millisecond,
		StallTimeout: 300 * time.Millisecond,
		Metrics:      m,
		Logger:       slog.New(slog.NewJSONHandler(&logs, nil)),
	})

	timeouts := m.DispatchDBTimeouts.WithLabelValues(opClaim, channel.SMS, "lock")
	require.Eventually(t, func() bool { return testutil.ToFloat64(timeouts) >= 3 }, 30*time.Second, 10*time.Millisecond,
		"claims time out behind the lock and are retried")
	var stalled error
	require.Eventually(t, func() bool { stalled = d.CheckProgress(); return stalled != nil }, 30*time.Second, 10*time.Millisecond)
	require.ErrorIs(t, stalled, ErrStalled)
	require.ErrorContains(t, stalled, `channel loop "sms"`)
	require.ErrorContains(t, stalled, "claim timed out (lock_timeout)")
	require.Zero(t, delivered.Load())
	require.Equal(t, 1, count(&logs, "dispatcher statement failed; retrying with backoff"),
		"one line for the episode, however many retries: %s", logs.String())

	unlock()
	for _, k := range keys {
		r := b.waitStatus(t, k, "published")
		require.EqualValues(t, 1, r.AttemptCount, "a claim that timed out took no attempt")
	}
	require.EqualValues(t, 3, delivered.Load())
	require.Eventually(t, func() bool { return d.CheckProgress() == nil }, 30*time.Second, 10*time.Millisecond,
		"ready again once the lock is gone")
	require.Eventually(t, func() bool { return count(&logs, "dispatcher statements succeed again") == 1 },
		30*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, count(&logs, "dispatcher statement failed; retrying with backoff"))
}

// A forgotten transaction holding a route's row lock blocks that route's
// completion only. The completion times out once, is counted and set
// aside (the outcome is kept, not dropped) while the completer goes on
// (CheckProgress reports nothing stuck), and once the lock goes the route
// ends published after its one delivery.
func TestComplete_RowLockTimeoutLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	delivering := make(chan struct{})
	proceed := make(chan struct{})
	var delivered atomic.Int32
	held := channel.DelivererFunc(func(context.Context, *channel.Message) channel.Outcome {
		if delivered.Add(1) == 1 {
			close(delivering)
		}
		<-proceed
		return channel.Outcome{Class: channel.Delivered}
	})
	m := metrics.New(nil)
	var logs syncBuffer
	d := b.start(t, &Config{
		Channels:     map[string]ChannelConfig{channel.SMS: {Deliverer: held}},
		LockTimeout:  100 * time.Millisecond,
		StallTimeout: 300 * time.Millisecond,
		Metrics:      m,
		Logger:       slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	select {
	case <-delivering:
	case <-time.After(30 * time.Second):
		t.Fatal("the route was never delivered")
	}
	unlock := b.holdLock(t, "SELECT 1 FROM herald.routes WHERE notification_id = $1 AND route_id = $2 FOR UPDATE",
		k.notificationID, k.routeID)
	close(proceed)

	timeouts := m.DispatchDBTimeouts.WithLabelValues(opComplete, channel.SMS, "lock")
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "completions set aside") == 1 }, 30*time.Second, 10*time.Millisecond,
		"the completion times out behind the row lock and is set aside")
	require.Equal(t, 1.0, testutil.ToFloat64(timeouts), "counted once; tried again without waiting")
	// Tried again for longer than the stall timeout, without a stall.
	time.Sleep(3 * 300 * time.Millisecond)
	require.NoError(t, d.CheckProgress())
	require.Equal(t, 1.0, testutil.ToFloat64(timeouts))
	require.Equal(t, "claimed", b.route(t, k).Status, "nothing written yet")
	require.EqualValues(t, 1, d.Stats().InHand, "the outcome is kept")
	require.Equal(t, 1, count(&logs, "dispatcher statement failed; retrying with backoff"), "%s", logs.String())

	unlock()
	r := b.waitStatus(t, k, "published")
	require.EqualValues(t, 1, r.AttemptCount)
	require.EqualValues(t, 1, delivered.Load(), "delivered once: the outcome waited, the route was not claimed again")
	require.Zero(t, d.Stats().Stale)
	require.Eventually(t, func() bool { return d.CheckProgress() == nil }, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return d.Stats().InHand == 0 }, 30*time.Second, 10*time.Millisecond)
}

// A dispatcher with nothing to do is healthy however long it idles: its
// loops' statements succeed, and the time between rounds does not count.
func TestCheckProgress_IdleIsProgress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stall := time.Second
	d := b.start(t, &Config{
		Channels:     map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}},
		StallTimeout: stall,
	})
	for end := time.Now().Add(3 * stall); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		require.NoError(t, d.CheckProgress())
	}
	require.Zero(t, d.Stats().Claimed)
}

func TestCheckProgress_NilWhenNotRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	require.NoError(t, d.CheckProgress())
}

func TestRun_AgainReturnsErrClosed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, d.Run(ctx))
	require.True(t, errors.Is(d.Run(context.Background()), ErrClosed))
}
