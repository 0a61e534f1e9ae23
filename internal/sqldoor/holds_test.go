package sqldoor

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// What a producer's own open transaction holds (its campaign's row, an
// idempotency key it is inserting) holds up none of another producer's
// SQL-door entries: the worker's batch waits a bounded time, its entries
// are then settled one by one, and the producer's entry that waits in vain
// is set aside, left in the intake and tried again once the producer lets
// go.

// logBuffer is a bytes.Buffer safe for the worker's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// campaignEntry returns entryOf(producer, key) joining campaign.
func campaignEntry(producer, key, campaign string) string {
	return strings.Replace(entryOf(producer, key), `"channels"`, `"campaign": "`+campaign+`", "channels"`, 1)
}

// acceptAs begins a transaction as the producer logged in on pool and
// accepts body in it, as the client's SubmitTx does, leaving it open.
func acceptAs(t *testing.T, pool *pgxpool.Pool, body string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	in, err := intake.DecodeRaw([]byte(body), intake.Limits{})
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	out, err := accept.Accept(ctx, tx, []*intake.Validated{mustValidate(t, in)}, accept.Params{Now: testNow})
	require.NoError(t, err)
	require.Nil(t, out[0].Refused)
	require.False(t, out[0].Duplicate || out[0].Conflict)
	return tx
}

// drainBounded drains the intake once, failing if that takes over 15s.
func drainBounded(t *testing.T, w *Worker) (accepted, malformed int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	accepted, malformed, err := w.DrainOnce(ctx)
	require.NoError(t, err, "the drain waited for a producer's transaction")
	return accepted, malformed
}

// An open transaction of producer A holding an idempotency key (its
// uncommitted SubmitTx) and another holding a new campaign's row (an
// uncommitted SubmitTx that created it) stall none of B's SQL-door
// entries. A's entries needing them are set aside, not failed, and the
// log names A's session. Once A commits the first, its entry with the same
// key and request is a duplicate; once it rolls the second back, its entry
// of the campaign is accepted and creates it.
func TestWorker_SetsAsideBehindOpenKeyInsert(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	b := setupWorker(t, func(c *WorkerConfig) {
		c.LockTimeout = 300 * time.Millisecond
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	nameA, asA, _ := b.login(t, "prod_a", "herald_producer")
	nameB, asB, _ := b.login(t, "prod_b", "herald_producer")

	keyTx := acceptAs(t, asA, entryOf(nameA, "k1"))
	campaignTx := acceptAs(t, asA, campaignEntry(nameA, "c-tx", "spring"))
	insertAs(t, asA, entryOf(nameA, "k1"), campaignEntry(nameA, "c-door", "spring"))
	insertAs(t, asB, entryOf(nameB, "b1"), entryOf(nameB, "b2"))

	accepted, malformed := drainBounded(t, b.worker)
	require.Equal(t, 2, accepted, "B's entries")
	require.Zero(t, malformed)
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = '"+nameB+"'"))
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM herald.intake"), "A's entries wait in the intake")
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.malformed_intents"))
	require.Contains(t, logs.String(), "set aside, tried again later")
	require.Contains(t, logs.String(), nameA+" (pid ", "the holder is named: %s", logs.String())

	require.NoError(t, keyTx.Commit(context.Background()))
	require.NoError(t, campaignTx.Rollback(context.Background()))
	require.Eventually(t, func() bool {
		drainBounded(t, b.worker)
		return b.count(t, "SELECT count(*) FROM herald.intake") == 0
	}, 20*time.Second, 50*time.Millisecond)
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.malformed_intents"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = '"+nameA+"' AND idempotency_key = 'k1'"),
		"the entry was the committed request's duplicate")
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = '"+nameA+"' AND idempotency_key = 'c-door'"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = '"+nameA+"' AND idempotency_key = 'c-tx'"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.campaigns WHERE producer = '"+nameA+"' AND campaign = 'spring'"))
}

// A producer canceling its own campaign in a transaction it keeps open
// (campaign_cancel_batch holds the campaign's row) stalls none of another
// producer's SQL-door entries; its own entry of the campaign waits in the
// intake and, once the cancel commits, is refused as campaign_canceled.
func TestWorker_SetsAsideBehindOpenCancel(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	b := setupWorker(t, func(c *WorkerConfig) {
		c.LockTimeout = 300 * time.Millisecond
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	ctx := context.Background()
	nameA, asA, _ := b.login(t, "prod_a", "herald_producer")
	nameB, asB, _ := b.login(t, "prod_b", "herald_producer")
	require.NoError(t, acceptAs(t, asA, campaignEntry(nameA, "f0", "fall")).Commit(ctx))

	cancelTx, err := asA.Begin(ctx)
	require.NoError(t, err)
	defer cancelTx.Rollback(context.Background())
	_, err = cancelTx.Exec(ctx, `SELECT * FROM herald.campaign_cancel_batch($1, 'fall', 'svc-a', 'stop')`, nameA)
	require.NoError(t, err)
	insertAs(t, asA, campaignEntry(nameA, "f1", "fall"))
	insertAs(t, asB, entryOf(nameB, "b1"))

	accepted, malformed := drainBounded(t, b.worker)
	require.Equal(t, 1, accepted, "B's entry")
	require.Zero(t, malformed)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.intake"), "A's entry waits in the intake")
	require.Contains(t, logs.String(), nameA+" (pid ", "the holder is named: %s", logs.String())

	require.NoError(t, cancelTx.Commit(ctx))
	require.Eventually(t, func() bool {
		drainBounded(t, b.worker)
		return b.count(t, "SELECT count(*) FROM herald.intake") == 0
	}, 20*time.Second, 50*time.Millisecond)
	m, err := store.New().MalformedIntentGet(ctx, b.pool, "intake:1")
	require.NoError(t, err)
	require.Equal(t, string(heraldtype.CodeCampaignCanceled), m.FailureCode)
	require.Equal(t, nameA, m.Producer)
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.records WHERE idempotency_key = 'f1'"))
}
