package herald_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
)

func TestClient_TxMethodsRideCallersTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	// Committed: both notifications, read back inside tx before commit.
	var ids []string
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		res, err := b.client.SubmitManyTx(ctx, tx, []*herald.Intent{newIntent("tx-1"), newIntent("tx-2"), {}})
		if err != nil {
			return err
		}
		require.NoError(t, res[0].Err)
		require.NoError(t, res[1].Err)
		var verr *herald.ValidationError
		require.ErrorAs(t, res[2].Err, &verr)
		ids = []string{res[0].Receipt.NotificationID, res[1].Receipt.NotificationID}
		n, err := b.client.GetTx(ctx, tx, ids[0])
		require.NoError(t, err)
		require.Equal(t, "tx-1", n.IdempotencyKey)
		_, err = b.client.Get(ctx, ids[0]) // another connection: not committed yet
		require.ErrorIs(t, err, herald.ErrNotFound)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, b.records(t))

	// Rolled back: the cancel and its audit row are gone with the transaction.
	rollback := errors.New("roll back")
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		res, err := b.client.CancelTx(ctx, tx, ids[0], &herald.CancelOpts{Reason: "changed my mind"})
		require.NoError(t, err)
		require.Len(t, res.Canceled, routesPerIntent)
		return rollback
	})
	require.ErrorIs(t, err, rollback)
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.routes WHERE status = 'canceled'"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.audit_log"))

	// Committed: canceled, audited.
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := b.client.CancelTx(ctx, tx, ids[1], &herald.CancelOpts{Reason: "refund"})
		return err
	})
	require.NoError(t, err)
	require.Equal(t, routesPerIntent, b.count(t, "SELECT count(*) FROM herald.routes WHERE status = 'canceled'"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.audit_log"))

	// A nil tx is the caller's mistake, said before anything is sent.
	_, err = b.client.SubmitManyTx(ctx, nil, []*herald.Intent{newIntent("x")})
	require.ErrorContains(t, err, "tx is nil")
	_, err = b.client.GetTx(ctx, nil, ids[0])
	require.ErrorContains(t, err, "tx is nil")
	_, err = b.client.CancelTx(ctx, nil, ids[0], nil)
	require.ErrorContains(t, err, "tx is nil")
}
