package herald_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// testBundle is a client on a fresh database, with a pool that counts the
// statements it runs and the network writes (round trips) it makes.
type testBundle struct {
	client  *herald.Client
	pool    *pgxpool.Pool
	dbURL   string
	queries atomic.Int64 // statements started, through pgx's QueryTracer
	writes  atomic.Int64 // network writes to the server
}

// setup returns a testBundle; mutate, if not nil, adjusts the client's
// Config.
func setup(t *testing.T, mutate func(*herald.Config)) *testBundle {
	t.Helper()
	b := &testBundle{dbURL: pgtemp.NewDatabase(t)}
	cfg, err := pgxpool.ParseConfig(b.dbURL)
	require.NoError(t, err)
	cfg.MaxConns = 16 // enough for racing submits to meet in the database
	cfg.ConnConfig.Tracer = (*queryCounter)(&b.queries)
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &writeCounter{Conn: c, n: &b.writes}, nil
	}
	b.pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(b.pool.Close)
	hcfg := &herald.Config{}
	if mutate != nil {
		mutate(hcfg)
	}
	b.client, err = herald.NewClient(b.pool, hcfg)
	require.NoError(t, err)
	t.Cleanup(b.client.Close)
	return b
}

// queryCounter counts statements.
type queryCounter atomic.Int64

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	(*atomic.Int64)(c).Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// writeCounter counts the writes on a connection: each round trip to the
// server starts with one.
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// count runs a COUNT(*) statement (test-only SQL: assertions read the
// tables directly, as an operator would with psql).
func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// records and routes count the stored rows.
func (b *testBundle) records(t *testing.T) int {
	return b.count(t, "SELECT count(*) FROM herald.records")
}

func (b *testBundle) routes(t *testing.T) int {
	return b.count(t, "SELECT count(*) FROM herald.routes")
}

// newIntent returns a valid intent with idempotency key key: one user on
// sms and email, plus one direct address on each of the three channels (6
// routes).
func newIntent(key string) *herald.Intent {
	return &herald.Intent{
		NotificationType: "order.shipped",
		Producer:         "shop",
		IdempotencyKey:   key,
		Audience: herald.Audience{
			UserIDs: []string{"42"},
			SMS:     []string{"+14155550123"},
			Email:   []string{"ops@example.com"},
			Webhook: []string{"https://hooks.example.com/orders"},
		},
		Channels: []string{"sms", "email", "webhook"},
		Content: herald.Content{
			SMS:     &herald.SMSContent{Body: "Order 9 shipped"},
			Email:   &herald.EmailContent{Subject: "Order 9 shipped", Text: "It is on its way."},
			Webhook: json.RawMessage(`{"order":9}`),
		},
		RequestID: "req-1",
	}
}

// routesPerIntent is how many routes newIntent fans out to: the user on 3
// channels plus 3 direct addresses.
const routesPerIntent = 6

// smallIntent returns a valid one-route intent with key key.
func smallIntent(i int) *herald.Intent {
	return &herald.Intent{
		NotificationType: "otp",
		Producer:         "auth",
		IdempotencyKey:   fmt.Sprintf("otp-%d", i),
		Audience:         herald.Audience{SMS: []string{"+14155550123"}},
		Channels:         []string{"sms"},
		Content:          herald.Content{SMS: &herald.SMSContent{Body: fmt.Sprintf("Your code is %06d", i)}},
	}
}
