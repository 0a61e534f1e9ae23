package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
)

// An operator approves, lists and revokes senders, each change audited
// with its login and -actor; an auditor lists them and can change none; a
// malformed argument is a usage error that touches nothing.
func TestSendersApproveListRevokeAuditedAsAnOperator(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	ctx := context.Background()
	opName, _, asOp := loginAs(t, b, "opr", "herald_operator")
	_, _, asAud := loginAs(t, b, "aud", "herald_auditor")

	out, stderr, err := run(t, asOp, "senders", "approve", "-reason", "carrier ticket 7", "shop", "ACME")
	require.NoError(t, err, stderr)
	require.Contains(t, out, "approved sender ACME for shop")
	out, _, err = run(t, asOp, "senders", "approve", "shop", "ACME")
	require.NoError(t, err)
	require.Contains(t, out, "already approved")
	_, _, err = run(t, asOp, "senders", "approve", "shop", "+447700900123")
	require.NoError(t, err)

	var list []operator.Sender
	runJSON(t, asAud, &list, "senders", "list", "-producer", "shop")
	require.Len(t, list, 2)
	require.Equal(t, "+447700900123", list[0].Sender)
	require.Equal(t, "ACME", list[1].Sender)
	require.Equal(t, "carrier ticket 7", list[1].Note)
	require.Equal(t, opName, list[1].ApprovedBy)
	out, _, err = run(t, asAud, "senders", "list")
	require.NoError(t, err)
	require.Regexp(t, `shop\s+ACME\s+\S+ \S+\s+`+opName+`\s+carrier ticket 7`, out)

	_, stderr, err = run(t, asAud, "senders", "approve", "shop", "AUDITOR")
	require.Error(t, err)
	require.Contains(t, stderr+err.Error(), "permission denied")
	_, _, err = run(t, asAud, "senders", "revoke", "-reason", "no", "shop", "ACME")
	require.Error(t, err)

	for _, args := range [][]string{
		{"senders", "approve", "shop", "TOOLONGSENDER"},
		{"senders", "approve", "shop", "AC\x07ME"},
		{"senders", "approve", "shop ", "ACME"},
		{"senders", "approve", "shop"},
		{"senders", "revoke", "shop", "ACME"}, // -reason is required
		{"senders", "frobnicate"},
	} {
		_, _, err := run(t, asOp, args...)
		require.Error(t, err, "%q", args)
		require.Equal(t, 2, exitCode(err), "%q: %v", args, err)
	}

	out, stderr, err = run(t, asOp, "senders", "revoke", "-reason", "carrier withdrew it", "shop", "ACME")
	require.NoError(t, err, stderr)
	require.Contains(t, out, "revoked sender ACME of shop")
	_, _, err = run(t, asOp, "senders", "revoke", "-reason", "again", "shop", "ACME")
	require.ErrorContains(t, err, "not an approved sender")

	var approvals, revokes int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE action = 'sender_approve'),
		count(*) FILTER (WHERE action = 'sender_revoke' AND reason = 'carrier withdrew it' AND login = $1 AND actor = $1)
		FROM herald.audit_log`, opName).Scan(&approvals, &revokes))
	require.Equal(t, 2, approvals)
	require.Equal(t, 1, revokes)
}
