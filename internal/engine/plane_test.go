package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// smsProviderServer is a loopback SMS provider answering status to every
// message and counting them.
func smsProviderServer(t *testing.T, status *atomic.Int32, got *atomic.Int64) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		st := int(status.Load())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		if st < 300 {
			_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprint(got.Load())})
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (b *testBundle) applyRouting(t *testing.T, file string) {
	t.Helper()
	f, err := routing.Parse([]byte(file))
	require.NoError(t, err)
	_, err = routing.Apply(context.Background(), b.pool, f, "tester", nil)
	require.NoError(t, err)
}

// submitSMS puts one SMS intent to phone on the SQL door.
func (b *testBundle) submitSMS(t *testing.T, key, phone string) {
	t.Helper()
	_, err := benchstore.New().IntakeInsertReturning(context.Background(), b.pool, []string{fmt.Sprintf(
		`{"notification_type":"otp.sent","producer":"shop","idempotency_key":%q,"channels":["sms"],
		"audience":{"sms":[%q]},"content":{"sms":{"body":"Your code is 1234"}}}`, key, phone)})
	require.NoError(t, err)
}

// providersOf waits for the SMS route of intent key to be published and
// returns the providers of its attempts.
func (b *testBundle) providersOf(t *testing.T, key string) []string {
	t.Helper()
	var providers []string
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(context.Background(), `
			SELECT r.providers FROM herald.routes r JOIN herald.records rec USING (notification_id)
			WHERE rec.idempotency_key = $1 AND r.status = 'published'`, key).Scan(&providers)
		return err == nil
	}, 15*time.Second, 20*time.Millisecond, "intent %s never published", key)
	return providers
}

func TestPlane_FollowsRuleChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mainStatus, backupStatus atomic.Int32
	mainStatus.Store(http.StatusServiceUnavailable)
	backupStatus.Store(http.StatusOK)
	var mainGot, backupGot atomic.Int64
	mainSrv := smsProviderServer(t, &mainStatus, &mainGot)
	backupSrv := smsProviderServer(t, &backupStatus, &backupGot)
	file := func(first, second string) string {
		return fmt.Sprintf(`
providers:
  - name: sms/main
    driver: sms-http
    sms_http: {url: %q, api_key: {env: MAIN_KEY}}
  - name: sms/backup
    driver: sms-http
    sms_http: {url: %q, api_key: {env: BACKUP_KEY}}
rules:
  sms:
    - name: kenya
      match: {prefixes: ["+254"]}
      strategy: failover
      providers: [%s, %s]
`, mainSrv.URL+"/send", backupSrv.URL+"/send", first, second)
	}
	b.applyRouting(t, file("sms/main", "sms/backup"))

	e, err := New(b.pool, &Config{
		Logger:     discardLogger(),
		GetenvFunc: env(map[string]string{"MAIN_KEY": "k1", "BACKUP_KEY": "k2"}),
		// A webhook channel from the file; sms comes from the database only.
		Dispatch: dispatch.Config{
			Channels:     map[string]dispatch.ChannelConfig{"webhook": {Deliverer: &closingDeliverer{}}},
			PollInterval: 50 * time.Millisecond,
		},
		Intake: &sqldoor.WorkerConfig{PollInterval: 50 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	// main answers 503: the route fails over to backup at once.
	b.submitSMS(t, "k1", "+254712345678")
	require.Equal(t, []string{"sms/main", "sms/backup"}, b.providersOf(t, "k1"))

	// What `herald routing test` says agrees with what delivery did.
	table, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)
	d, err := table.Pick(routing.PickInput{Channel: "sms", Destination: "+254712345678", Priority: "transactional"})
	require.NoError(t, err)
	require.Equal(t, "sms/main", d.Provider)

	// A destination no rule matches is dead-lettered as no_route.
	b.submitSMS(t, "k2", "+447911123456")
	require.Eventually(t, func() bool {
		var class, hint string
		err := b.pool.QueryRow(ctx, `
			SELECT d.failure_classification, d.recovery_hint FROM herald.dead_letters d
			JOIN herald.records rec USING (notification_id) WHERE rec.idempotency_key = 'k2'`).Scan(&class, &hint)
		return err == nil && class == dispatch.ClassNoRoute && hint != ""
	}, 15*time.Second, 20*time.Millisecond)

	// The rule changes while the engine runs: backup first. Within the 5 s
	// the issue allows, new routes go to backup alone.
	changed := time.Now()
	b.applyRouting(t, file("sms/backup", "sms/main"))
	mainBefore := mainGot.Load()
	for i := 0; ; i++ {
		key := fmt.Sprintf("after-%d", i)
		b.submitSMS(t, key, "+254712345678")
		if got := b.providersOf(t, key); len(got) == 1 && got[0] == "sms/backup" {
			break
		}
		require.Less(t, time.Since(changed), 5*time.Second, "the rule change did not take effect within 5s")
		mainBefore = mainGot.Load()
	}
	t.Logf("rule change took effect within %s", time.Since(changed).Round(time.Millisecond))
	require.Equal(t, mainBefore, mainGot.Load(), "main got nothing once backup came first")
}

func TestPlane_PostedReceiptSetsStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var status atomic.Int32
	status.Store(http.StatusOK)
	var got atomic.Int64
	srv := smsProviderServer(t, &status, &got)
	b.applyRouting(t, fmt.Sprintf(`
providers:
  - name: sms/acme
    driver: sms-http
    sms_http: {url: %q, api_key: {env: ACME_KEY}}
    receipts: {token: {env: ACME_RECEIPTS}}
rules:
  sms:
    - name: all
      providers: [sms/acme]
`, srv.URL+"/send"))
	e, err := New(b.pool, &Config{
		Logger:       discardLogger(),
		GetenvFunc:   env(map[string]string{"ACME_KEY": "k", "ACME_RECEIPTS": "r3ceipts"}),
		ReceiptsAddr: "127.0.0.1:0",
		Dispatch: dispatch.Config{
			Channels:     map[string]dispatch.ChannelConfig{"webhook": {Deliverer: &closingDeliverer{}}},
			PollInterval: 50 * time.Millisecond,
		},
		Intake: &sqldoor.WorkerConfig{PollInterval: 50 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	b.submitSMS(t, "r1", "+254712345678")
	require.Equal(t, []string{"sms/acme"}, b.providersOf(t, "r1"))
	var msgID string
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT provider_message_id FROM herald.routes r JOIN herald.records rec USING (notification_id)
		WHERE rec.idempotency_key = 'r1'`).Scan(&msgID))
	require.NotEmpty(t, msgID)

	resp, err := http.Post(fmt.Sprintf("http://%s/receipts/sms/acme?token=r3ceipts", e.ReceiptsAddr()),
		"application/json", strings.NewReader(fmt.Sprintf(`{"id":%q,"status":"DELIVRD"}`, msgID)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool {
		var s *string
		err := b.pool.QueryRow(ctx, `
			SELECT r.delivery_status FROM herald.routes r JOIN herald.records rec USING (notification_id)
			WHERE rec.idempotency_key = 'r1'`).Scan(&s)
		return err == nil && s != nil && *s == "delivered"
	}, 10*time.Second, 20*time.Millisecond, "the matcher set the route's delivery status")
}
