package herald_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/sqldoor"
)

// The SQL here is the test's own: an operator keeping the blocklist and
// acting on held intents in psql.

func smsIntent(producer, key, body string) *herald.Intent {
	return &herald.Intent{
		NotificationType: "promo", Producer: producer, IdempotencyKey: key,
		Audience: herald.Audience{SMS: []string{"+14155550123"}}, Channels: []string{"sms"},
		Content: herald.Content{SMS: &herald.SMSContent{Body: body}},
	}
}

func TestClient_SubmitRefusesBlockedHoldsReviewed(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	var refuseID, reviewID, aOnlyID int64
	require.NoError(t, b.asOp.QueryRow(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES ('word', 'casino', 'refuse') RETURNING id`).Scan(&refuseID))
	require.NoError(t, b.asOp.QueryRow(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES ('regex', '(?i)free\s+money', 'review') RETURNING id`).Scan(&reviewID))
	require.NoError(t, b.asOp.QueryRow(ctx, `INSERT INTO herald.content_rules (producer, kind, pattern) VALUES ($1, 'word', 'lottery') RETURNING id`, b.nameA).Scan(&aOnlyID))
	_, err := b.asA.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern) VALUES ('word', 'x')`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `DELETE FROM herald.content_rules`)
	requireSQLState(t, err, insufficientPrivilege)
	require.Equal(t, 3, countAs(t, b.asOp, `SELECT count(*) FROM herald.audit_log WHERE action = 'content_rule_add' AND login = current_user`))
	require.Equal(t, 3, countAs(t, b.asA, `SELECT count(*) FROM herald.content_rules`), "A reads the global rules and its own")
	require.Equal(t, 2, countAs(t, b.asB, `SELECT count(*) FROM herald.content_rules WHERE id <> $1`, aOnlyID), "B reads the global rules only")
	require.Equal(t, 2, countAs(t, b.asB, `SELECT count(*) FROM herald.content_rules`))

	// Refused, naming the rule; nothing stored.
	_, err = b.clientA.Submit(ctx, smsIntent(b.nameA, "k1", "Big CASINO night!"))
	requireFieldError(t, err, "content.sms.body", herald.CodeContentBlocked)
	require.ErrorContains(t, err, "rule ")
	// A producer's own rule applies to it, not to others.
	_, err = b.clientA.Submit(ctx, smsIntent(b.nameA, "k2", "lottery results"))
	requireFieldError(t, err, "content.sms.body", herald.CodeContentBlocked)
	_, err = b.clientB.Submit(ctx, smsIntent(b.nameB, "k2", "lottery results"))
	require.NoError(t, err)

	// Held, not refused: the client hands the intent to the engine (the
	// intake), which checks it again and holds it; a retry finds the same
	// held entry.
	r, err := b.clientA.Submit(ctx, smsIntent(b.nameA, "k3", "Free   money inside"))
	require.NoError(t, err)
	require.True(t, r.Held)
	require.Zero(t, r.HeldID, "the engine assigns it")
	require.Contains(t, r.HeldRule, "rule ")
	require.Empty(t, r.NotificationID)
	again, err := b.clientA.Submit(ctx, smsIntent(b.nameA, "k3", "Free   money inside"))
	require.NoError(t, err)
	require.True(t, again.Held)
	r4, err := b.clientA.Submit(ctx, smsIntent(b.nameA, "k4", "free money again"))
	require.NoError(t, err)
	require.True(t, r4.Held)
	w, err := sqldoor.NewWorker(b.admin, nil)
	require.NoError(t, err)
	_, _, err = w.DrainOnce(ctx)
	require.NoError(t, err)
	var heldK3, heldK4 int64
	require.NoError(t, b.asA.QueryRow(ctx, `SELECT id FROM herald.held_intents WHERE idempotency_key = 'k3'`).Scan(&heldK3))
	require.NoError(t, b.asA.QueryRow(ctx, `SELECT id FROM herald.held_intents WHERE idempotency_key = 'k4'`).Scan(&heldK4))
	require.Equal(t, 2, countAs(t, b.asOp, `SELECT count(*) FROM herald.held_intents WHERE rule = $1 AND submitted_by = $2`, r.HeldRule, b.nameA),
		"held with the engine's rule, in A's name")
	require.Zero(t, countAs(t, b.asA, `SELECT count(*) FROM herald.records`), "none of A's intents was stored")
	require.Equal(t, 2, countAs(t, b.asA, `SELECT count(*) FROM herald.held_intents`), "A reads its own held intents")
	require.Equal(t, 0, countAs(t, b.asB, `SELECT count(*) FROM herald.held_intents`))
	require.Equal(t, 2, countAs(t, b.asOp, `SELECT count(*) FROM herald.held_intents`))
	r = &herald.Receipt{HeldID: heldK3}
	r4 = &herald.Receipt{HeldID: heldK4}

	// Producers cannot release their own; operators can, audited.
	_, err = b.asA.Exec(ctx, `SELECT herald.held_release(ARRAY[$1::bigint], 'me', 'mine')`, r.HeldID)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `DELETE FROM herald.held_intents`)
	requireSQLState(t, err, insufficientPrivilege)
	require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.held_release(ARRAY[$1::bigint], 'ops', 'looked fine')`, r.HeldID))
	require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.held_reject(ARRAY[$1::bigint, $2::bigint], 'ops', 'spam')`, r.HeldID, r4.HeldID),
		"the released one is no longer held")
	require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.audit_log WHERE action = 'held_release' AND affected = 1 AND actor = 'ops'`))
	require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.audit_log WHERE action = 'held_reject' AND affected = 1`))

	// The released intent is accepted by the intake worker, reviewed: the
	// blocklist lets it through, in A's name, with its key.
	accepted, malformed, err := w.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, accepted)
	require.Zero(t, malformed)
	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.records WHERE idempotency_key = 'k3'`))
	// The rejected one is in malformed_intents, where A reads why.
	var code, msg string
	require.NoError(t, b.asA.QueryRow(ctx, `SELECT failure_code, failure_message FROM herald.malformed_intents WHERE stream_entry_id = $1`,
		"held:"+strconv.FormatInt(r4.HeldID, 10)).Scan(&code, &msg))
	require.Equal(t, "content_blocked", code)
	require.Contains(t, msg, "spam")
	require.Contains(t, msg, "rule ")
}
