package herald_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/vet"
	"github.com/heraldhq/herald/internal/wake"
)

// Every door reads text as the blocklist's fold does, and a door that
// bypasses the client's checks (an INSERT by the producer's own login)
// meets the engine's. The SQL here is the test's own: an operator's
// rules and a producer writing rows by hand.

// doorTricks each hide a word refused below from a byte-wise match.
var doorTricks = []struct{ name, body string }{
	{"ZeroWidthSpace", "buy sp\u200Bam now"},
	{"SoftHyphen", "buy sp\u00ADam now"},
	{"CyrillicHomoglyphs", "an \u0430\u0440\u0440\u04CF\u0435 a day"}, // аррӏе
	{"Fullwidth", "buy \uFF53\uFF50\uFF41\uFF4D now"},
	{"CombiningMarks", "buy s\u0308pa\u0301m now"},
	{"NoBreakSpaceInsideAPhrase", "get free\u00A0money"},
}

func doorRules(t *testing.T, b *accessBundle) {
	t.Helper()
	_, err := b.asOp.Exec(context.Background(), `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES
		('word', 'spam', 'refuse'), ('word', 'apple', 'refuse'), ('word', 'free money', 'refuse')`)
	require.NoError(t, err)
}

func TestDoors_GoClientRefusesEachTrick(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	doorRules(t, b)
	ctx := context.Background()
	for _, tt := range doorTricks {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.clientA.Submit(ctx, smsIntent(b.nameA, "s-"+tt.name, tt.body))
			requireFieldError(t, err, "content.sms.body", herald.CodeContentBlocked)
			tx, err := b.asA.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = b.clientA.SubmitTx(ctx, tx, smsIntent(b.nameA, "tx-"+tt.name, tt.body))
			requireFieldError(t, err, "content.sms.body", herald.CodeContentBlocked)
		})
	}
	require.Zero(t, countAs(t, b.asA, `SELECT count(*) FROM herald.records`))
}

func TestDoors_SQLIntakeRefusesEachTrick(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	doorRules(t, b)
	ctx := context.Background()
	for _, tt := range doorTricks {
		body := `{"notification_type":"promo","producer":"` + b.nameA + `","idempotency_key":"` + tt.name + `",
			"channels":["sms"],"audience":{"sms":["+14155550123"]},"content":{"sms":{"body":"` + tt.body + `"}}}`
		_, err := b.asA.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ($1)`, body)
		require.NoError(t, err)
	}
	w, err := sqldoor.NewWorker(b.admin, &sqldoor.WorkerConfig{ContentRulesMaxAge: -1})
	require.NoError(t, err)
	accepted, malformed, err := w.DrainOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, accepted)
	require.Equal(t, len(doorTricks), malformed)
	require.Equal(t, len(doorTricks), countAs(t, b.asA, `SELECT count(*) FROM herald.malformed_intents WHERE failure_code = 'content_blocked'`))
}

// counter is a webhook receiver on loopback that counts what reaches it.
func counter(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// runEngine runs an engine on admin with a real webhook channel.
func runEngine(t *testing.T, admin *pgxpool.Pool) {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	d, err := webhook.New(webhook.Config{Secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString(key)}, AllowPrivate: true})
	require.NoError(t, err)
	e, err := engine.New(admin, &engine.Config{
		Logger: slog.New(slog.DiscardHandler),
		Dispatch: dispatch.Config{
			Channels:     map[string]dispatch.ChannelConfig{"webhook": {Deliverer: d}},
			PollInterval: 20 * time.Millisecond,
		},
		Callbacks: engine.Callbacks{Disabled: true},
		Vet:       vet.Config{PollInterval: 20 * time.Millisecond, ContentRulesMaxAge: -1},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// insertByHand stores a webhook notification as the producer's login can,
// in tx, past every check of the Go client (what a changed client or a
// psql session does), and returns its id.
func insertByHand(t *testing.T, tx pgx.Tx, producer, key, url, text string) string {
	t.Helper()
	ctx := context.Background()
	nid := uuid.Must(uuid.NewV7()).String()
	_, err := tx.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
		payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at, channels)
		VALUES ($1, 'promo', $2, 'addresses', json_build_object('webhook', json_build_object('text', $4::text))::text, $3, 'fp',
			now(), now(), now(), now() + interval '1 day', '{webhook}')`, nid, producer, key, text)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
		max_attempts, next_attempt_at, created_at, updated_at, lane)
		VALUES ($1, 'r1', 'webhook', $2, 'pending', 3, now(), now(), now(), '!vet')`, nid, url)
	require.NoError(t, err)
	return nid
}

func TestDoors_RefusedHandInsertedRouteNeverSent(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	doorRules(t, b)
	ctx := context.Background()
	srv, delivered := counter(t)

	// In one transaction of the producer's login, as SubmitTx's caller
	// holds it: the client's own submit of a clean intent, and rows
	// written by hand, each word hidden by a trick (and one in plain).
	tx, err := b.asA.Begin(ctx)
	require.NoError(t, err)
	r, err := b.clientA.SubmitTx(ctx, tx, &herald.Intent{
		NotificationType: "promo", Producer: b.nameA, IdempotencyKey: "client-clean",
		Audience: herald.Audience{Webhook: []string{srv.URL + "/hook"}}, Channels: []string{"webhook"},
		Content: herald.Content{Webhook: []byte(`{"text":"your order shipped"}`)},
	})
	require.NoError(t, err)
	refused := []string{insertByHand(t, tx, b.nameA, "plain", srv.URL+"/hook", "buy spam now")}
	for _, tt := range doorTricks {
		refused = append(refused, insertByHand(t, tx, b.nameA, "hand-"+tt.name, srv.URL+"/hook", tt.body))
	}
	clean := insertByHand(t, tx, b.nameA, "hand-clean", srv.URL+"/hook", "see you soon")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, len(refused)+2, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE lane = '!vet'`),
		"the database marked every row the producer's login wrote")

	runEngine(t, b.admin)
	require.Eventually(t, func() bool {
		return countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE status = 'published' AND notification_id = ANY($1)`,
			[]string{r.NotificationID, clean}) == 2 &&
			countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE status = 'dead_letter'`) == len(refused)
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, int32(2), delivered.Load(), "only the two clean ones reached the receiver")
	require.Equal(t, len(refused), countAs(t, b.asA, `SELECT count(*) FROM herald.dead_letters
		WHERE failure_classification = 'content_blocked' AND recovery_hint <> '' AND notification_id = ANY($1)`, refused))
	// Nothing more arrives later.
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, int32(2), delivered.Load())
}

func TestDoors_EngineLoginSkipsVetter(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	owner, err := herald.NewClient(b.admin, nil)
	require.NoError(t, err)
	t.Cleanup(owner.Close)
	r := submit(t, owner, "shop", "owner")
	mine := submit(t, b.clientA, b.nameA, "mine")
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND lane = ''`, r.NotificationID))
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND lane = '!vet'`, mine.NotificationID))
}

func TestDoors_AuditTimeIsDatabaseClock(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	for _, at := range []string{"1999-01-01 00:00:00+00", "infinity", "2999-01-01 00:00:00+00"} {
		t.Run(at, func(t *testing.T) {
			r := submit(t, b.clientA, b.nameA, "audit-"+at)
			_, err := b.asA.Exec(ctx, `SELECT * FROM herald.notification_cancel($1, 'svc', 'forged time', $2::timestamptz)`, r.NotificationID, at)
			require.NoError(t, err)
			require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.audit_log
				WHERE action = 'cancel' AND filter ->> 'notification_id' = $1 AND at BETWEEN now() - interval '1 minute' AND now() + interval '1 minute'`,
				r.NotificationID), "the audit row is dated now")
			require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND status = 'canceled'
				AND canceled_at BETWEEN now() - interval '1 minute' AND now() + interval '1 minute'
				AND finished_at BETWEEN now() - interval '1 minute' AND now() + interval '1 minute'`, r.NotificationID),
				"a producer's cancel happens now")
		})
	}
	// A campaign's cancel, the same.
	_, err := b.admin.Exec(ctx, `INSERT INTO herald.campaigns (producer, campaign, created_at) VALUES ($1, 'spring', now())`, b.nameA)
	require.NoError(t, err)
	_, err = b.asA.Exec(ctx, `SELECT * FROM herald.campaign_cancel_batch($1, 'spring', 'svc', 'forged', 100, '1999-01-01')`, b.nameA)
	require.NoError(t, err)
	require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.audit_log WHERE action = 'campaign_cancel'
		AND at > now() - interval '1 minute'`))
	require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.campaigns WHERE campaign = 'spring'
		AND cancel_requested_at > now() - interval '1 minute'`))
	// An operator cannot date one either.
	r := submit(t, b.clientA, b.nameA, "audit-op")
	_, err = b.asOp.Exec(ctx, `SELECT * FROM herald.notification_cancel($1, 'ops', 'forged', '1999-01-01')`, r.NotificationID)
	require.NoError(t, err)
	require.Zero(t, countAs(t, b.asOp, `SELECT count(*) FROM herald.audit_log WHERE at < now() - interval '1 minute'`))
}

func TestDoors_HintsWakeVetterAndDispatchers(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	// Which topic each login's submit notifies.
	conn, err := b.admin.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	// The topics' names end in the database's secret; next names them by
	// their base.
	base := map[string]string{}
	for _, topic := range []string{wake.VetTopic, wake.RoutesTopic} {
		name, err := store.New().NotifyTopic(ctx, conn, topic)
		require.NoError(t, err)
		base[name] = topic
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{name}.Sanitize())
		require.NoError(t, err)
	}
	next := func() string {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		require.NoError(t, err)
		return base[n.Channel]
	}
	owner, err := herald.NewClient(b.admin, &herald.Config{NotifyDebounce: -1})
	require.NoError(t, err)
	t.Cleanup(owner.Close)
	submit(t, owner, "shop", "owner")
	require.Equal(t, "herald_routes", next(), "the engine's own routes are due at once")
	prod, err := herald.NewClient(b.asA, &herald.Config{NotifyDebounce: -1})
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	mine := submit(t, prod, b.nameA, "mine")
	require.Equal(t, "herald_vet", next(), "a producer's wait for the vetter")

	// A vetter that would not poll for an hour moves them at once, and
	// wakes the dispatchers.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- vet.New(b.admin, &vet.Config{PollInterval: time.Hour}).Run(rctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	require.Equal(t, "herald_routes", next())
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND lane = ''`, mine.NotificationID))
	tx, err := b.asA.Begin(ctx)
	require.NoError(t, err)
	r, err := prod.SubmitTx(ctx, tx, smsIntent(b.nameA, "tx", "hello"))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Eventually(t, func() bool {
		return countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND lane = ''`, r.NotificationID) == 1
	}, 5*time.Second, 10*time.Millisecond, "SubmitTx's hint, at commit, woke the vetter")
}
