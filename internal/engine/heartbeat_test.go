package engine

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store"
)

// processEngine returns an engine that keeps its process row, with one
// more part, extra.
func processEngine(t *testing.T, b *testBundle, extra part) *Engine {
	t.Helper()
	e, err := New(b.pool, &Config{
		Dispatch: dispatch.Config{Channels: map[string]dispatch.ChannelConfig{"sms": {Deliverer: channel.Discard}}},
		Process:  &Process{Heartbeat: 50 * time.Millisecond, Version: "test"},
	})
	require.NoError(t, err)
	e.parts = append(e.parts, extra)
	return e
}

// row reads the engine's row; ok is false while there is none.
func row(t *testing.T, b *testBundle) (r store.ServeProcessListRow, ok bool) {
	t.Helper()
	rows, err := store.New().ServeProcessList(context.Background(), b.pool, 3)
	require.NoError(t, err)
	require.LessOrEqual(t, len(rows), 1)
	if len(rows) == 0 {
		return r, false
	}
	return rows[0], true
}

// While its parts finish after the signal, the process says it is
// stopping, not ready; then its row is marked stopped, with no error.
func TestHeartbeat_StoppingThenStopped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	e := processEngine(t, b, part{"slow", func(ctx context.Context) error {
		<-ctx.Done()
		<-release // deliveries in flight, finishing
		return nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	require.Eventually(t, func() bool { r, ok := row(t, b); return ok && r.Ready }, 20*time.Second, 10*time.Millisecond)

	cancel()
	var r store.ServeProcessListRow
	require.Eventually(t, func() bool { r, _ = row(t, b); return !r.Ready }, 20*time.Second, 10*time.Millisecond)
	require.Contains(t, r.NotReadyReason, "stopping")
	require.Nil(t, r.StoppedAt, "not stopped while a part still runs")

	close(release)
	require.NoError(t, <-done)
	r, _ = row(t, b)
	require.NotNil(t, r.StoppedAt)
	require.Empty(t, r.NotReadyReason)
}

// A part that fails stops the engine; the row says stopped, and why.
func TestHeartbeat_FailedPartIsTheStopReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fail := make(chan struct{})
	e := processEngine(t, b, part{"broken", func(ctx context.Context) error {
		select {
		case <-fail:
			return io.ErrUnexpectedEOF
		case <-ctx.Done():
			return nil
		}
	}})
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	require.Eventually(t, func() bool { _, ok := row(t, b); return ok }, 20*time.Second, 10*time.Millisecond)
	close(fail)
	require.ErrorIs(t, <-done, io.ErrUnexpectedEOF)
	r, _ := row(t, b)
	require.NotNil(t, r.StoppedAt)
	require.False(t, r.Ready)
	require.Equal(t, "stopped on error: broken: unexpected EOF", r.NotReadyReason)
}

// A running process whose row was deleted (maintenance, after a pause
// longer than the retention) records itself again, under the same id
// and start.
func TestHeartbeat_RowDeletedIsRecordedAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := processEngine(t, b, part{"idle", func(ctx context.Context) error { <-ctx.Done(); return nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	var first store.ServeProcessListRow
	require.Eventually(t, func() bool { var ok bool; first, ok = row(t, b); return ok }, 20*time.Second, 10*time.Millisecond)

	n, err := store.New().ServeProcessDeleteGone(context.Background(), b.pool, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	var again store.ServeProcessListRow
	require.Eventually(t, func() bool { var ok bool; again, ok = row(t, b); return ok }, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, first.ID, again.ID)
	require.True(t, first.StartedAt.Equal(again.StartedAt))
	require.JSONEq(t, `{"channels":["callback","sms"]}`, string(again.Parts))
}

// statementCounter counts the statements a pool sends.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// BenchmarkHeartbeat_Beat is one heartbeat: the /readyz check and the
// row's UPDATE. It reports the statements of each, as counts say what a
// loaded machine's timings cannot.
func BenchmarkHeartbeat_Beat(b *testing.B) {
	dbURL := pgtemp.NewDatabase(b)
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(b, err)
	c := &statementCounter{}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	e, err := New(pool, &Config{
		Dispatch: dispatch.Config{Channels: map[string]dispatch.ChannelConfig{"sms": {Deliverer: channel.Discard}}},
		Process:  &Process{Heartbeat: time.Hour, Version: "bench"},
	})
	require.NoError(b, err)
	b.Cleanup(e.Close)
	h := e.beat
	h.row.ID = "bench"
	ctx := context.Background()
	h.beat(ctx, false) // the insert
	require.True(b, h.registered)

	var checks int64
	b.ResetTimer()
	for b.Loop() {
		before := c.n.Load()
		_ = h.check(ctx)
		checks += c.n.Load() - before
		h.beat(ctx, false)
	}
	b.StopTimer()
	// Each loop ran the check twice: once alone, once in the beat.
	b.ReportMetric(float64(c.n.Load())/float64(b.N)-float64(checks)/float64(b.N), "statements/beat")
	b.ReportMetric(float64(checks)/float64(b.N), "statements/check")
}
