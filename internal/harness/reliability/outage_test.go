package reliability_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store/benchstore"
	"github.com/heraldhq/herald/schema"
)

// terminateSQL ends every backend whose application_name starts with the
// given prefix. pg_stat_activity is unknown to sqlc's offline catalog: the
// commented exception to "SQL lives in queries/*.sql".
const terminateSQL = `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE $1 || '%' AND pid <> pg_backend_pid()`

func poolNamed(t *testing.T, dbURL, appName string) *pgxpool.Pool {
	t.Helper()
	pcfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	pcfg.ConnConfig.RuntimeParams["application_name"] = appName
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func TestEngine_ConnectionsKilledLoseNothing(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	dbURL := pgtemp.NewDatabase(t)
	admin := poolNamed(t, dbURL, "reliability-admin")
	startEngine(t, dbURL, engineConfig{concurrency: 16, timeout: time.Second, maxAttempts: 25, appName: "herald-connkill-dispatch"})
	p := newProducer(t, poolNamed(t, dbURL, "herald-connkill-client"), rc.url, "connkill")
	routes := scale(3_000, 30_000)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var kills, terminated, inflight atomic.Int64
	killerDone := make(chan struct{})
	// A kill round after every routes/20 deliveries: each strikes while
	// deliveries are under way, and the engine makes progress in between.
	go func() {
		defer close(killerDone)
		q := benchstore.New()
		for ctx.Err() == nil {
			if rc.awaitRequests(ctx, rc.requestsSoFar()+routes/20) != nil {
				return
			}
			claimed, err := q.BenchRouteCountClaimed(ctx, admin)
			if err != nil {
				continue
			}
			var n int64
			if err := admin.QueryRow(ctx, terminateSQL, "herald-connkill").Scan(&n); err != nil {
				continue
			}
			kills.Add(1)
			terminated.Add(n)
			inflight.Add(claimed)
		}
	}()
	retries, err := p.submit(ctx, 0, routes, 100)
	require.NoError(t, err)
	// Keep killing while the backlog drains, then let it finish.
	require.True(t, poll(2*time.Minute, 50*time.Millisecond, func() bool {
		n, err := benchstore.New().BenchRouteCountOpen(ctx, admin)
		require.NoError(t, err)
		return n < int64(routes/10)
	}), "the backlog drains while connections are killed")
	cancel()
	<-killerDone
	waitTerminal(t, admin, 2*time.Minute)

	v := judge(t, admin, rc, rc.url)
	t.Logf("connections killed: routes=%d kill_rounds=%d backends_terminated=%d submit_retries=%d in_flight_at_kills=%d duplicates=%d lost=%d statuses=%v",
		v.routes, kills.Load(), terminated.Load(), retries, inflight.Load(), v.duplicates, v.lost, v.byStatus)
	require.Equal(t, routes, v.routes)
	require.Zero(t, v.lost)
	require.Equal(t, routes, v.published)
	require.LessOrEqual(t, int64(v.duplicates), inflight.Load())
	require.Positive(t, terminated.Load())
	fmt.Printf("reliability connkill: routes=%d kills=%d backends_terminated=%d duplicates=%d (bound %d) lost=%d\n",
		v.routes, kills.Load(), terminated.Load(), v.duplicates, inflight.Load(), v.lost)
}

// ownCluster starts a cluster for one test, with a migrated database.
func ownCluster(t *testing.T, durable bool) (*pgtemp.Cluster, string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgtemp.Start(ctx, &pgtemp.Config{Durable: durable})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	dbURL := c.URL("postgres")
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	_, err = schema.NewMigrator(pool, nil).Up(ctx)
	pool.Close()
	require.NoError(t, err)
	return c, dbURL
}

func TestEngine_DatabaseRestartLosesNothing(t *testing.T) {
	t.Parallel()
	// Durable, so an immediate shutdown (every second outage is a crash)
	// keeps every commit a Submit returned from.
	c, dbURL := ownCluster(t, true)
	rc := newReceiver(t, nil)
	e := startEngine(t, dbURL, engineConfig{concurrency: 16, timeout: time.Second, maxAttempts: 25, appName: "herald-restart-dispatch"})
	admin := poolNamed(t, dbURL, "reliability-admin")
	p := newProducer(t, poolNamed(t, dbURL, "herald-restart-client"), rc.url, "restart")
	routes := scale(3_000, 30_000)
	outages := scale(2, 4) // a fast restart, then a crash (immediate shutdown)

	ctx := context.Background()
	submitted := make(chan error, 1)
	var retries int
	go func() {
		var err error
		retries, err = p.submit(ctx, 0, routes, 100)
		submitted <- err
	}()
	// The deliveries in flight at an outage are the routes the dispatcher
	// holds once the server is down: claimed, and their outcome not
	// written (nothing can be written while the server is down). Claims
	// commit asynchronously, so a crash may undo the newest of them: only
	// those routes may be delivered twice.
	// Each outage comes routes/(4*outages) deliveries after the last (or
	// after the start): while deliveries are under way.
	var inflight int64
	for i := range outages {
		rc.requireRequests(t, rc.requestsSoFar()+routes/(4*outages), 2*time.Minute)
		if i%2 == 1 {
			require.NoError(t, c.Crash())
			inflight += e.eng.Stats().InHand
			require.NoError(t, c.StartAgain(ctx))
		} else {
			require.NoError(t, c.Halt())
			inflight += e.eng.Stats().InHand
			require.NoError(t, c.StartAgain(ctx))
		}
	}
	require.NoError(t, <-submitted)
	waitTerminal(t, admin, 2*time.Minute)

	v := judge(t, admin, rc, rc.url)
	logs := e.logs.String()
	var errorLines int
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, `"level":"WARN"`) {
			errorLines++
		}
	}
	t.Logf("database restart: routes=%d outages=%d submit_retries=%d dispatcher_error_logs=%d in_flight_at_outages=%d duplicates=%d lost=%d statuses=%v",
		v.routes, outages, retries, errorLines, inflight, v.duplicates, v.lost, v.byStatus)
	require.Equal(t, routes, v.routes)
	require.Zero(t, v.lost)
	require.Equal(t, routes, v.published)
	require.LessOrEqual(t, int64(v.duplicates), inflight)
	require.Positive(t, errorLines, "the dispatcher logs the outage it rode out")
	fmt.Printf("reliability restart: routes=%d outages=%d dispatcher_error_logs=%d duplicates=%d (bound %d) lost=%d\n",
		v.routes, outages, errorLines, v.duplicates, inflight, v.lost)
}
