package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store"
)

const serveTestSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// countingSink is a loopback webhook receiver that counts deliveries per
// webhook-id (stable across a route's retries). Given holdAfter, it holds
// every request after the first holdAfter until release, so deliveries are
// certainly in flight while it holds them.
type countingSink struct {
	*httptest.Server
	mu    sync.Mutex
	byID  map[string]int
	total int

	arrived     atomic.Int64
	held        chan struct{} // closed when the first request is held
	holdOnce    sync.Once
	release     chan struct{}
	releaseOnce sync.Once
}

func newCountingSink(t *testing.T, holdAfter int) *countingSink {
	t.Helper()
	s := &countingSink{byID: map[string]int{}, held: make(chan struct{}), release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if holdAfter > 0 && s.arrived.Add(1) > int64(holdAfter) {
			s.holdOnce.Do(func() { close(s.held) })
			<-s.release
		}
		s.mu.Lock()
		s.byID[r.Header.Get("webhook-id")]++
		s.total++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(s.Release) // before Close, which waits for the held requests
	return s
}

// Release lets the held requests, and every later one, through.
func (s *countingSink) Release() {
	s.releaseOnce.Do(func() { close(s.release) })
}

// counts returns total deliveries, distinct routes and duplicates.
func (s *countingSink) counts() (total, distinct, dups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.byID {
		dups += n - 1
	}
	return s.total, len(s.byID), dups
}

// insertWebhookRoutes stores n notifications with one webhook route each,
// in batches, through the client's own insert statement.
func insertWebhookRoutes(t *testing.T, pool *pgxpool.Pool, n int, url string) {
	t.Helper()
	q := store.New()
	now := time.Now()
	for start := 0; start < n; start += 1000 {
		var p store.RecordInsertManyParams
		p.IdempotencyWindowSeconds = 3600
		for i := start; i < min(n, start+1000); i++ {
			nid := fmt.Sprintf("ntf_serve_%06d", i)
			p.NotificationIds = append(p.NotificationIds, nid)
			p.NotificationTypes = append(p.NotificationTypes, "load.test")
			p.Producers = append(p.Producers, "serve-test")
			p.AudienceKinds = append(p.AudienceKinds, "addresses")
			p.RecipientUserIds = append(p.RecipientUserIds, []byte(`[]`))
			p.PayloadJsons = append(p.PayloadJsons, fmt.Sprintf(`{"webhook":{"n":%d}}`, i))
			p.IdempotencyKeys = append(p.IdempotencyKeys, nid)
			p.RequestFingerprints = append(p.RequestFingerprints, "fp")
			p.RequestIds = append(p.RequestIds, "")
			p.TraceIds = append(p.TraceIds, "")
			p.OccurredAts = append(p.OccurredAts, now)
			p.ChannelLists = append(p.ChannelLists, "webhook")
			p.Priorities = append(p.Priorities, int16(i%2))
			p.SendAts = append(p.SendAts, time.Time{})
			p.ExpiresAts = append(p.ExpiresAts, time.Time{})
			p.CallbackUrls = append(p.CallbackUrls, "")
			p.RouteNotificationIds = append(p.RouteNotificationIds, nid)
			p.RouteIds = append(p.RouteIds, "webhook:0")
			p.RouteChannels = append(p.RouteChannels, "webhook")
			p.RouteRecipientRefs = append(p.RouteRecipientRefs, url)
			p.RouteMaxAttempts = append(p.RouteMaxAttempts, 0)
			p.RoutePriorities = append(p.RoutePriorities, int16(i%2))
			p.RouteSendAts = append(p.RouteSendAts, time.Time{})
			p.RouteExpiresAts = append(p.RouteExpiresAts, time.Time{})
			p.RouteSmsEncodings = append(p.RouteSmsEncodings, "")
			p.RouteSmsSegments = append(p.RouteSmsSegments, 0)
		}
		_, err := q.RecordInsertMany(context.Background(), pool, p)
		require.NoError(t, err)
	}
}

// routeCounts counts routes by state. Test-only SQL: no query file has a
// reason to carry it.
func routeCounts(t *testing.T, pool *pgxpool.Pool) (published, claimed, nonTerminal, all int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE status = 'published'),
		       count(*) FILTER (WHERE status = 'claimed'),
		       count(*) FILTER (WHERE status IN ('pending', 'claimed', 'failed')),
		       count(*)
		FROM herald.routes`).Scan(&published, &claimed, &nonTerminal, &all)
	require.NoError(t, err)
	return
}

// buildHerald builds the herald binary into the test's temporary directory.
func buildHerald(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "herald")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// serveProc is one `herald serve` process.
type serveProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

func startServe(t *testing.T, bin, dbURL, sinkURL string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, "serve", "-log-format", "json", "-log-level", "warn")
	cmd.Env = []string{
		"DATABASE_URL=" + dbURL,
		"HERALD_CHANNELS_WEBHOOK_DRIVER=webhook",
		"HERALD_CHANNELS_WEBHOOK_ALLOW_PRIVATE=true",
		"HERALD_CHANNELS_WEBHOOK_SECRETS_ENV=WEBHOOK_SECRET",
		"WEBHOOK_SECRET=" + serveTestSecret,
		"HERALD_CHANNELS_WEBHOOK_CONCURRENCY=32",
		"HERALD_CHANNELS_WEBHOOK_TIMEOUT=2s",
		"HERALD_CHANNELS_WEBHOOK_LEASE=3s",
		"HERALD_DISPATCH_POLL_INTERVAL=100ms",
		"HERALD_INTAKE_POLL_INTERVAL=100ms",
	}
	p := &serveProc{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("serve pid %d stderr:\n%s", cmd.Process.Pid, p.stderr.String())
		}
	})
	return p
}

// stop sends SIGTERM and requires a clean exit with status 0.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.done:
		p.done <- err
		require.NoError(t, err, "serve must exit 0 on SIGTERM; stderr:\n%s", p.stderr.String())
	case <-time.After(30 * time.Second):
		require.FailNow(t, "serve did not stop within 30s of SIGTERM")
	}
}

func waitAllTerminal(t *testing.T, pool *pgxpool.Pool, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, _, nonTerminal, _ := routeCounts(t, pool)
		return nonTerminal == 0
	}, within, 50*time.Millisecond)
}

func TestServeCmd_TwoProcessesPublishOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and delivers 10,000 routes")
	}
	const n = 10000
	bin := buildHerald(t)
	dbURL := pgtemp.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	sink := newCountingSink(t, 0)

	a := startServe(t, bin, dbURL, sink.URL)
	b := startServe(t, bin, dbURL, sink.URL)
	insertWebhookRoutes(t, pool, n, sink.URL)
	start := time.Now()
	waitAllTerminal(t, pool, 2*time.Minute)
	elapsed := time.Since(start)

	published, _, _, all := routeCounts(t, pool)
	require.Equal(t, n, all)
	require.Equal(t, n, published)
	total, distinct, dups := sink.counts()
	t.Logf("two serve processes: %d routes published in %s (%.0f/s); sink saw %d deliveries, %d distinct, %d duplicates",
		n, elapsed.Round(time.Millisecond), n/elapsed.Seconds(), total, distinct, dups)
	require.Equal(t, n, distinct)
	require.Zero(t, dups, "every route is delivered exactly once")
	a.stop(t)
	b.stop(t)
}

func TestServeCmd_KilledMidRunLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and kills a serve process")
	}
	const n = 3000
	bin := buildHerald(t)
	dbURL := pgtemp.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	sink := newCountingSink(t, n/3) // then holds deliveries, to kill mid-run

	insertWebhookRoutes(t, pool, n, sink.URL)
	victim := startServe(t, bin, dbURL, sink.URL)
	select {
	case <-sink.held:
	case <-time.After(time.Minute):
		t.Fatal("no delivery reached the sink after the first n/3")
	}
	require.Eventually(t, func() bool { total, _, _ := sink.counts(); return total >= n/3 }, time.Minute, time.Millisecond)
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	<-victim.done
	victim.done <- nil
	sink.Release()
	atKill, _, _ := sink.counts()
	// Routes still leased by the dead process: claimed, delivered or not,
	// with no outcome written. Only these may be delivered twice.
	_, inFlight, _, _ := routeCounts(t, pool)

	restarted := startServe(t, bin, dbURL, sink.URL)
	waitAllTerminal(t, pool, 2*time.Minute)
	published, _, _, all := routeCounts(t, pool)
	total, distinct, dups := sink.counts()
	t.Logf("SIGKILL after %d deliveries: %d routes leased (in flight) at the kill; after restart: %d/%d published, sink saw %d deliveries, %d distinct, %d duplicates",
		atKill, inFlight, published, all, total, distinct, dups)
	require.Equal(t, n, published, "none lost")
	require.Equal(t, n, distinct)
	require.LessOrEqual(t, dups, inFlight, "only deliveries in flight at the kill may repeat")
	restarted.stop(t)
}

func TestServeCmd_DrainsSQLIntake(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	sink := newCountingSink(t, 0)

	env := map[string]string{
		"DATABASE_URL":                          dbURL,
		"HERALD_CHANNELS_WEBHOOK_DRIVER":        "webhook",
		"HERALD_CHANNELS_WEBHOOK_SECRETS_ENV":   "WEBHOOK_SECRET",
		"WEBHOOK_SECRET":                        serveTestSecret,
		"HERALD_CHANNELS_WEBHOOK_ALLOW_PRIVATE": "true",
	}
	m, _, errb := testMain(env)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "-log-format", "json"}); m.Close() }()

	// The SQL door, as a service in another language would use it.
	body := fmt.Sprintf(`{"notification_type":"order.shipped","producer":"shop","idempotency_key":"k1",
		"channels":["webhook"],"audience":{"webhook":[%q]},"content":{"webhook":{"order":9}}}`, sink.URL+"/hook")
	_, err = pool.Exec(context.Background(), `INSERT INTO herald.intake (body) VALUES ($1)`, body)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		published, _, _, all := routeCounts(t, pool)
		return all == 1 && published == 1
	}, 15*time.Second, 10*time.Millisecond, "stderr: %s", errb)
	total, _, _ := sink.counts()
	require.Equal(t, 1, total)

	cancel()
	require.NoError(t, <-done)
}

func TestServeCmd_RefusesBadConfigNamingField(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "pigeon"}, "serve")
	require.ErrorContains(t, err, `channels.sms.driver: "pigeon"`)

	cfg := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("channels:\n  email:\n    driver: smtp\n    smtp: {host: localhost}\n"), 0o600))
	_, _, err = run(t, nil, "serve", "-config", cfg)
	require.ErrorContains(t, err, "channels.email.smtp.from: required")
}

func TestServeCmd_PoolPricesOutSeqScans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtemp.NewDatabase(t)
	for _, tc := range []struct{ url, want string }{
		{dbURL, "off"},
		{dbURL + "&enable_seqscan=on", "on"},
	} {
		m, _, _ := testMain(nil)
		pool, err := m.servePool(ctx, &globalFlags{DatabaseURL: tc.url}, 2)
		require.NoError(t, err)
		var got string
		require.NoError(t, pool.QueryRow(ctx, "SHOW enable_seqscan").Scan(&got))
		require.Equal(t, tc.want, got)
		m.Close()
	}
}

// lockedBuffer is a bytes.Buffer safe to read while serve writes its logs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServeCmd_WarnsOfUndeliveredChannels(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	client, err := herald.NewClient(pool, nil)
	require.NoError(t, err)
	_, err = client.Submit(context.Background(), &herald.Intent{
		NotificationType: "order.shipped", Producer: "shop", IdempotencyKey: "k1",
		Channels: []string{"sms"}, Audience: herald.Audience{SMS: []string{"+33612345678"}},
		Content: herald.Content{SMS: &herald.SMSContent{Body: "Your order shipped"}},
	})
	require.NoError(t, err)

	// This serve delivers webhooks only.
	m, _, _ := testMain(map[string]string{
		"DATABASE_URL":                   dbURL,
		"HERALD_CHANNELS_WEBHOOK_DRIVER": "discard",
	})
	logs := &lockedBuffer{}
	m.Stderr = logs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "-log-format", "json", "-no-maintenance"}); m.Close() }()
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "routes are waiting for a channel this process does not deliver")
	}, 15*time.Second, 10*time.Millisecond, "logs: %s", logs)
	require.Contains(t, logs.String(), `"channel":"sms"`)
	require.Contains(t, logs.String(), `"routes":1`)
	require.NotContains(t, logs.String(), `"channel":"webhook","routes"`, "a configured channel is not warned about")

	cancel()
	require.NoError(t, <-done)
}
