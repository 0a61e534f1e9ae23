package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
)

func TestDeleteDeadLettered_OffByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t,
		seedSpec{id: "dead-old", window: day, statuses: []string{"published", "dead_letter"}, changed: t0},
		seedSpec{id: "dead-new", window: day, statuses: []string{"dead_letter"}, changed: t0.Add(25 * day)},
		seedSpec{id: "replayed", window: day, statuses: []string{"dead_letter", "published"}, changed: t0},
	)
	// An operator replayed one of its routes: pending again, dead letter row
	// still there until the dispatcher finishes it.
	b.setRouteStatus(t, "replayed", "r1", "pending", t0.Add(time.Hour))

	off := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{})
	n, err := off.DeleteDeadLettered(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = off.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	on := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{DeadLetterRetention: 14 * day})
	n, err = on.DeleteDeadLettered(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"dead-new", "replayed"}, b.remaining(t))
	require.Equal(t, 2, b.count(t, "dead_letters"))
	require.Equal(t, 3, b.count(t, "routes"), "dead-old's two routes went with it")
}
