package operator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
	"github.com/heraldhq/herald/schema"
)

// insufficientPrivilege is SQLSTATE 42501 (pgerrcode is not a dependency).
const insufficientPrivilege = "42501"

func requireInsufficientPrivilege(t *testing.T, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "want a Postgres error, got %v", err)
	require.Equal(t, insufficientPrivilege, pgErr.Code, pgErr.Message)
}

func TestRoles_ProducerReadsOnlyOwn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	nameA, asA := pgtemp.Login(t, b.pool, "prod_a", "herald_producer")
	nameB, _ := pgtemp.Login(t, b.pool, "prod_b", "herald_producer")

	// Submitting through the client's statement works under RLS: the
	// routes' policy sees the records inserted by the same statement.
	mine := operatortest.Seed(t, asA, operatortest.Spec{N: 2, Producer: nameA})
	theirs := operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Producer: nameB, Dead: true})

	rec, err := b.q.RecordGet(ctx, asA, mine[0].NotificationID)
	require.NoError(t, err)
	require.Equal(t, nameA, rec.Producer)
	routes, err := b.q.RouteListByNotification(ctx, asA, mine[0].NotificationID)
	require.NoError(t, err)
	require.Len(t, routes, 1)

	// Another producer's rows are invisible, not forbidden.
	_, err = b.q.RecordGet(ctx, asA, theirs[0].NotificationID)
	require.ErrorIs(t, err, pgx.ErrNoRows)
	routes, err = b.q.RouteListByNotification(ctx, asA, theirs[0].NotificationID)
	require.NoError(t, err)
	require.Empty(t, routes)
	dls, err := benchstore.New().DeadLetterListByNotification(ctx, asA, theirs[0].NotificationID)
	require.NoError(t, err)
	require.Empty(t, dls)

	// It cannot submit in another producer's name...
	_, err = store.New().RecordInsertMany(ctx, asA, store.RecordInsertManyParams{
		NotificationIds: []string{"ntf_forged"}, NotificationTypes: []string{"x"}, Producers: []string{nameB},
		AudienceKinds: []string{"addresses"}, RecipientUserIds: [][]byte{[]byte(`[]`)}, PayloadJsons: []string{`{}`},
		IdempotencyKeys: []string{"k"}, RequestFingerprints: []string{"fp"}, RequestIds: []string{""}, TraceIds: []string{""},
		OccurredAts: []time.Time{time.Now()}, ChannelLists: []string{"email"},
		Priorities: []int16{0}, SendAts: []time.Time{{}}, ExpiresAts: []time.Time{{}}, CallbackUrls: []string{""},
		IdempotencyWindowSeconds: 60,
	})
	requireInsufficientPrivilege(t, err)

	// ...cancels its own routes, and cannot cancel another's.
	canceled, err := b.q.RouteCancelByNotification(ctx, asA, store.RouteCancelByNotificationParams{NotificationID: mine[1].NotificationID, Actor: "a"})
	require.NoError(t, err)
	require.Len(t, canceled, 1)
	// Another's notification fails as an unknown one would (no_data_found),
	// and nothing moves.
	live := operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Producer: nameB})
	_, err = b.q.RouteCancelByNotification(ctx, asA, store.RouteCancelByNotificationParams{NotificationID: live[0].NotificationID, Actor: "a"})
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "P0002", pgErr.Code)
	routes, err = b.q.RouteListByNotification(ctx, b.pool, live[0].NotificationID)
	require.NoError(t, err)
	require.Equal(t, "pending", routes[0].Status)

	// The SQL door is open to it; the operator's views are not.
	require.NoError(t, benchstore.New().IntakeInsertMany(ctx, asA, []string{`{"producer":"` + nameA + `"}`}))
	opA, err := operator.New(asA, nil)
	require.NoError(t, err)
	_, err = opA.DeadLetters(ctx, operator.Filter{}, 0, "")
	requireInsufficientPrivilege(t, err)
}

func TestRoles_AuditorReadsAllWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, asAud := pgtemp.Login(t, b.pool, "aud", "herald_auditor")
	refs := operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Producer: "shop", Dead: true})
	live := operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Producer: "billing"})
	require.NoError(t, b.q.MalformedIntentInsertMany(ctx, b.pool, store.MalformedIntentInsertManyParams{
		EntryRefs: []string{"intake:1"}, NotificationTypes: []string{""}, Producers: []string{"shop"},
		IdempotencyKeys: []string{""}, FailureCodes: []string{"invalid_json"}, FailureMessages: []string{"bad"},
		RawFields: [][]byte{[]byte(`{"body":"{"}`)},
	}))

	aud, err := operator.New(asAud, nil)
	require.NoError(t, err)
	page, err := aud.DeadLetters(ctx, operator.Filter{}, 0, "")
	require.NoError(t, err)
	require.Len(t, page.DeadLetters, 3)
	st, err := aud.Status(ctx, live[0].NotificationID)
	require.NoError(t, err)
	require.Equal(t, "billing", st.Record.Producer)
	_, err = aud.Stats(ctx, time.Minute)
	require.NoError(t, err)
	mal, err := aud.MalformedIntents(ctx, operator.MalformedFilter{}, 0, "")
	require.NoError(t, err)
	require.Len(t, mal.Malformed, 1)

	// INSERT, UPDATE and DELETE all fail with insufficient_privilege.
	requireInsufficientPrivilege(t, benchstore.New().IntakeInsertMany(ctx, asAud, []string{`{}`}))
	_, err = b.q.RouteCancelByNotification(ctx, asAud, store.RouteCancelByNotificationParams{NotificationID: live[0].NotificationID, Actor: "auditor"})
	requireInsufficientPrivilege(t, err)
	_, err = b.q.MalformedIntentDeleteBefore(ctx, asAud, store.MalformedIntentDeleteBeforeParams{
		RecordedBefore: time.Now().Add(time.Hour), BatchSize: 10,
	})
	requireInsufficientPrivilege(t, err)
	_, err = aud.Replay(ctx, operator.Filter{IDs: refs[:1]}, operator.ReplayOpts{Actor: "auditor"})
	requireInsufficientPrivilege(t, err)
	_, err = aud.EnqueueReplay(ctx, operator.Filter{}, operator.ReplayOpts{Actor: "auditor"})
	requireInsufficientPrivilege(t, err)

	n, err := b.op.CountDeadLetters(ctx, operator.Filter{})
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "nothing moved")
}

func TestRoles_OperatorReplaysAndQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, asOp := pgtemp.Login(t, b.pool, "opr", "herald_operator")
	refs := operatortest.Seed(t, b.pool, operatortest.Spec{N: 4, Dead: true})

	op, err := operator.New(asOp, nil)
	require.NoError(t, err)
	res, err := op.Replay(ctx, operator.Filter{IDs: refs[:2]}, operator.ReplayOpts{Actor: "oncall", Reason: "fixed"})
	require.NoError(t, err)
	require.Equal(t, 2, res.Moved)
	st, err := op.Status(ctx, refs[0].NotificationID)
	require.NoError(t, err)
	require.Equal(t, "pending", st.Routes[0].Status)
	q, err := op.EnqueueReplay(ctx, operator.Filter{}, operator.ReplayOpts{Actor: "oncall"})
	require.NoError(t, err)
	require.Equal(t, int64(2), q.Matched)
}

// TestRoles_MigrateDownKeepsRoles rolls this migration back in one
// database while another database of the same cluster keeps using the
// roles: they are cluster-wide, so Down leaves them.
func TestRoles_MigrateDownKeepsRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	other := setup(t)
	b := setup(t)
	_, err := schema.NewMigrator(other.pool, nil).Down(ctx, 3)
	require.NoError(t, err)

	name, asProducer := pgtemp.Login(t, b.pool, "after_down", "herald_producer")
	refs := operatortest.Seed(t, asProducer, operatortest.Spec{N: 1, Producer: name})
	rec, err := b.q.RecordGet(ctx, asProducer, refs[0].NotificationID)
	require.NoError(t, err)
	require.Equal(t, name, rec.Producer)

	// And up again in the first database finds the roles in place.
	_, err = schema.NewMigrator(other.pool, nil).Up(ctx)
	require.NoError(t, err)
	_, asAud := pgtemp.Login(t, other.pool, "aud_after_up", "herald_auditor")
	requireInsufficientPrivilege(t, benchstore.New().IntakeInsertMany(ctx, asAud, []string{`{}`}))
}
