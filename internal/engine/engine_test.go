package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// dispatchConfigOf returns the dispatcher configuration an engine builds
// for the configuration file c, its deliverers closed at the test's end.
func dispatchConfigOf(t *testing.T, c *config.Config, getenv func(string) string) *dispatch.Config {
	t.Helper()
	cfg := FromConfig(c)
	cfg.GetenvFunc = getenv
	// The callback channel's Deliverer needs a pool; this one never
	// connects (pgxpool connects on first use).
	pool, err := pgxpool.New(context.Background(), "postgres://herald@127.0.0.1:1/never")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	e := &Engine{logger: discardLogger(), pool: pool}
	t.Cleanup(e.Close)
	dc, err := e.dispatchConfig(cfg)
	require.NoError(t, err)
	return dc
}

const fullFile = `
dispatch:
  batch_size: 50
  poll_interval: 250ms
intake:
  batch_size: 200
channels:
  email:
    driver: smtp
    concurrency: 4
    max_attempts: 5
    backoff: {base: 2s, cap: 1m}
    timeout: 10s
    lease: 40s
    smtp:
      host: smtp.example.com
      from: noreply@example.com
      username: herald
      password: {env: SMTP_PASSWORD}
  sms:
    driver: sms-http
    sms_http:
      url: https://sms.example.com/send
      api_key: {file: KEYFILE}
  webhook:
    driver: webhook
    webhook:
      secrets: {env: WEBHOOK_SECRETS}
`

func TestFromConfig_BuildsEveryDeliverer(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("sk-123\n"), 0o600))
	path := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(fullFile, "KEYFILE", keyFile)), 0o600))
	getenv := env(map[string]string{"SMTP_PASSWORD": "pw", "WEBHOOK_SECRETS": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	c, err := config.Load(path, getenv)
	require.NoError(t, err)

	dc := dispatchConfigOf(t, c, getenv)
	require.Len(t, dc.Channels, 4, "the file's three and callback")
	require.NotNil(t, dc.Channels["callback"].Deliverer)
	require.Equal(t, 40*time.Second, dc.Channels["email"].Lease)
	require.NotNil(t, dc.Channels["sms"].Deliverer)
}

func TestFromConfig_PassesDispatchAndIntake(t *testing.T) {
	t.Parallel()
	c, err := config.Load("", env(map[string]string{
		"HERALD_CHANNELS_WEBHOOK_DRIVER":    "discard",
		"HERALD_CHANNELS_SMS_DRIVER":        "log",
		"HERALD_DISPATCH_LOCK_TIMEOUT":      "500ms",
		"HERALD_DISPATCH_STATEMENT_TIMEOUT": "5s",
		"HERALD_DISPATCH_STALL_TIMEOUT":     "30s",
		"HERALD_INTAKE_IDEMPOTENCY_WINDOW":  "72h",
		"HERALD_INTAKE_MAX_PAYLOAD_BYTES":   "1024",
	}))
	require.NoError(t, err)
	dc := dispatchConfigOf(t, c, env(nil))
	require.Equal(t, 500*time.Millisecond, dc.LockTimeout)
	require.Equal(t, 5*time.Second, dc.StatementTimeout)
	require.Equal(t, 30*time.Second, dc.StallTimeout)
	// The SQL door's window and limits reach the intake worker.
	wc := FromConfig(c).Intake
	require.Equal(t, 72*time.Hour, wc.IdempotencyWindow)
	require.Equal(t, 1024, wc.Limits.MaxPayloadBytes)
}

func TestConfig_ExampleShowsDefaults(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{
		"HERALD_SMTP_PASSWORD":   "pw",
		"HERALD_SMS_API_KEY":     "sk",
		"HERALD_WEBHOOK_SECRETS": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_dGhpcyBpcyBhbiBvbGRlciBrZXk=",
	})
	c, err := config.Load("../config/example.yaml", getenv)
	require.NoError(t, err)
	dc := dispatchConfigOf(t, c, getenv)
	require.Equal(t, 32, dc.Channels["webhook"].Concurrency)
	require.Equal(t, time.Minute, dc.Channels["email"].Lease)
	// The example shows the dispatcher's defaults: it must not drift from
	// them.
	require.Equal(t, dispatch.DefaultLockTimeout, dc.LockTimeout)
	require.Equal(t, dispatch.DefaultStatementTimeout, dc.StatementTimeout)
	require.Equal(t, dispatch.DefaultStallTimeout, dc.StallTimeout)
	// And the callback channel's.
	cb := dc.Channels["callback"]
	require.Equal(t, DefaultCallbacks.Concurrency, cb.Concurrency)
	require.Equal(t, DefaultCallbacks.MaxAttempts, cb.MaxAttempts)
	require.Equal(t, DefaultCallbacks.Backoff.Base, cb.Backoff.Base)
	require.Equal(t, DefaultCallbacks.Backoff.Cap, cb.Backoff.Cap)
	require.Equal(t, DefaultCallbacks.Timeout, cb.Timeout)
	require.Equal(t, DefaultCallbacks.Timeout+30*time.Second, c.Callbacks.Lease, "the example's lease is the dispatcher's default")
	// And the API's.
	require.Equal(t, api.DefaultMaxBatch, c.API.MaxBatch)
	require.Equal(t, int64(api.DefaultMaxBodyBytes), c.API.MaxBodyBytes)
	require.Equal(t, api.DefaultReadTimeout, c.API.ReadTimeout)
	require.Equal(t, api.DefaultWriteTimeout, c.API.WriteTimeout)
	require.Equal(t, api.DefaultIdleTimeout, c.API.IdleTimeout)
	require.Equal(t, api.DefaultRequestTimeout, c.API.RequestTimeout)
	require.Equal(t, api.DefaultShutdownTimeout, c.API.ShutdownTimeout)
}

// closingDeliverer is the discard channel with a Close that counts.
type closingDeliverer struct{ closed atomic.Int32 }

func (d *closingDeliverer) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	return channel.Discard.Deliver(ctx, msg)
}

func (d *closingDeliverer) Close() error {
	d.closed.Add(1)
	return nil
}

type testBundle struct {
	dbURL string
	pool  *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{dbURL: pgtemp.NewDatabase(t)}
	var err error
	b.pool, err = pgxpool.New(context.Background(), b.dbURL)
	require.NoError(t, err)
	t.Cleanup(b.pool.Close)
	return b
}

func TestNew_ClosesDeliverersOnFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, cfg := range map[string]func(d channel.Deliverer) *Config{
		"MetricsAddrWithoutRegistry": func(d channel.Deliverer) *Config {
			return &Config{MetricsAddr: ":0", Dispatch: dispatch.Config{
				Channels: map[string]dispatch.ChannelConfig{"sms": {Deliverer: d}}}}
		},
		"ChannelTwice": func(d channel.Deliverer) *Config {
			return &Config{Drivers: map[string]config.Channel{"sms": {Driver: config.DriverLog}}, Dispatch: dispatch.Config{
				Channels: map[string]dispatch.ChannelConfig{"sms": {Deliverer: d}}}}
		},
		"BadMaintenance": func(d channel.Deliverer) *Config {
			return &Config{Maintenance: &maintenance.Config{BatchSize: -1}, Dispatch: dispatch.Config{
				Channels: map[string]dispatch.ChannelConfig{"sms": {Deliverer: d}}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := &closingDeliverer{}
			_, err := New(b.pool, cfg(d))
			require.Error(t, err)
			require.Equal(t, int32(1), d.closed.Load())
		})
	}
}

func TestRun_RunsPartsUntilCanceled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	d := &closingDeliverer{}
	e, err := New(b.pool, &Config{
		Logger:      discardLogger(),
		Registry:    prometheus.NewRegistry(),
		MetricsAddr: "127.0.0.1:0",
		Dispatch: dispatch.Config{
			Channels:     map[string]dispatch.ChannelConfig{"webhook": {Deliverer: d}},
			PollInterval: 50 * time.Millisecond,
		},
		Drivers:     map[string]config.Channel{"sms": {Driver: config.DriverDiscard}},
		Intake:      &sqldoor.WorkerConfig{PollInterval: 50 * time.Millisecond},
		Maintenance: &maintenance.Config{},
	})
	require.NoError(t, err)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + e.MetricsAddr().String() + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()

	// The intake worker accepts what the SQL door holds, and the
	// dispatcher delivers it.
	_, err = benchstore.New().IntakeInsertReturning(ctx, b.pool, []string{`{"notification_type":"order.shipped",
		"producer":"shop","idempotency_key":"k1","channels":["webhook"],
		"audience":{"webhook":["https://example.com/hook"]},"content":{"webhook":{"order":9}}}`})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := benchstore.New().BenchRouteCountOpen(ctx, b.pool)
		var routes int
		return err == nil && n == 0 &&
			b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.routes WHERE status = 'published'`).Scan(&routes) == nil && routes == 1
	}, 15*time.Second, 20*time.Millisecond)
	// Maintenance's River client stood for leader; the endpoint serves.
	require.Eventually(t, func() bool {
		var n int
		return b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.river_leader`).Scan(&n) == nil && n == 1
	}, 15*time.Second, 20*time.Millisecond)
	code, body := get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `herald_backlog_routes{channel="sms"} 0`, "every channel is in the backlog gauges")
	require.Contains(t, body, `herald_intents_total{producer="shop",result="accepted"} 1`)
	require.Contains(t, body, `herald_route_attempts_total{channel="webhook",outcome="delivered"} 1`)
	require.ErrorIs(t, e.Run(ctx), ErrRunning)

	cancel()
	require.NoError(t, <-done)
	require.Equal(t, int32(1), d.closed.Load(), "Run closes the deliverers")
	code, _ = get("/healthz")
	require.Zero(t, code, "the endpoint closed with Run")
	require.ErrorIs(t, e.Run(ctx), ErrClosed)
}

func TestRun_StopsAllWhenOneFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, err := New(b.pool, &Config{
		Dispatch: dispatch.Config{Channels: map[string]dispatch.ChannelConfig{"sms": {Deliverer: channel.Discard}}},
	})
	require.NoError(t, err)
	// A part that fails at once, as maintenance does when River cannot
	// start.
	e.parts = append(e.parts, part{"broken", func(context.Context) error { return io.ErrUnexpectedEOF }})
	errc := make(chan error, 1)
	go func() { errc <- e.Run(context.Background()) }()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		require.ErrorContains(t, err, "broken: ")
	case <-time.After(30 * time.Second):
		t.Fatal("the dispatcher did not stop when another part failed")
	}
}

func TestRun_APIServesOnOwnLogin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	apiURL := b.pool.Config().ConnString()
	// The engine's own login may not serve the API: it bypasses row-level security.
	_, err := api.Connect(ctx, apiURL, 0)
	require.ErrorIs(t, err, api.ErrNotAPILogin)
	_, apiPool := pgtemp.Login(t, b.pool, "api", "herald_api")
	key, err := api.CreateKey(ctx, b.pool, "shop", "test", "x")
	require.NoError(t, err)

	c, err := config.Load("", env(map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "discard", "HERALD_API_LISTEN": "127.0.0.1:0",
		"HERALD_API_DATABASE_URL": "unused"}))
	require.NoError(t, err)
	cfg := FromConfig(c)
	require.NotNil(t, cfg.API)
	cfg.API.Pool = apiPool
	cfg.Logger = discardLogger()
	e, err := New(b.pool, cfg)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()

	req, err := http.NewRequest("POST", "http://"+e.APIAddr().String()+"/v1/notifications", strings.NewReader(
		`{"notification_type":"otp","idempotency_key":"k1","channels":["sms"],"audience":{"sms":["+14155550123"]},"content":{"sms":{"body":"123456"}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key.Secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, err = http.Get("http://" + e.APIAddr().String() + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The dispatcher delivers what the API accepted.
	require.Eventually(t, func() bool {
		var n int
		return b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.routes WHERE status = 'published'`).Scan(&n) == nil && n == 1
	}, 15*time.Second, 20*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	_, err = http.Get("http://" + e.APIAddr().String() + "/healthz")
	require.Error(t, err, "the listener is closed")
}

// The engine's pool plans its prepared statements once: the claim, whose
// custom plan looks cheaper than its generic one under load, is not planned
// again at every run (pg_prepared_statements counts both kinds of plan),
// unless the URL asks for Postgres's own choice.
func TestConfigurePool_ClaimUsesGenericPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtemp.NewDatabase(t)
	fillDueWebhookRoutes(t, dbURL, 2000)
	for _, tc := range []struct {
		url         string
		wantCustoms bool
	}{{url: dbURL}, {url: dbURL + "&plan_cache_mode=auto", wantCustoms: true}} {
		cfg, err := pgxpool.ParseConfig(tc.url)
		require.NoError(t, err)
		ConfigurePool(cfg)
		cfg.MaxConns = 1
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		for range 8 {
			_, err := store.New().RouteClaimDue(ctx, pool, store.RouteClaimDueParams{Channel: "webhook", Max: 100, LeaseSeconds: 60})
			require.NoError(t, err)
		}
		var generic, custom int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
			WHERE statement LIKE '-- name: RouteClaimDue %'`).Scan(&generic, &custom))
		pool.Close()
		if tc.wantCustoms {
			// Postgres's own rule: the first five runs are planned anew.
			require.GreaterOrEqual(t, custom, int64(5), "with plan_cache_mode=auto Postgres plans the claim anew")
			continue
		}
		require.Equal(t, int64(0), custom)
		require.Equal(t, int64(8), generic)
	}
}

// The claim finds the routes it locked again by the tuple ids its locking
// scan returned (one TID scan, no index descent), and each route's record
// by a probe of the records primary key, one descent per route, on a table
// large enough for a sequential scan to tempt the planner: in the generic
// plan the engine's pool runs, and in custom plans for the largest batch.
func TestConfigurePool_ClaimPlanByTID(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	fillDueWebhookRoutes(t, dbURL, 20000)
	// The generic plan, the same for any batch.
	requireClaimPlan(t, dbURL, "", 20000)
	// A custom plan (a URL may ask for them) for the dispatcher's largest
	// batch.
	requireClaimPlan(t, dbURL, "&plan_cache_mode=force_custom_plan", dispatch.DefaultBatchSize)
}

// The generic plan is made at a pool connection's first claim, and kept
// until an ANALYZE: made on tables just emptied (TRUNCATE, as herald bench
// does before each round, or a new deployment) with the first batch of
// routes in, it must still be the TID scan and the primary-key probe.
// Joined to records in the UPDATE, the claim merged full scans of both
// primary keys here, and kept doing so as the tables grew.
func TestConfigurePool_ClaimPlanOnEmptyTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtemp.NewDatabase(t)
	fillDueWebhookRoutes(t, dbURL, 20000)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `TRUNCATE herald.routes, herald.records CASCADE`)
	require.NoError(t, err)
	var pages int32
	var tuples float32
	require.NoError(t, pool.QueryRow(ctx, `SELECT relpages, reltuples FROM pg_class
		WHERE oid = 'herald.routes_live'::regclass`).Scan(&pages, &tuples))
	require.Equal(t, int32(0), pages, "the truncated table has no size in the statistics")
	require.Equal(t, float32(-1), tuples, "nor a row count")
	for _, n := range []int{1, 1000} {
		// Neither table analysed since (the statistics of its columns
		// remain), and routes analysed while empty (autovacuum, in herald
		// bench while River runs), records not: the state in which the
		// claim joined to records in its UPDATE merged full scans. Then
		// records analysed while empty too, or alone (autovacuum after
		// retention emptied it): the state in which the claim's probe of
		// records costed records_listing_idx (an index since dropped),
		// whose second column is the id, level with records_pkey.
		for _, analyze := range []string{"", "ANALYZE herald.routes", "ANALYZE herald.records",
			"ANALYZE herald.routes; ANALYZE herald.records"} {
			_, err = pool.Exec(ctx, `TRUNCATE herald.routes, herald.records CASCADE`)
			require.NoError(t, err)
			if analyze != "" {
				_, err = pool.Exec(ctx, analyze)
				require.NoError(t, err)
			}
			fillDueWebhookRoutesNoAnalyze(t, dbURL, n)
			requireClaimPlan(t, dbURL, "", dispatch.DefaultBatchSize)
		}
	}
}

// Retention and the API's list walk records in id order through their
// partitions' primary keys (records are partitioned by the week they
// were accepted in), in the engine pool's generic plans:
// over a month of finished history, a retention batch reads records_pkey
// from its cursor in order to the batch's LIMIT, with no sort and no scan
// of the table, reads each candidate again and deletes it by its tuple
// id, and reads the batch's routes as one range of routes_pkey (dead-letter
// retention, which runs rarely, probes routes_pkey per record); the list
// reads records_pkey backwards from its cursor.
func TestConfigurePool_RetentionWalksByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtemp.NewDatabase(t)
	fill, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer fill.Close()
	// 20,000 records with UUIDv7 ids, accepted over the 30 days that ended
	// 8 days ago, each with a published route: the retention bench's
	// history.
	const day = 24 * time.Hour
	_, err = store.New().RouteWeeksCreate(ctx, fill, store.RouteWeeksCreateParams{
		FirstDay:    pgtype.Date{Time: time.Now().Add(-38 * day), Valid: true},
		LastDay:     pgtype.Date{Time: time.Now(), Valid: true},
		WaitSeconds: 10,
	})
	require.NoError(t, err)
	require.NoError(t, benchstore.New().BenchHistoryFill(ctx, fill, benchstore.BenchHistoryFillParams{
		Producer: "p", PayloadJson: "{}", Channel: "webhook",
		Oldest: time.Now().Add(-38 * day), SpanSeconds: (30 * day).Seconds(), N: 20000, FromN: 0, ToN: 20000,
		RouteIds: []string{"webhook:x"}, RecipientRefs: []string{"https://example.test/x"},
	}))
	_, err = fill.Exec(ctx, `ANALYZE herald.routes; ANALYZE herald.records`)
	require.NoError(t, err)

	cut := time.Now().Add(-7 * day)
	// The history is older than every week made (the migration's, from
	// this week on): it is in records_default, walked row by row below the
	// weeks.
	below, err := store.New().RecordWeeksFloor(ctx, fill, "g")
	require.NoError(t, err)
	// Each prepared by a run that finds nothing (the cursor is past every
	// id), then explained for a batch of 1,000 from the first id.
	for _, c := range []struct {
		name string
		run  func(context.Context, store.DBTX) error
		args string
		// routes is how the batch's routes are read: as ranges of
		// routes_pkey, or (dead-letter retention, which runs rarely) by a
		// probe per record.
		routes []string
		// tids is how many times records are read by tuple id: to delete
		// them, and to lock them first (dead-letter retention).
		tids int
	}{{
		name: "RecordDeleteFinished",
		run: func(ctx context.Context, db store.DBTX) error {
			_, err := store.New().RecordDeleteFinished(ctx, db, store.RecordDeleteFinishedParams{
				AcceptedBefore: cut, FinishedBefore: cut, BatchSize: 1, AfterID: "g", BelowID: "h"})
			return err
		},
		args: fmt.Sprintf(`('', '%s', 1000, now() - interval '7 days', now() - interval '7 days', NULL)`, below),
		routes: []string{
			// unfinished: the range in every partition.
			`Index Scan using routes_f\d{8}_pkey on routes_f\d{8} rt_1\n\s+Index Cond: \(\(notification_id >= \$\d+\) AND \(notification_id <= \$\d+\)\)`,
			`Index Scan using routes_pkey on routes_live rt_\d+\n\s+Index Cond: \(\(notification_id >= \$\d+\) AND \(notification_id <= \$\d+\)\)`,
			// routes_deleted: in routes_live only.
			`Delete on routes rt_\d+\n\s+Delete on routes_live rt_\d+\n`,
		},
		tids: 1,
	}, {
		name: "RecordDeleteDeadLettered",
		run: func(ctx context.Context, db store.DBTX) error {
			_, err := store.New().RecordDeleteDeadLettered(ctx, db, store.RecordDeleteDeadLetteredParams{
				DeadBefore: cut, BatchSize: 1, AfterID: "g", BelowID: "h"})
			return err
		},
		args: fmt.Sprintf(`('', '%s', 1000, now() - interval '7 days', NULL)`, below),
		routes: []string{
			`Index Scan using routes_f\d{8}_pkey on routes_f\d{8} rt_1\n\s+Index Cond: \(\(notification_id >= \$\d+\) AND \(notification_id <= \$\d+\)\)`,
			`Index Scan using routes_pkey on routes_live rt_\d+\n\s+Index Cond: \(\(notification_id >= \$\d+\) AND \(notification_id <= \$\d+\)\)`,
		},
		tids: 2,
	}} {
		plan := explainPrepared(t, dbURL, c.name, c.run, c.args)
		// The weeks pruned away as the statement starts: only
		// records_default is walked, read again and deleted.
		require.Contains(t, plan, "Index Scan using records_default_pkey on records_default r", c.name)
		require.Contains(t, plan, "Index Cond: ((notification_id > $1) AND (notification_id < $2))", c.name)
		require.Contains(t, plan, "Subplans Removed", c.name)
		require.NotRegexp(t, `Scan[^\n]* on records_w`, plan, c.name)
		require.Contains(t, plan, "Tid Scan on records_default r", c.name)
		require.Equal(t, c.tids, strings.Count(plan, "Tid Scan on records"), c.name)
		require.Equal(t, 1, strings.Count(plan, "_pkey on records"), c.name)
		for _, re := range c.routes {
			require.Regexp(t, re, plan, c.name)
		}
		if c.name == "RecordDeleteFinished" {
			// No descent per record: the ids are looked up in hashes (the
			// candidates', to check a tuple id's record, and the unfinished
			// and deleted ones), and routes_pkey is read only as the two
			// ranges.
			require.Equal(t, 3, strings.Count(plan, "hashed SubPlan"))
			require.NotContains(t, plan, "Index Cond: (notification_id = r_1.notification_id)")
			require.Equal(t, 2, strings.Count(plan, "routes_pkey"), "routes_live's, once each")
		}
		// No partition read whole: every read of routes has its condition
		// in the index.
		require.NotRegexp(t, `Index Scan using \w+ on routes\w* rt_\d+\n\s+Filter`, plan, c.name)
		// No sort: a Merge Append's "Sort Key" merges ordered scans.
		require.NotRegexp(t, `->  (Incremental )?Sort`, plan, c.name)
		require.NotContains(t, plan, "Seq Scan", c.name)
		require.NotContains(t, plan, "Merge Join", c.name)
		require.NotContains(t, plan, "Hash", c.name)
	}

	plan := explainPrepared(t, dbURL, "RecordListPage", func(ctx context.Context, db store.DBTX) error {
		_, err := store.New().RecordListPage(ctx, db, store.RecordListPageParams{PageSize: 1})
		return err
	}, `(NULL, 50)`)
	// Every partition's primary key read backwards from the cursor,
	// merged in order.
	require.Contains(t, plan, "Merge Append")
	require.Contains(t, plan, "Index Scan Backward using records_default_pkey on records_default")
	require.Equal(t, strings.Count(plan, " on records_"), strings.Count(plan, "Index Scan Backward using records_"))
	require.NotRegexp(t, `->  (Incremental )?Sort`, plan)
	require.NotContains(t, plan, "Seq Scan")
}

// requireClaimPlan explains RouteClaimDue as the engine's pool prepares it
// (with the URL's extra settings) for a batch of batch routes and checks
// its shape.
func requireClaimPlan(t *testing.T, dbURL, mode string, batch int) {
	t.Helper()
	// Prepared by a run that claims nothing.
	plan := explainPrepared(t, dbURL+mode, "RouteClaimDue", func(ctx context.Context, db store.DBTX) error {
		_, err := store.New().RouteClaimDue(ctx, db, store.RouteClaimDueParams{Channel: "none", Max: 1, LeaseSeconds: 60})
		return err
	}, fmt.Sprintf(`(NULL, %d, 'webhook', '', 60)`, batch))
	require.Contains(t, plan, "Tid Scan on routes_live r", mode)
	require.Contains(t, plan, "TID Cond: (ctid = ANY", mode)
	// Pruned to routes_live when planned, generic plan included: no other
	// partition is set up, locked or read.
	require.NotContains(t, plan, "routes_f", mode)
	// Each claimed route's record: a probe of the primary key of the one
	// partition its id falls in, chosen per route as the
	// claim runs; every partition read through its primary key.
	require.Regexp(t, `Index Scan using records_w\d{8}_pkey on records_w\d{8} x_\d+\n\s+Index Cond: \(notification_id = c\.notification_id\)`, plan, mode)
	require.Equal(t, strings.Count(plan, " on records_"), strings.Count(plan, "Index Cond: (notification_id = c.notification_id)"), mode)
	require.NotContains(t, plan, "routes_pkey", mode)
	require.NotContains(t, plan, "Seq Scan", mode)
	require.NotContains(t, plan, "Hash Join", mode)
	require.NotContains(t, plan, "Merge Join", mode)
	// The tid array is computed once (an InitPlan): no scan nested inside
	// the batch sorts an array again at every rescan (quadratic in the
	// batch).
	require.Equal(t, 1, strings.Count(plan, "ANY"), mode)
}

// A completion reaches its route by the tuple id its claim returned (a
// TID scan per completion, no routes_pkey descent), and a completion sent
// without one (NULL) gets its route's tid from routes_pkey first: in the
// generic plan the engine's pool runs, on a table large enough for a
// sequential scan to tempt the planner, and on tables just emptied, where
// the generic plan of a completion joined to routes on the primary key
// merged the batch with a full scan of routes_pkey.
func TestConfigurePool_CompletionByTID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtemp.NewDatabase(t)
	fillDueWebhookRoutes(t, dbURL, 20000)
	requireCompletionPlan(t, dbURL)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	for _, n := range []int{1, 1000} {
		for _, analyze := range []string{"", "ANALYZE herald.routes", "ANALYZE herald.routes; ANALYZE herald.records"} {
			_, err = pool.Exec(ctx, `TRUNCATE herald.routes, herald.records CASCADE`)
			require.NoError(t, err)
			if analyze != "" {
				_, err = pool.Exec(ctx, analyze)
				require.NoError(t, err)
			}
			fillDueWebhookRoutesNoAnalyze(t, dbURL, n)
			requireCompletionPlan(t, dbURL)
		}
	}
}

// requireCompletionPlan explains RouteCompleteMany's generic plan as the
// engine's pool prepares it and checks its shape.
func requireCompletionPlan(t *testing.T, dbURL string) {
	t.Helper()
	// Prepared by a run with no completion; explained for one (the generic
	// plan is the same for any batch).
	plan := explainPrepared(t, dbURL, "RouteCompleteMany", func(ctx context.Context, db store.DBTX) error {
		_, err := store.New().RouteCompleteMany(ctx, db, store.RouteCompleteManyParams{})
		return err
	}, `('{n1}', '{webhook:x}', '{"(0,1)"}', '{1}', '{"2026-01-01 00:00:00+00"}', '{published}', '{0}',
		'{""}', '{""}', '{""}', '{5}', '{""}', '{""}', '{""}', '{""}', '{""}', NULL)`)
	// The routes update: the batch (done, read by the update alone, so
	// folded into its scan rather than materialized) in a nested loop over
	// TID scans of routes_live, each NULL tid looked up by the primary key.
	_, plan, ok := strings.Cut(plan, "CTE updated")
	require.True(t, ok, plan)
	plan, deadLettered, ok := strings.Cut(plan, "CTE dead_lettered")
	require.True(t, ok, plan)
	require.Contains(t, plan, "Nested Loop")
	require.Contains(t, plan, "Tid Scan on routes_live r")
	require.Contains(t, plan, "TID Cond: (ctid = COALESCE(u.route_tid, (SubPlan 1)))")
	require.Contains(t, plan, "Index Scan using routes_pkey on routes_live x")
	require.NotContains(t, plan, "CTE done", "the batch is not materialized")
	require.NotContains(t, plan+deadLettered, "routes_f", "pruned to routes_live")
	require.Equal(t, 1, strings.Count(plan, "routes_pkey"), "the primary key only for a NULL tid")
	require.NotContains(t, plan, "Seq Scan")
	require.NotContains(t, plan, "Hash Join")
	require.NotContains(t, plan, "Merge Join")
	// The dead letters are written from what the update returned.
	require.Contains(t, deadLettered, "CTE Scan on updated")
	require.NotContains(t, deadLettered, "Join")
}

// explainPrepared returns the plan of the statement sqlc names name, as
// the engine's pool (ConfigurePool, with dbURL's settings) prepares it:
// run prepares it (pgx's statement cache), and it is explained by its
// prepared name with args.
func explainPrepared(t *testing.T, dbURL, name string, run func(context.Context, store.DBTX) error, args string) string {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	ConfigurePool(cfg)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	require.NoError(t, run(ctx, conn))
	var stmt string
	require.NoError(t, conn.QueryRow(ctx, `SELECT name FROM pg_prepared_statements
		WHERE statement LIKE '-- name: ' || $1 || ' %'`, name).Scan(&stmt))
	rows, err := conn.Query(ctx, fmt.Sprintf(`EXPLAIN (COSTS OFF) EXECUTE %q%s`, stmt, args))
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// fillDueWebhookRoutes stores n records, each with one webhook route due a
// minute ago, and analyzes both tables, for the claim's plan tests.
func fillDueWebhookRoutes(t *testing.T, dbURL string, n int) {
	t.Helper()
	fillDueWebhookRoutesNoAnalyze(t, dbURL, n)
	fill, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	defer fill.Close()
	_, err = fill.Exec(context.Background(), `ANALYZE herald.routes; ANALYZE herald.records`)
	require.NoError(t, err)
}

// fillDueWebhookRoutesNoAnalyze is fillDueWebhookRoutes without the ANALYZE.
func fillDueWebhookRoutesNoAnalyze(t *testing.T, dbURL string, n int) {
	t.Helper()
	ctx := context.Background()
	fill, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer fill.Close()
	_, err = fill.Exec(ctx, `
		INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind, payload_json,
			idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
		SELECT 'n' || g, 't', 'p', 'addresses', '{}', 'k' || g, 'f', now(), now(), now(), now() + interval '1 day'
		FROM generate_series(1, $1::integer) AS g`, n)
	require.NoError(t, err)
	_, err = fill.Exec(ctx, `
		INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status, max_attempts,
			next_attempt_at, created_at, updated_at)
		SELECT notification_id, 'webhook:x', 'webhook', 'https://example.test/x', 'pending', 5,
			now() - interval '1 minute', now(), now()
		FROM herald.records`)
	require.NoError(t, err)
}

func TestRun_WritesCPUProfileWhenAsked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := filepath.Join(t.TempDir(), "serve.pprof")
	newEngine := func(getenv func(string) string) *Engine {
		e, err := New(b.pool, &Config{
			GetenvFunc: getenv,
			Dispatch:   dispatch.Config{Channels: map[string]dispatch.ChannelConfig{"sms": {Deliverer: channel.Discard}}},
		})
		require.NoError(t, err)
		return e
	}

	e := newEngine(env(map[string]string{CPUProfileEnv: path}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, 15*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	prof, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(prof), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, prof[:2], "a gzipped pprof profile, stopped and flushed by the time Run returned")

	e = newEngine(env(map[string]string{CPUProfileEnv: filepath.Join(t.TempDir(), "missing", "serve.pprof")}))
	err = e.Run(context.Background())
	require.ErrorContains(t, err, CPUProfileEnv)
}
