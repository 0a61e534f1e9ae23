package sqldoor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
	"github.com/heraldhq/herald/internal/wake"
)

// workerBundle is a database of its own and a worker on it.
type workerBundle struct {
	pool   *pgxpool.Pool
	dbURL  string
	worker *Worker
}

// setupWorker returns a workerBundle whose worker validates with
// fuzzLimits at testNow; mutate, if not nil, adjusts its config.
func setupWorker(t *testing.T, mutate func(*WorkerConfig)) *workerBundle {
	t.Helper()
	b := &workerBundle{dbURL: pgtemp.NewDatabase(t)}
	var err error
	b.pool, err = pgxpool.New(context.Background(), b.dbURL)
	require.NoError(t, err)
	t.Cleanup(b.pool.Close)
	cfg := &WorkerConfig{Limits: fuzzLimits, NowFunc: func() time.Time { return testNow }}
	if mutate != nil {
		mutate(cfg)
	}
	b.worker, err = NewWorker(b.pool, cfg)
	require.NoError(t, err)
	return b
}

// insert INSERTs raw entries into the intake, as a producer would.
func (b *workerBundle) insert(t *testing.T, bodies ...string) {
	t.Helper()
	require.NoError(t, benchstore.New().IntakeInsertMany(context.Background(), b.pool, bodies))
}

// count runs a COUNT(*) statement (test-only SQL, as an operator's psql).
func (b *workerBundle) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

func TestNewWorker_RefusesBadConfigNamingField(t *testing.T) {
	t.Parallel()
	b := setupWorker(t, nil)
	_, err := NewWorker(b.pool, &WorkerConfig{BatchSize: -1})
	require.ErrorContains(t, err, "BatchSize")
	_, err = NewWorker(b.pool, &WorkerConfig{PollInterval: time.Microsecond})
	require.ErrorContains(t, err, "PollInterval")
	_, err = NewWorker(nil, nil)
	require.Error(t, err)
}

func TestWorker_RecordsEachMalformedKindCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	results := map[string]int{}
	b := setupWorker(t, func(c *WorkerConfig) {
		c.BatchSize = 4 // several batches, and keys that meet across them
		c.ResultFunc = func(_, result string) {
			mu.Lock()
			defer mu.Unlock()
			results[result]++
		}
	})

	seeds := intaketest.Seeds()
	want := map[int]string{} // intake id → expected failure code
	wantAccepted := 0
	id := 0
	for _, s := range seeds {
		if !utf8.ValidString(s.Body) || strings.Contains(s.Body, "\x00") {
			continue // a text column cannot hold it: PostgreSQL refuses the INSERT
		}
		b.insert(t, s.Body)
		id++ // identity values, in insertion order
		switch {
		case s.Name == "ValidWithEveryField":
			// Same key as Valid, different request: a conflict.
			want[id] = string(heraldtype.CodeIdempotencyConflict)
		case s.Want == "":
			wantAccepted++
		default:
			want[id] = s.Want
		}
	}
	b.insert(t, validEntry) // a retry of Valid: accepted as a duplicate
	wantAccepted++

	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, wantAccepted, accepted)
	require.Equal(t, len(want), malformed)
	require.Equal(t, map[string]int{
		ResultAccepted: wantAccepted - 1, ResultDuplicate: 1, ResultConflict: 1, ResultMalformed: len(want) - 1,
	}, results)

	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.intake"), "the intake is empty afterwards")
	require.Equal(t, wantAccepted-1, b.count(t, "SELECT count(*) FROM herald.records"))
	require.Equal(t, len(want), b.count(t, "SELECT count(*) FROM herald.malformed_intents"))

	var validID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT notification_id FROM herald.records
		WHERE idempotency_key = 'order-9-shipped'`).Scan(&validID))
	covered := map[string]bool{}
	for id, code := range want {
		m, err := store.New().MalformedIntentGet(ctx, b.pool, fmt.Sprintf("intake:%d", id))
		require.NoError(t, err, "entry %d", id)
		require.Equal(t, code, m.FailureCode, "entry %d: %s", id, m.FailureMessage)
		require.NotEmpty(t, m.FailureMessage)
		require.True(t, json.Valid(m.RawFields))
		require.Equal(t, testNow, m.RecordedAt.UTC())
		covered[code] = true
		if code == string(heraldtype.CodeIdempotencyConflict) {
			require.Contains(t, m.FailureMessage, validID, "a conflict names the existing notification")
			require.Equal(t, "shop", m.Producer)
			require.Equal(t, "order-9-shipped", m.IdempotencyKey)
			require.Equal(t, "order.shipped", m.NotificationType)
		}
	}
	// rejected_by_database, producer_mismatch, unknown_template,
	// content_blocked, campaign_canceled, callback_url_needs_subscription
	// and sender_not_approved have tests of their own: they need a database
	// that refuses what the validator accepts, a producer's login, templates
	// and content rules (worker_content_test.go), a canceled campaign, a
	// producer without a callback subscription (the root package's
	// door_metadata_test.go) and approved senders (senders_test.go).
	var codes []string
	for _, c := range heraldtype.Codes() {
		codes = append(codes, string(c))
	}
	require.ElementsMatch(t, slices.DeleteFunc(codes, func(c string) bool {
		return c == string(heraldtype.CodeRejectedByDatabase) || c == string(heraldtype.CodeProducerMismatch) ||
			c == string(heraldtype.CodeUnknownTemplate) || c == string(heraldtype.CodeContentBlocked) ||
			c == string(heraldtype.CodeCampaignCanceled) || c == string(heraldtype.CodeCallbackURLNeedsSubscription) ||
			c == string(heraldtype.CodeSenderNotApproved)
	}),
		keys(covered), "every failure code is exercised")
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWorker_RunWakesOnNotifyAndHints(t *testing.T) {
	t.Parallel()
	// Polling an hour apart: only the herald_intake notification can wake
	// the worker within the test.
	b := setupWorker(t, func(c *WorkerConfig) { c.PollInterval = time.Hour })
	conn, err := pgx.Connect(context.Background(), b.dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	topic, err := store.New().NotifyTopic(context.Background(), conn, wake.RoutesTopic)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), "LISTEN "+pgx.Identifier{topic}.Sanitize())
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.worker.Run(ctx) }()

	// Wait until the worker LISTENs, then insert.
	require.Eventually(t, func() bool {
		return b.count(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%herald_intake%'") > 0
	}, 10*time.Second, 10*time.Millisecond)
	b.insert(t, validEntry, `not json`)
	require.Eventually(t, func() bool {
		return b.count(t, "SELECT count(*) FROM herald.intake") == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.records"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.malformed_intents WHERE failure_code = 'not_json'"))

	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	n, err := conn.WaitForNotification(wctx)
	require.NoError(t, err)
	require.Empty(t, n.Payload, "the routes span several channels")

	cancel()
	require.NoError(t, <-done)
}

// envKillDB names the database the helper process drains until it kills
// itself.
const envKillDB = "HERALD_TEST_KILL_WORKER_DB"

// TestWorker_HelperProcess is TestWorker_KilledMidBatchLosesNothing's
// worker process: it commits one batch of 100, takes the next one and
// kills itself with SIGKILL before committing it.
func TestWorker_HelperProcess(t *testing.T) {
	dbURL := os.Getenv(envKillDB)
	if dbURL == "" {
		t.Skip("helper process of TestWorker_KilledMidBatchLosesNothing")
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	w, err := NewWorker(pool, &WorkerConfig{BatchSize: 100})
	require.NoError(t, err)
	batches := 0
	w.afterClaim = func([]intakeEntry) {
		batches++
		if batches == 2 {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	_, _, err = w.DrainOnce(context.Background())
	t.Fatalf("drained without being killed: %v", err)
}

func TestWorker_KilledMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, func(c *WorkerConfig) { c.NowFunc = nil; c.Limits = intake.Limits{} })

	const n = 250
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = strings.Replace(validEntry, "order-9-shipped", fmt.Sprintf("key-%d", i), 1)
	}
	b.insert(t, bodies...)

	cmd := exec.Command(os.Args[0], "-test.run=^TestWorker_HelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envKillDB+"="+b.dbURL)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, status.Signaled(), "%s", out)
	require.Equal(t, syscall.SIGKILL, status.Signal())

	// The first batch committed; the second rolled back with the process.
	require.Equal(t, 100, b.count(t, "SELECT count(*) FROM herald.records"))
	require.Equal(t, n-100, b.count(t, "SELECT count(*) FROM herald.intake"))

	// The dead backend may hold its row locks for a moment (SKIP LOCKED
	// passes over them), so drain until the intake is empty.
	accepted := 0
	require.Eventually(t, func() bool {
		a, m, err := b.worker.DrainOnce(ctx)
		require.NoError(t, err)
		require.Zero(t, m)
		accepted += a
		return b.count(t, "SELECT count(*) FROM herald.intake") == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, n-100, accepted)
	require.Equal(t, n, b.count(t, "SELECT count(*) FROM herald.records"))
	require.Equal(t, n*6, b.count(t, "SELECT count(*) FROM herald.routes"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.malformed_intents"))
}

func TestWorker_SetsAsideEntryDatabaseRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, nil)
	// A database that refuses what the validator accepts: an administrator's
	// constraint stands in for any such refusal (test-only SQL).
	_, err := b.pool.Exec(ctx, `ALTER TABLE herald.records ADD CONSTRAINT no_poison
		CHECK (notification_type <> 'poison.pill')`)
	require.NoError(t, err)

	entry := func(ntype, key string) string {
		return fmt.Sprintf(`{"notification_type": %q, "producer": "shop", "idempotency_key": %q,
			"audience": {"sms": ["+14155550100"]}, "channels": ["sms"], "content": {"sms": {"body": "hi"}}}`, ntype, key)
	}
	b.insert(t, entry("order.shipped", "a"), entry("poison.pill", "p"), entry("order.shipped", "b"), "not json")
	b.insert(t, entry("order.shipped", "c"))

	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, accepted)
	require.Equal(t, 2, malformed)
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.intake"), "nothing stalls in the intake")
	require.Equal(t, 3, b.count(t, "SELECT count(*) FROM herald.records"))

	var code, msg, key string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT failure_code, failure_message, idempotency_key
		FROM herald.malformed_intents WHERE failure_code <> 'not_json'`).Scan(&code, &msg, &key))
	require.Equal(t, string(heraldtype.CodeRejectedByDatabase), code)
	require.Equal(t, "p", key)
	require.Contains(t, msg, "no_poison", "the message names what refused it")
	require.Contains(t, msg, "SQLSTATE 23514")
}

func TestWorker_BatchLoadsAtMostBatchBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		budget   = 64 << 10
		maxEntry = 32 << 10
	)
	var batches [][]intakeEntry
	b := setupWorker(t, func(c *WorkerConfig) {
		c.BatchBytes = budget
		c.Limits.MaxEntryBytes = maxEntry
	})
	b.worker.afterClaim = func(entries []intakeEntry) { batches = append(batches, entries) }

	// Interleaved: valid entries, entries of 20 KiB (refused as
	// wrong_shape, but loaded whole: they are within MaxEntryBytes) and
	// entries of 1 MiB (too_large, of which only the start is loaded).
	const rounds = 10
	var bodies []string
	for i := range rounds {
		bodies = append(bodies,
			strings.Replace(validEntry, "order-9-shipped", fmt.Sprintf("key-%d", i), 1),
			fmt.Sprintf(`{"producer": "shop", "idempotency_key": "pad-%d", "pad": %q}`, i, strings.Repeat("p", 20<<10)),
			fmt.Sprintf(`{"producer": "bulk", "idempotency_key": "big-%d", "pad": %q}`, i, strings.Repeat("x", 1<<20)),
		)
	}
	b.insert(t, bodies...)

	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, rounds, accepted)
	require.Equal(t, 2*rounds, malformed)
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.intake"))

	taken := 0
	for i, batch := range batches {
		loaded := 0
		for _, e := range batch {
			loaded += len(e.body)
			if e.size > maxEntry {
				require.Greater(t, e.size, 1<<20, "an oversized entry keeps its true size")
				require.LessOrEqual(t, len(e.body), intake.RawFieldsExcerpt*utf8.UTFMax, "only the start of an oversized body is loaded")
			} else {
				require.Len(t, e.body, e.size)
			}
		}
		require.LessOrEqual(t, loaded, budget, "batch %d of %d entries", i, len(batch))
		taken += len(batch)
	}
	require.Equal(t, len(bodies), taken)
	require.Greater(t, len(batches), 3, "the budget, not the batch size, cut the batches")

	var n, size int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), min((raw_fields->>'bytes')::int)
		FROM herald.malformed_intents
		WHERE failure_code = 'too_large' AND producer = 'bulk' AND (raw_fields->>'truncated')::bool
			AND length(raw_fields->>'body') = 4096 AND starts_with(raw_fields->>'body', '{"producer": "bulk"')`).Scan(&n, &size))
	require.Equal(t, rounds, n, "each oversized entry is recorded as too_large with its first 4 KiB")
	require.Greater(t, size, 1<<20)
	require.Equal(t, rounds, b.count(t, "SELECT count(*) FROM herald.malformed_intents WHERE failure_code = 'wrong_shape'"))
}

func TestWorker_OversizedEntryBatchedAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var sizes []int
	b := setupWorker(t, func(c *WorkerConfig) { c.BatchBytes = 100 })
	b.worker.afterClaim = func(entries []intakeEntry) { sizes = append(sizes, len(entries)) }
	b.insert(t, validEntry, strings.Replace(validEntry, "order-9-shipped", "other", 1), "not json")

	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, accepted)
	require.Equal(t, 1, malformed)
	require.Equal(t, []int{1, 1, 1}, sizes, "one entry per batch, each over the budget alone")
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.intake"))
}

func TestWorker_RecordsOversizedEntryAsWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, func(c *WorkerConfig) { c.Limits = intake.Limits{} })
	// Over the default 256 KiB, in two-byte characters, with the 4 KiB cut
	// falling inside one: the worker, which loads only the start, must
	// record exactly what DecodeRaw and RawFields make of the whole body.
	body := `{"notification_type": "big.one", "producer": "shop", "pad": "` + strings.Repeat("é", 150_000) + `"}`
	if utf8.RuneStart(body[intake.RawFieldsExcerpt]) {
		body = strings.Replace(body, `"pad"`, `"padding"`, 1)
	}
	require.False(t, utf8.RuneStart(body[intake.RawFieldsExcerpt]))
	b.insert(t, body)

	_, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, malformed)
	m, err := store.New().MalformedIntentGet(ctx, b.pool, "intake:1")
	require.NoError(t, err)
	_, wantErr := intake.DecodeRaw([]byte(body), intake.Limits{})
	require.Error(t, wantErr)
	require.Equal(t, string(heraldtype.CodeTooLarge), m.FailureCode)
	require.Equal(t, wantErr.Error(), m.FailureMessage)
	require.JSONEq(t, string(intake.RawFields([]byte(body))), string(m.RawFields))
	require.Equal(t, "shop", m.Producer)
	require.Equal(t, "big.one", m.NotificationType)
}
