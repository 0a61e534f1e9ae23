package engine

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/smpp"
	"github.com/heraldhq/herald/internal/smpp/smsctest"
)

// TestSMPPReceiptsThatArriveTogetherAreStoredTogether has the SMSC send 20
// receipts at once while the first waits on a lock: the driver stores the
// ones behind it in one statement and one commit (the engine's
// receipt.Group), answers every deliver_sm ESME_ROK only once its own
// receipt is stored, and keeps a receipt whose text holds a NUL (some
// SMSCs end theirs with one) rather than refusing it at every resend.
// Inbound messages sent together are stored together the same way.
func TestSMPPReceiptsThatArriveTogetherAreStoredTogether(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	smsc, err := smsctest.Start(t, smsctest.Config{SystemID: "herald", Password: "pw"})
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(smsc.Addr())
	require.NoError(t, err)
	b.applyRouting(t, fmt.Sprintf(`
providers:
  - name: sms/smsc
    driver: smpp
    smpp: {host: %q, port: %s, system_id: herald, password: {env: SMSC_PASSWORD}}
rules:
  sms:
    - name: all
      providers: [sms/smsc]
`, host, port))
	e, err := New(b.pool, &Config{
		Logger:     discardLogger(),
		GetenvFunc: env(map[string]string{"SMSC_PASSWORD": "pw"}),
		Dispatch: dispatch.Config{
			Channels:     map[string]dispatch.ChannelConfig{"webhook": {Deliverer: &closingDeliverer{}}},
			PollInterval: 50 * time.Millisecond,
		},
		Intake: &accept.WorkerConfig{PollInterval: 50 * time.Millisecond},
	})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	// A message through the provider binds it.
	b.submitSMS(t, "smpp-g", "+254712345678")
	require.Eventually(t, func() bool { return smsc.Bound() > 0 }, 15*time.Second, 10*time.Millisecond)

	// The lock and the checks below run on connections of their own: the
	// engine shares b.pool, and receipts stored one at a time would hold
	// every one of its connections waiting on the lock.
	own, err := pgxpool.New(ctx, b.pool.Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(own.Close)
	tx, err := own.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE herald.delivery_receipts IN SHARE MODE`)
	require.NoError(t, err)
	const n = 20
	statuses := make([]smpp.Status, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sm := smsctest.Receipt("447911123456", "254712345678", fmt.Sprintf("g-%d", i),
			smsctest.ReceiptPlan{Stat: "DELIVRD"}, time.Now())
		if i == n/2 {
			sm.ShortMessage = append(sm.ShortMessage, 0)
		}
		wg.Go(func() { statuses[i], errs[i] = smsc.Deliver(ctx, sm) })
	}
	require.Eventually(t, func() bool {
		var waiting int
		err := own.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO herald.delivery_receipts%'`).Scan(&waiting)
		return err == nil && waiting >= 1
	}, 10*time.Second, 5*time.Millisecond, "the first receipt waits on the lock")
	time.Sleep(200 * time.Millisecond) // the rest reach the driver meanwhile
	var stored int
	require.NoError(t, own.QueryRow(ctx, `SELECT count(*) FROM herald.delivery_receipts
		WHERE provider_message_id LIKE 'g-%'`).Scan(&stored))
	require.Zero(t, stored, "nothing is stored while the lock is held")
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, smpp.StatusOK, statuses[i], "deliver_sm %d answered once stored", i)
	}
	var transactions int
	var raw string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM herald.delivery_receipts
		WHERE source = 'smpp' AND provider_message_id LIKE 'g-%'`).Scan(&stored, &transactions))
	require.Equal(t, n, stored)
	require.LessOrEqual(t, transactions, 3, "the receipts that waited behind the first were stored together")
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT raw FROM herald.delivery_receipts
		WHERE provider_message_id = $1`, fmt.Sprintf("g-%d", n/2)).Scan(&raw))
	require.Contains(t, raw, "\uFFFD", "the NUL is kept readable")

	// Inbound messages, the same way.
	tx, err = own.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE herald.inbound_messages IN SHARE MODE`)
	require.NoError(t, err)
	for i := range n {
		mo, err := smsctest.MO("254700000001", "447911123456", fmt.Sprintf("reply %d", i))
		require.NoError(t, err)
		wg.Go(func() { statuses[i], errs[i] = smsc.Deliver(ctx, mo) })
	}
	require.Eventually(t, func() bool {
		var waiting int
		err := own.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO herald.inbound_messages%'`).Scan(&waiting)
		return err == nil && waiting >= 1
	}, 10*time.Second, 5*time.Millisecond, "the first message waits on the lock")
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, smpp.StatusOK, statuses[i], "MO deliver_sm %d answered once stored", i)
	}
	require.NoError(t, own.QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM herald.inbound_messages
		WHERE body LIKE 'reply %'`).Scan(&stored, &transactions))
	require.Equal(t, n, stored)
	require.LessOrEqual(t, transactions, 3, "the messages that waited behind the first were stored together")
}
