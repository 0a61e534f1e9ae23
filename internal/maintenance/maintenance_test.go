package maintenance_test

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// t0 is when the seeded notifications were accepted: a fixed instant in the
// past, so every cut-off in these tests is computed from the injected clock.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// idPrefix is how the id of every notification accepted at t0 begins: a
// notification id is a UUIDv7, whose first 48 bits are the milliseconds it
// was made at, and retention walks records in id order up to the ids of
// its cut-off.
var idPrefix = idPrefixAt(t0)

// idPrefixAt is how a UUIDv7 made at t begins.
func idPrefixAt(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-", ms>>16, ms&0xffff)
}

// nid is the id these tests give the notification they call name: t0's
// UUIDv7 prefix, then the name in hex, which sorts as the name does.
func nid(name string) string { return idPrefix + hex.EncodeToString([]byte(name)) }

// name is nid's inverse.
func name(t *testing.T, id string) string {
	t.Helper()
	h, ok := strings.CutPrefix(id, idPrefix)
	require.True(t, ok, "id %q is not one of t0's", id)
	b, err := hex.DecodeString(h)
	require.NoError(t, err)
	return string(b)
}

type testBundle struct {
	pool    *pgxpool.Pool
	metrics *metrics.Metrics
	reg     *prometheus.Registry
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	return &testBundle{pool: pgtemp.NewPool(t), metrics: metrics.New(reg), reg: reg}
}

// newMaintenance returns Maintenance whose clock reads now.
func (b *testBundle) newMaintenance(t *testing.T, now time.Time, cfg maintenance.Config) *maintenance.Maintenance {
	t.Helper()
	cfg.NowFunc = func() time.Time { return now }
	cfg.Metrics = b.metrics
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := maintenance.New(b.pool, &cfg)
	require.NoError(t, err)
	return m
}

// seedSpec is one notification to seed: accepted at t0 with an idempotency
// window of window, one route per status, each last changed at changed.
type seedSpec struct {
	id       string // its name: its id is nid(id), unless rawID is set
	rawID    string
	window   time.Duration
	statuses []string
	changed  time.Time
}

// seed accepts the notifications through the intake's own insert, at t0,
// with the ids nid gives their names, and then moves their routes to the
// given statuses.
func (b *testBundle) seed(t *testing.T, specs ...seedSpec) {
	t.Helper()
	ctx := context.Background()
	for _, s := range specs {
		id := cmp.Or(s.rawID, nid(s.id))
		var p store.RecordInsertManyParams
		p.NotificationIds = []string{id}
		p.NotificationTypes = []string{"order.shipped"}
		p.Producers = []string{"shop"}
		p.AudienceKinds = []string{"users"}
		p.RecipientUserIds = [][]byte{[]byte(`["u1"]`)}
		p.PayloadJsons = []string{`{}`}
		p.IdempotencyKeys = []string{"key-" + id}
		p.RequestFingerprints = []string{"fp-" + id}
		p.RequestIds = []string{""}
		p.TraceIds = []string{""}
		p.OccurredAts = []time.Time{t0}
		p.ChannelLists = []string{"email"}
		p.Priorities = []int16{0}
		p.SendAts = []time.Time{{}}
		p.ExpiresAts = []time.Time{{}}
		p.CallbackUrls = []string{""}
		p.Now = &t0
		p.IdempotencyWindowSeconds = s.window.Seconds()
		for i := range s.statuses {
			p.RouteNotificationIds = append(p.RouteNotificationIds, id)
			p.RouteIds = append(p.RouteIds, fmt.Sprintf("r%d", i))
			p.RouteChannels = append(p.RouteChannels, "email")
			p.RouteRecipientRefs = append(p.RouteRecipientRefs, "user:u1")
			p.RouteMaxAttempts = append(p.RouteMaxAttempts, 0)
			p.RoutePriorities = append(p.RoutePriorities, 0)
			p.RouteSendAts = append(p.RouteSendAts, time.Time{})
			p.RouteExpiresAts = append(p.RouteExpiresAts, time.Time{})
			p.RouteSmsEncodings = append(p.RouteSmsEncodings, "")
			p.RouteSmsSegments = append(p.RouteSmsSegments, 0)
		}
		_, err := store.New().RecordInsertMany(ctx, b.pool, p)
		require.NoError(t, err)
		for i, st := range s.statuses {
			b.setRouteStatusID(t, id, fmt.Sprintf("r%d", i), st, s.changed)
		}
	}
}

// setRouteStatus moves one route of the notification seeded as name to
// status as the dispatcher would, with its
// last change at changed, and writes its dead letter when status is
// dead_letter. SQL in a test is the test's own helper: the dispatcher's
// queries do this for real.
func (b *testBundle) setRouteStatus(t *testing.T, name, routeID, status string, changed time.Time) {
	t.Helper()
	b.setRouteStatusID(t, nid(name), routeID, status, changed)
}

// setRouteStatusID is setRouteStatus by the notification's id.
func (b *testBundle) setRouteStatusID(t *testing.T, id, routeID, status string, changed time.Time) {
	t.Helper()
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `
		UPDATE herald.routes SET
			status = $3::text,
			updated_at = $4::timestamptz,
			next_attempt_at = CASE WHEN $3 IN ('pending', 'claimed', 'failed') THEN $4 END,
			published_at = CASE WHEN $3 = 'published' THEN $4 END,
			dead_lettered_at = CASE WHEN $3 = 'dead_letter' THEN $4 END,
			skipped_at = CASE WHEN $3 = 'skipped' THEN $4 END,
			canceled_at = CASE WHEN $3 = 'canceled' THEN $4 END
		WHERE notification_id = $1 AND route_id = $2`, id, routeID, status, changed)
	require.NoError(t, err)
	if status == "dead_letter" {
		_, err = b.pool.Exec(ctx, `
			INSERT INTO herald.dead_letters (notification_id, route_id, channel, recipient_ref,
				final_attempt_count, max_attempts, failure_classification, failure_message, created_at)
			VALUES ($1, $2, 'email', 'user:u1', 1, 5, 'permanent', '550 no such user', $3)`, id, routeID, changed)
		require.NoError(t, err)
	}
}

// remaining is the names of the notifications still stored, sorted.
func (b *testBundle) remaining(t *testing.T) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT notification_id FROM herald.records`)
	require.NoError(t, err)
	var names []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		names = append(names, name(t, id))
	}
	require.NoError(t, rows.Err())
	slices.Sort(names)
	return names
}

func (b *testBundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM herald."+table).Scan(&n))
	return n
}

const day = 24 * time.Hour

func TestNew_RejectsNegativeSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := maintenance.New(b.pool, &maintenance.Config{DeadLetterRetention: -time.Hour})
	require.ErrorContains(t, err, "DeadLetterRetention")
	_, err = maintenance.New(b.pool, &maintenance.Config{BatchSize: -1})
	require.ErrorContains(t, err, "BatchSize")
}

func requireSQLState(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, code, pgErr.Code, pgErr.Message)
}
