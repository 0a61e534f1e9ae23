package accept

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// senderLookups counts the statements that read herald.sender_ids.
type senderLookups struct{ n atomic.Int64 }

func (s *senderLookups) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "sender_ids") {
		s.n.Add(1)
	}
	return ctx
}

func (s *senderLookups) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func approveSender(t *testing.T, db store.DBTX, producer, sender string) {
	t.Helper()
	ok, err := store.New().SenderIDApprove(context.Background(), db, store.SenderIDApproveParams{
		Producer: producer, Sender: sender, Actor: "test", Note: "approved by the test"})
	require.NoError(t, err)
	require.True(t, ok)
}

func withSender(key, sender string) *intake.Intent {
	in := validIntent()
	in.IdempotencyKey = key
	in.FromSender = sender
	return in
}

// An intent naming a sender its producer has not had approved is refused
// with sender_not_approved and nothing of it is stored; the others of the
// batch are accepted, after one lookup for the whole batch; a batch
// without a sender reads nothing.
func TestPipeline_RefusesSendersNotApprovedForTheProducer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := pgtemp.NewPool(t)
	approveSender(t, admin, "shop", "ACME")
	approveSender(t, admin, "billing", "BILLS")

	cfg, err := pgxpool.ParseConfig(admin.Config().ConnString())
	require.NoError(t, err)
	lookups := &senderLookups{}
	cfg.ConnConfig.Tracer = lookups
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	p := &Pipeline{Content: content.NewChecker(&content.CheckerConfig{RulesMaxAge: -1})}
	res, _, err := p.Run(ctx, pool, []Item{{Intent: withSender("plain", "")}}, RunOpts{Now: testNow})
	require.NoError(t, err)
	require.Equal(t, KindAccepted, res[0].Kind)
	require.Zero(t, lookups.n.Load(), "a batch without a sender reads no sender")

	items := []Item{
		{Intent: withSender("approved", "ACME")},
		{Intent: withSender("unknown", "NOBODY")},
		{Intent: withSender("others", "BILLS")}, // billing's, not shop's
		{Intent: withSender("case", "acme")},    // a handset shows case: another sender
		{Intent: withSender("none", "")},
	}
	res, _, err = p.Run(ctx, pool, items, RunOpts{Now: testNow})
	require.NoError(t, err)
	require.Equal(t, int64(1), lookups.n.Load(), "one lookup for the batch")
	kinds := make([]Kind, len(res))
	for i, r := range res {
		kinds[i] = r.Kind
	}
	require.Equal(t, []Kind{KindAccepted, KindInvalid, KindInvalid, KindInvalid, KindAccepted}, kinds)
	for _, r := range res[1:4] {
		var ve *heraldtype.ValidationError
		require.ErrorAs(t, r.Err, &ve)
		require.Equal(t, heraldtype.CodeSenderNotApproved, ve.Code())
		require.Equal(t, "from_sender", ve.Errors[0].Field)
		require.Contains(t, ve.Error(), "herald senders approve shop")
	}

	var keys []string
	rows, err := admin.Query(ctx, `SELECT idempotency_key FROM herald.records ORDER BY 1`)
	require.NoError(t, err)
	keys, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"approved", "none", "plain"}, keys)
	var payload string
	require.NoError(t, admin.QueryRow(ctx, `SELECT payload_json FROM herald.records WHERE idempotency_key = 'approved'`).Scan(&payload))
	require.Contains(t, payload, `"from":"ACME"`)

	// A revoked sender is refused from then on.
	revoked, err := store.New().SenderIDRevoke(ctx, admin, store.SenderIDRevokeParams{Producer: "shop", Sender: "ACME", Actor: "test", Reason: "done"})
	require.NoError(t, err)
	require.True(t, revoked)
	res, _, err = p.Run(ctx, pool, []Item{{Intent: withSender("after-revoke", "ACME")}}, RunOpts{Now: testNow})
	require.NoError(t, err)
	require.Equal(t, KindInvalid, res[0].Kind)
}

// Through a producer's own login, the lookup sees only that producer's
// senders (row-level security): another producer's approval of the same
// sender does not let it through.
func TestPipeline_AProducerLoginSeesOnlyItsOwnSenders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := pgtemp.NewPool(t)
	name, pool := pgtemp.Login(t, admin, "shopper", "herald_producer")
	approveSender(t, admin, name, "MINE")
	approveSender(t, admin, "shop", "THEIRS")

	mine := withSender("mine", "MINE")
	mine.Producer = name
	theirs := withSender("theirs", "THEIRS")
	theirs.Producer = name
	p := &Pipeline{Content: content.NewChecker(&content.CheckerConfig{RulesMaxAge: -1})}
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	res, _, err := p.Run(ctx, tx, []Item{{Intent: mine, Actor: name}, {Intent: theirs, Actor: name}}, RunOpts{Now: testNow})
	require.NoError(t, err)
	require.Equal(t, KindAccepted, res[0].Kind, "%v", res[0].Err)
	require.Equal(t, KindInvalid, res[1].Kind)

	var seen int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM herald.sender_ids`).Scan(&seen))
	require.Equal(t, 1, seen, "its own sender only")
}
