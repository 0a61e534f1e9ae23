package reliability_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
)

// logBuffer collects a dispatcher's JSON log records, safe for concurrent
// writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testEngine is the engine (its dispatcher) running in the test process
// with the real webhook channel, on a pool of its own.
type testEngine struct {
	eng    *engine.Engine
	pool   *pgxpool.Pool
	logs   *logBuffer
	cancel context.CancelFunc
	done   chan error
}

// engineConfig is what the suites vary.
type engineConfig struct {
	concurrency int
	timeout     time.Duration
	maxAttempts int
	appName     string
}

func startEngine(t *testing.T, dbURL string, ec engineConfig) *testEngine {
	t.Helper()
	pcfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	pcfg.ConnConfig.RuntimeParams["application_name"] = ec.appName
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	require.NoError(t, err)
	wh, err := webhook.New(webhook.Config{Secrets: []string{testSecret}, AllowPrivate: true, Timeout: ec.timeout})
	require.NoError(t, err)
	logs := &logBuffer{}
	eng, err := engine.New(pool, &engine.Config{
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Dispatch: dispatch.Config{
			Channels: map[string]dispatch.ChannelConfig{"webhook": {
				Deliverer:   wh,
				Concurrency: ec.concurrency,
				MaxAttempts: ec.maxAttempts,
				Timeout:     ec.timeout,
				Lease:       ec.timeout + time.Second,
				Backoff:     dispatch.BackoffConfig{Base: 50 * time.Millisecond, Cap: 200 * time.Millisecond},
			}},
			PollInterval:    100 * time.Millisecond,
			ShutdownTimeout: 2 * time.Second,
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	e := &testEngine{eng: eng, pool: pool, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- eng.Run(ctx) }()
	t.Cleanup(e.stop)
	return e
}

func (e *testEngine) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
	e.cancel = nil
	e.pool.Close()
}
