package herald_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/campaign"
	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/wake"
)

// What a producer holds (a lock, a transaction, a LISTEN) blocks no engine
// or operator action beyond a bound, and tells it nothing of another
// producer's traffic.

// A producer's LISTEN on the engine's topics, by their base names, hears
// nothing of another producer's submits, SQL-door entries or an
// operator's routing apply, while the engine, which knows the topics'
// names, is woken by them. The producer can neither read the secret the
// names end in nor see the engine's LISTEN statement.
func TestProducerRole_ListenHearsNoOthers(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()

	bases := []string{wake.RoutesTopic, wake.VetTopic, wake.IntakeTopic, wake.RoutingTopic, "herald_receipts"}
	spy, err := b.asA.Acquire(ctx)
	require.NoError(t, err)
	defer spy.Release()
	for _, base := range bases {
		_, err = spy.Exec(ctx, "LISTEN "+pgx.Identifier{base}.Sanitize())
		require.NoError(t, err)
	}

	// The engine's listener, on the name only its login can make.
	engine, err := b.admin.Acquire(ctx)
	require.NoError(t, err)
	defer engine.Release()
	topic, err := store.New().NotifyTopic(ctx, engine, wake.RoutesTopic)
	require.NoError(t, err)
	vetTopic, err := store.New().NotifyTopic(ctx, engine, wake.VetTopic)
	require.NoError(t, err)
	for _, name := range []string{topic, vetTopic} {
		_, err = engine.Exec(ctx, "LISTEN "+pgx.Identifier{name}.Sanitize())
		require.NoError(t, err)
	}

	// The producer cannot learn the name.
	_, err = b.asA.Exec(ctx, `SELECT token FROM herald.notify_secret`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `SELECT herald.notify_topic('herald_routes')`)
	requireSQLState(t, err, insufficientPrivilege)
	require.Zero(t, countAs(t, b.asA, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%LISTEN%' AND usename <> session_user`),
		"another login's statements are hidden")
	var prosrc string
	require.NoError(t, b.asA.QueryRow(ctx, `SELECT string_agg(prosrc, ' ') FROM pg_proc WHERE pronamespace = 'herald'::regnamespace`).Scan(&prosrc))
	require.NotContains(t, prosrc, topic[len(wake.RoutesTopic)+1:], "no function's text holds the secret")

	// Another producer submits (its Submit still wakes the engine: the
	// vetter, which checks a producer's routes first), writes an SQL-door
	// entry; an operator applies routing.
	submit(t, b.clientB, b.nameB, "k1")
	n, err := engine.Conn().WaitForNotification(ctxTimeout(t, 5*time.Second))
	require.NoError(t, err)
	require.Equal(t, vetTopic, n.Channel)
	require.Equal(t, "email", n.Payload)
	_, err = b.asB.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ('{}')`)
	require.NoError(t, err)
	f, err := routing.Parse([]byte(accessProvidersFile))
	require.NoError(t, err)
	_, err = routing.Apply(ctx, b.asOp, f, "ann", nil)
	require.NoError(t, err)

	_, err = spy.Conn().WaitForNotification(ctxTimeout(t, 500*time.Millisecond))
	require.True(t, errors.Is(err, context.DeadlineExceeded) || pgconnTimeout(err), "the producer heard: %v", err)
}

// An advisory key, which any login may take, held by a producer on the
// routing apply's name holds nothing up: an operator's apply serialises
// on a row a producer may not lock, and goes through.
func TestRoutingApply_ProducerLockHoldsNothing(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	holder, err := b.asA.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(hashtext('herald.routing_apply'))`)
	require.NoError(t, err)
	defer holder.Exec(context.Background(), `SELECT pg_advisory_unlock_all()`)
	_, err = holder.Exec(ctx, `SELECT 1 FROM herald.routing_state FOR UPDATE`)
	requireSQLState(t, err, insufficientPrivilege)

	f, err := routing.Parse([]byte(accessProvidersFile))
	require.NoError(t, err)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	changes, err := routing.Apply(actx, b.asOp, f, "ann", nil)
	require.NoError(t, err)
	require.Len(t, changes, 2)
}

// A producer whose open transaction joined a campaign (its SubmitTx holds
// the campaign's row until it commits) delays an operator's cancel a
// bounded time: the cancel, from Go and from psql, gives up within seconds
// with an error naming the producer's login and pid, and goes through
// once the producer commits.
func TestCampaignCancel_ProducerHoldBoundedNamed(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	submitSpring(t, b.clientA, b.nameA, "c0")
	tx, err := b.asA.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = b.clientA.SubmitTx(ctx, tx, &herald.Intent{
		NotificationType: "promo", Producer: b.nameA, IdempotencyKey: "c1", Campaign: "spring",
		Audience: herald.Audience{Email: []string{"ops@example.com"}}, Channels: []string{"email"},
		Content: herald.Content{Email: &herald.EmailContent{Subject: "Spring", Text: "Sale."}},
	})
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))

	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	_, err = campaign.Cancel(cctx, b.asOp, b.nameA, "spring", campaign.CancelOpts{Actor: "ann"})
	require.Error(t, err)
	require.Less(t, time.Since(start), 20*time.Second)
	requireSQLState(t, err, "55P03")
	require.ErrorContains(t, err, b.nameA)
	require.ErrorContains(t, err, fmt.Sprintf("pid %d", pid))
	require.ErrorContains(t, err, "RowShareLock on herald.campaigns")

	_, err = b.asOp.Exec(cctx, `CALL herald.campaign_cancel($1, 'spring', 'ann', 'psql')`, b.nameA)
	requireSQLState(t, err, "55P03")
	require.ErrorContains(t, err, fmt.Sprintf("%s (pid %d)", b.nameA, pid))

	require.NoError(t, tx.Commit(ctx))
	res, err := campaign.Cancel(cctx, b.asOp, b.nameA, "spring", campaign.CancelOpts{Actor: "ann"})
	require.NoError(t, err)
	require.True(t, res.Done)
	require.EqualValues(t, 2, res.Canceled)
}

func submitSpring(t *testing.T, c *herald.Client, producer, key string) {
	t.Helper()
	_, err := c.Submit(context.Background(), &herald.Intent{
		NotificationType: "promo", Producer: producer, IdempotencyKey: key, Campaign: "spring",
		Audience: herald.Audience{Email: []string{"ops@example.com"}}, Channels: []string{"email"},
		Content: herald.Content{Email: &herald.EmailContent{Subject: "Spring", Text: "Sale."}},
	})
	require.NoError(t, err)
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
