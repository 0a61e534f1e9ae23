package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
)

// loginAs creates a LOGIN role of its own granted role, dropped when the
// test ends, and returns its name, a pool and a CLI environment connected as
// it. (DDL: the rare SQL with no place in queries/.)
func loginAs(t *testing.T, b *opBundle, prefix, role string) (string, *pgxpool.Pool, map[string]string) {
	t.Helper()
	name, pool := pgtemp.Login(t, b.pool, prefix, role)
	cfg := pool.Config()
	cc := cfg.ConnConfig
	url := "postgres://" + name + "@" + cc.Host + ":" + strconv.Itoa(int(cc.Port)) + "/" + cc.Database + "?sslmode=disable"
	return name, pool, map[string]string{"DATABASE_URL": url, "USER": name}
}

func intent(producer, key string) *herald.Intent {
	return &herald.Intent{
		NotificationType: "order.shipped",
		Producer:         producer,
		IdempotencyKey:   key,
		Audience:         herald.Audience{Email: []string{"someone@example.com"}},
		Channels:         []string{"email"},
		Content:          herald.Content{Email: &herald.EmailContent{Subject: "Shipped", Text: "On its way."}},
	}
}

// TestCLI_ProducerLoginSeesOwnOnly drives the
// public client as a herald_producer login: it submits, reads and cancels
// its own notifications, and another producer's do not exist for it.
func TestCLI_ProducerLoginSeesOwnOnly(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	ctx := context.Background()
	nameA, poolA, _ := loginAs(t, b, "shop", "herald_producer")
	nameB, poolB, _ := loginAs(t, b, "billing", "herald_producer")
	clientA, err := herald.NewClient(poolA, nil)
	require.NoError(t, err)
	defer clientA.Close()
	clientB, err := herald.NewClient(poolB, nil)
	require.NoError(t, err)
	defer clientB.Close()

	mine, err := clientA.Submit(ctx, intent(nameA, "k1"))
	require.NoError(t, err)
	again, err := clientA.Submit(ctx, intent(nameA, "k1"))
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	theirs, err := clientB.Submit(ctx, intent(nameB, "k1"))
	require.NoError(t, err)

	got, err := clientA.Get(ctx, mine.NotificationID)
	require.NoError(t, err)
	require.Equal(t, mine.NotificationID, got.ID)
	_, err = clientA.Get(ctx, theirs.NotificationID)
	require.ErrorIs(t, err, herald.ErrNotFound)
	_, err = clientA.Cancel(ctx, theirs.NotificationID, nil)
	require.ErrorIs(t, err, herald.ErrNotFound)
	res, err := clientA.Cancel(ctx, mine.NotificationID, &herald.CancelOpts{Reason: "customer asked"})
	require.NoError(t, err)
	require.Len(t, res.Canceled, 1)

	_, err = clientA.Submit(ctx, intent(nameB, "forged"))
	require.Error(t, err, "submitting in another producer's name")

	// The cancel shows in the notification's timeline, for an operator.
	var st operator.Status
	runJSON(t, b.env, &st, "status", mine.NotificationID)
	require.Equal(t, "cancel", st.Timeline[len(st.Timeline)-1].Event)
	require.Contains(t, st.Timeline[len(st.Timeline)-1].Detail, "customer asked")
}

// TestCLI_OperatorAndAuditorLoginsRun runs the operator commands as
// logins granted only herald_operator and herald_auditor.
func TestCLI_OperatorAndAuditorLoginsRun(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	_, _, opEnv := loginAs(t, b, "oncall", "herald_operator")
	_, _, audEnv := loginAs(t, b, "audit", "herald_auditor")
	seeded := seedDead(t, b, 3)

	for _, env := range []map[string]string{opEnv, audEnv} {
		var page operator.DeadLetterPage
		runJSON(t, env, &page, "dead-letters", "list")
		require.Len(t, page.DeadLetters, 3)
		var st operator.Stats
		runJSON(t, env, &st, "stats")
		var s operator.Status
		runJSON(t, env, &s, "status", seeded[0].NotificationID)
	}

	_, _, err := run(t, audEnv, "dead-letters", "replay", "--all", "--reason", "try")
	require.ErrorContains(t, err, "permission denied")
	var res operator.ReplayResult
	runJSON(t, opEnv, &res, "dead-letters", "replay", "--all", "--reason", "fixed")
	require.Equal(t, 3, res.Moved)
	var out struct{ Queued operator.Queued }
	runJSON(t, opEnv, &out, "dead-letters", "replay", "--all", "--async", "--reason", "fixed")
	require.NotZero(t, out.Queued.JobID)
}
