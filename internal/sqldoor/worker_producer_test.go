package sqldoor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// login creates a LOGIN role of its own for this test (pgtemp.Login: named
// prefix_<hex>, a well-formed producer name, and granted the herald role
// grant), and returns its name, a pool connected as it, and drop, which
// closes the pool and drops the role, as an administrator removing the
// login would. The test's cleanup does the same, harmlessly after drop.
func (b *workerBundle) login(t *testing.T, prefix, grant string) (name string, pool *pgxpool.Pool, drop func()) {
	t.Helper()
	name, pool = pgtemp.Login(t, b.pool, prefix, grant)
	return name, pool, func() {
		pool.Close()
		_, err := b.pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
		require.NoError(t, err)
	}
}

// entryOf returns validEntry in producer's name with idempotency key key.
func entryOf(producer, key string) string {
	s := strings.Replace(validEntry, `"producer": "shop"`, fmt.Sprintf(`"producer": %q`, producer), 1)
	return strings.Replace(s, "order-9-shipped", key, 1)
}

// insertAs INSERTs raw entries into the intake through pool, as the
// producer logged in on it would (only the body column: the database sets
// submitted_by).
func insertAs(t *testing.T, pool *pgxpool.Pool, bodies ...string) {
	t.Helper()
	require.NoError(t, benchstore.New().IntakeInsertMany(context.Background(), pool, bodies))
}

func TestWorker_SetsAsideEntryInOthersName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	results := map[[2]string]int{}
	b := setupWorker(t, func(c *WorkerConfig) {
		c.ResultFunc = func(producer, result string) {
			mu.Lock()
			defer mu.Unlock()
			results[[2]string{producer, result}]++
		}
	})
	name, asProducer, _ := b.login(t, "prod", "herald_producer")

	insertAs(t, asProducer, entryOf("shop", "forged"), entryOf(name, "mine"))
	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, accepted)
	require.Equal(t, 1, malformed)
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.intake"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = 'shop'"), "nothing accepted in shop's name")
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.records"))
	require.Equal(t, map[[2]string]int{{name, ResultAccepted}: 1, {name, ResultMalformed}: 1}, results,
		"the forged entry counts against the login, not shop")

	m, err := store.New().MalformedIntentGet(ctx, b.pool, "intake:1")
	require.NoError(t, err)
	require.Equal(t, string(heraldtype.CodeProducerMismatch), m.FailureCode)
	require.Equal(t, name, m.SubmittedBy)
	require.Equal(t, "shop", m.Producer, "the producer the entry named")
	require.Equal(t, "forged", m.IdempotencyKey)
	require.Contains(t, m.FailureMessage, `"shop"`)
	require.Contains(t, m.FailureMessage, name)

	// The producer's login reads why its entry was refused (the table's
	// policy matches submitted_by).
	var code string
	require.NoError(t, asProducer.QueryRow(ctx, `SELECT failure_code FROM herald.malformed_intents`).Scan(&code))
	require.Equal(t, string(heraldtype.CodeProducerMismatch), code)
}

func TestWorker_RelayLoginMayUseAnyName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, nil)
	_, asRelay, _ := b.login(t, "relay", "herald_relay")

	insertAs(t, asRelay, entryOf("shop", "a"), entryOf("billing", "b"))
	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, accepted)
	require.Zero(t, malformed)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = 'shop'"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.records WHERE producer = 'billing'"))
}

func TestWorker_DroppedLoginIsUntrusted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, nil)
	relay, asRelay, drop := b.login(t, "relay", "herald_relay")
	insertAs(t, asRelay, entryOf("shop", "a"), entryOf(relay, "own"))
	b.insert(t, entryOf("billing", "b")) // the owner's, beside them
	drop()                               // pg_has_role would raise an error on the name now

	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err, "the claim must not fail on a dropped login")
	require.Equal(t, 2, accepted, "the owner's entry, and the one in the dropped login's own name")
	require.Equal(t, 1, malformed)
	m, err := store.New().MalformedIntentGet(ctx, b.pool, "intake:1")
	require.NoError(t, err)
	require.Equal(t, string(heraldtype.CodeProducerMismatch), m.FailureCode)
	require.Equal(t, relay, m.SubmittedBy)
}

func TestWorker_MalformedRowsNameTheLogin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, nil)
	// A database that refuses what the validator accepts, for the
	// rejected_by_database path (test-only SQL).
	_, err := b.pool.Exec(ctx, `ALTER TABLE herald.records ADD CONSTRAINT no_poison
		CHECK (notification_type <> 'poison.pill')`)
	require.NoError(t, err)
	name, asProducer, _ := b.login(t, "prod", "herald_producer")
	var owner string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT session_user").Scan(&owner))

	poison := strings.Replace(entryOf(name, "p"), "order.shipped", "poison.pill", 1)
	b.insert(t, "not json")                                                                  // intake:1, the owner's
	insertAs(t, asProducer, "not json", poison, `{"pad": "`+strings.Repeat("x", 8<<10)+`"}`) // 2, 3, 4
	_, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, malformed)

	for id, want := range map[int][2]string{
		1: {string(heraldtype.CodeNotJSON), owner}, 2: {string(heraldtype.CodeNotJSON), name}, 3: {string(heraldtype.CodeRejectedByDatabase), name}, 4: {string(heraldtype.CodeTooLarge), name},
	} {
		m, err := store.New().MalformedIntentGet(ctx, b.pool, fmt.Sprintf("intake:%d", id))
		require.NoError(t, err)
		require.Equal(t, want, [2]string{m.FailureCode, m.SubmittedBy}, "intake:%d", id)
	}
}

func TestWorker_TrustsMemberOfIntakeOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWorker(t, nil)
	// The engine's login owns the tables (it migrated them); a login
	// granted that role, though no superuser and no relay, is the engine's
	// too.
	var owner string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT tableowner FROM pg_tables
		WHERE schemaname = 'herald' AND tablename = 'intake'`).Scan(&owner))
	engine, asEngine, _ := b.login(t, "engine", owner)
	var super bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = $1`, engine).Scan(&super))
	require.False(t, super)

	insertAs(t, asEngine, entryOf("shop", "a"))
	accepted, malformed, err := b.worker.DrainOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, accepted)
	require.Zero(t, malformed)
}
