package maintenance_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
)

type echoArgs struct{ Word string }

func (echoArgs) Kind() string { return "herald_test_echo" }

func TestRun_RiverRunsPeriodicJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, seedSpec{id: "old", window: day, statuses: []string{"published"}, changed: t0})

	worked := make(chan string, 1)
	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{
		RunOnStart: true,
		Workers: func(w *river.Workers) error {
			return river.AddWorkerSafely(w, river.WorkFunc(func(_ context.Context, j *river.Job[echoArgs]) error {
				worked <- j.Args.Word
				return nil
			}))
		},
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	_, err := m.Client().Insert(ctx, echoArgs{Word: "hello"}, nil)
	require.NoError(t, err)
	select {
	case w := <-worked:
		require.Equal(t, "hello", w)
	case err := <-done:
		require.NoError(t, err)
		t.Fatal("maintenance stopped before the extra worker ran")
	case <-time.After(20 * time.Second):
		t.Fatal("the extra worker never ran")
	}

	// Elected leader, the client inserts each periodic job once at start.
	require.Eventually(t, func() bool { return len(b.remaining(t)) == 0 }, 20*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobBloatCheck, "ok")) == 1 &&
			testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobMalformedRetention, "ok")) == 1
	}, 20*time.Second, 50*time.Millisecond)
}

// A process stopped while maintenance is still starting (serve canceled as
// soon as it began) stops cleanly: no error for a shutdown. A River client
// that cannot start for another reason is still an error.
func TestRun_StopWhileStartingIsShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMaintenance(t, time.Now(), maintenance.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, m.Run(ctx))

	dead, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(dead.Close)
	broken, err := maintenance.New(dead, &maintenance.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	err = broken.Run(context.Background())
	require.ErrorContains(t, err, "start maintenance")
}
