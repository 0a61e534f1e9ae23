package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/smpp"
)

// TestSMPP_ReceiptsStoredTogether has the SMSC send 20
// receipts at once while the first waits on a lock: the driver stores the
// ones behind it in one statement and one commit (the engine's
// receipt.Group), answers every deliver_sm ESME_ROK only once its own
// receipt is stored, and keeps a receipt whose text holds a NUL (some
// SMSCs end theirs with one) rather than refusing it at every resend.
// Inbound messages sent together are stored together the same way.
func TestSMPP_ReceiptsStoredTogether(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	smsc := startSMPPEngine(t, b, nil)
	// A message through the provider binds it.
	b.submitSMS(t, "smpp-g", "+254712345678")
	require.Eventually(t, func() bool { return smsc.Bound() > 0 }, 15*time.Second, 10*time.Millisecond)

	// The lock and the checks below run on connections of their own: the
	// engine shares b.pool, and receipts stored one at a time would hold
	// every one of its connections waiting on the lock.
	own, err := pgxpool.New(ctx, b.pool.Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(own.Close)
	// together has the SMSC send sms at once while a lock on table holds
	// the first one's INSERT, then releases it: nothing is stored while
	// the lock is held, each deliver_sm is answered ESME_ROK once its own
	// item is stored, and counted (count, distinct xmin) finds them all,
	// stored in at most 3 transactions.
	together := func(table string, sms []*smpp.SM, counted string) {
		tx, err := own.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `LOCK TABLE herald.`+table+` IN SHARE MODE`)
		require.NoError(t, err)
		statuses := make([]smpp.Status, len(sms))
		errs := make([]error, len(sms))
		var wg sync.WaitGroup
		for i, sm := range sms {
			wg.Go(func() { statuses[i], errs[i] = smsc.Deliver(ctx, sm) })
		}
		require.Eventually(t, func() bool {
			var waiting int
			err := own.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'
					AND query LIKE '%INSERT INTO herald.`+table+`%'`).Scan(&waiting)
			return err == nil && waiting >= 1
		}, 10*time.Second, 5*time.Millisecond, "the first %s waits on the lock", table)
		time.Sleep(200 * time.Millisecond) // the rest reach the driver meanwhile
		var stored, transactions int
		require.NoError(t, own.QueryRow(ctx, counted).Scan(&stored, &transactions))
		require.Zero(t, stored, "nothing is stored while the lock is held")
		require.NoError(t, tx.Commit(ctx))
		wg.Wait()
		for i := range sms {
			require.NoError(t, errs[i])
			require.Equal(t, smpp.StatusOK, statuses[i], "deliver_sm %d answered once stored", i)
		}
		require.NoError(t, own.QueryRow(ctx, counted).Scan(&stored, &transactions))
		require.Equal(t, len(sms), stored)
		require.LessOrEqual(t, transactions, 3, "the %s rows that waited behind the first were stored together", table)
	}

	const n = 20
	var receipts, mos []*smpp.SM
	for i := range n {
		sm := smsctest.Receipt("447911123456", "254712345678", fmt.Sprintf("g-%d", i),
			smsctest.ReceiptPlan{Stat: "DELIVRD"}, time.Now())
		if i == n/2 {
			sm.ShortMessage = append(sm.ShortMessage, 0)
		}
		receipts = append(receipts, sm)
		mo, err := smsctest.MO("254700000001", "447911123456", fmt.Sprintf("reply %d", i))
		require.NoError(t, err)
		mos = append(mos, mo)
	}
	together("delivery_receipts", receipts, `SELECT count(*), count(DISTINCT xmin::text) FROM herald.delivery_receipts
		WHERE source = 'smpp' AND provider_message_id LIKE 'g-%'`)
	var raw string
	require.NoError(t, own.QueryRow(ctx, `SELECT raw FROM herald.delivery_receipts
		WHERE provider_message_id = $1`, fmt.Sprintf("g-%d", n/2)).Scan(&raw))
	require.Contains(t, raw, "\uFFFD", "the NUL is kept readable")

	// Inbound messages, the same way.
	together("inbound_messages", mos, `SELECT count(*), count(DISTINCT xmin::text) FROM herald.inbound_messages
		WHERE body LIKE 'reply %'`)
}
