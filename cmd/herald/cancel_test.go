package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
)

func TestCancelCmd_CancelsUndeliveredAudited(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	live := seed(t, b, operatortest.Spec{N: 1, Channel: "sms", Type: "otp"})
	id := live[0].NotificationID

	// A reason is required, and one id.
	_, _, err := run(t, b.env, "cancel", id)
	require.Equal(t, 2, exitCode(err))
	require.ErrorContains(t, err, "-reason")
	_, _, err = run(t, b.env, "cancel", "--reason", "x")
	require.Equal(t, 2, exitCode(err))

	var res struct {
		NotificationID string `json:"notification_id"`
		Canceled       []struct {
			RouteID string `json:"route_id"`
			Channel string `json:"channel"`
		} `json:"canceled"`
	}
	runJSON(t, b.env, &res, "cancel", "--reason", "customer withdrew the order", id)
	require.Equal(t, id, res.NotificationID)
	require.Len(t, res.Canceled, 1)
	require.Equal(t, "sms", res.Canceled[0].Channel)

	var actor, reason string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT actor, reason FROM herald.audit_log WHERE action = 'cancel' AND filter->>'notification_id' = $1`, id).
		Scan(&actor, &reason))
	require.Equal(t, "tester", actor, "$USER by default")
	require.Equal(t, "customer withdrew the order", reason)

	// Again: nothing left to cancel, said plainly.
	out, _, err := run(t, b.env, "cancel", "--reason", "again", id)
	require.NoError(t, err)
	require.Contains(t, out, "nothing to cancel")

	_, _, err = run(t, b.env, "cancel", "--reason", "x", "0192f1c2-0000-7000-8000-000000000000")
	require.ErrorContains(t, err, "no such notification")
}
