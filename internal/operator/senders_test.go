package operator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
)

// An operator's login approves, lists and revokes senders, audited; an
// auditor's lists them and changes none; a producer's sees its own only.
func TestSendersApprovedAndRevokedByAnOperatorOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, asOp := pgtemp.Login(t, b.pool, "opr", "herald_operator")
	_, asAud := pgtemp.Login(t, b.pool, "aud", "herald_auditor")
	prod, asProd := pgtemp.Login(t, b.pool, "prod", "herald_producer")
	opOp, err := operator.New(asOp, nil)
	require.NoError(t, err)
	audOp, err := operator.New(asAud, nil)
	require.NoError(t, err)
	prodOp, err := operator.New(asProd, nil)
	require.NoError(t, err)

	c, err := opOp.ApproveSender(ctx, prod, "ACME", "ann", "ticket 7")
	require.NoError(t, err)
	require.Equal(t, &operator.SenderChange{Producer: prod, Sender: "ACME", Action: "approve", Changed: true}, c)
	_, err = opOp.ApproveSender(ctx, "shop", "SHOP", "ann", "")
	require.NoError(t, err)

	_, err = audOp.ApproveSender(ctx, prod, "AUD", "eve", "")
	requireInsufficientPrivilege(t, err)
	_, err = prodOp.ApproveSender(ctx, prod, "SELF", "eve", "")
	requireInsufficientPrivilege(t, err)
	_, err = audOp.RevokeSender(ctx, prod, "ACME", "eve", "")
	requireInsufficientPrivilege(t, err)

	all, err := audOp.Senders(ctx, "")
	require.NoError(t, err)
	require.Len(t, all, 2)
	own, err := prodOp.Senders(ctx, "")
	require.NoError(t, err)
	require.Len(t, own, 1)
	require.Equal(t, "ACME", own[0].Sender)
	require.Equal(t, "ann", own[0].ApprovedBy)

	c, err = opOp.RevokeSender(ctx, prod, "ACME", "ann", "withdrawn")
	require.NoError(t, err)
	require.True(t, c.Changed)
	c, err = opOp.RevokeSender(ctx, prod, "ACME", "ann", "again")
	require.NoError(t, err)
	require.False(t, c.Changed, "nothing to revoke, and no audit row")
	var audits int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.audit_log WHERE action IN ('sender_approve', 'sender_revoke')`).Scan(&audits))
	require.Equal(t, 3, audits)

	for _, bad := range []string{"", "TOOLONGSENDER", "AC ME", "AC\x00ME", "+", "+12345678901234567"} {
		_, err := operator.ParseSender(bad)
		require.Error(t, err, "%q", bad)
	}
	for _, bad := range []string{"", "shop eu", "shop/eu"} {
		_, err := operator.ParseProducer(bad)
		require.Error(t, err, "%q", bad)
	}
}
