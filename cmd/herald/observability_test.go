package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/metrics/monitoring"
)

// The CLI tests (cli_test.go) learn these commands' subcommands here, so
// that each gets its help and mistyped-flag checks.
func init() {
	subcommands["observability"] = []string{"alerts", "dashboard"}
}

func TestObservabilityCmd_AlertsPrintsRulesOfTheFlags(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := execute(t, nil, "observability", "alerts")
	require.Equal(t, 0, code, stderr)
	want, err := monitoring.Rules(monitoring.DefaultThresholds(), nil)
	require.NoError(t, err)
	require.Equal(t, string(want), stdout)

	out := filepath.Join(t.TempDir(), "herald.yml")
	stdout, stderr, code = execute(t, nil, "observability", "alerts", "-lag", "90s", "-backlog", "7", "-job", "herald-eu",
		"-dead-letters", "3", "-unmatched-receipts", "4", "-malformed", "5", "-output", out)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stdout)
	th := monitoring.Thresholds{Job: "herald-eu", Lag: 90 * time.Second, Backlog: 7, DeadLetters: 3, UnmatchedReceipts: 4, Malformed: 5}
	want, err = monitoring.Rules(th, nil)
	require.NoError(t, err)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	for _, s := range []string{`up{job="herald-eu"} == 0`, "(herald_lag_seconds) > 90", "(herald_backlog_routes) > 7", "[10m])) > 3\n"} {
		require.Contains(t, string(got), s)
	}

	for _, tt := range []struct{ args []string }{
		{[]string{"-lag", "0s"}}, {[]string{"-backlog", "-1"}}, {[]string{"-job", ""}},
		{[]string{"-dead-letters", "-1"}}, {[]string{"extra"}},
	} {
		stdout, stderr, code := execute(t, nil, append([]string{"observability", "alerts"}, tt.args...)...)
		requireUsageError(t, stdout, stderr, code, "")
	}
	_, stderr, code = execute(t, nil, "observability", "alerts", "-output", filepath.Join(t.TempDir(), "no", "such", "dir.yml"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no such file")
}

func TestObservabilityCmd_DashboardPrintsGrafanaJSON(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := execute(t, nil, "observability", "dashboard")
	require.Equal(t, 0, code, stderr)
	var d struct {
		Title  string
		Panels []struct {
			Type    string
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	require.Equal(t, "herald", d.Title)
	graphs := 0
	for _, p := range d.Panels {
		if p.Type != "row" {
			graphs++
			require.NotEmpty(t, p.Targets, p.Title)
		}
	}
	require.Greater(t, graphs, 20)

	out := filepath.Join(t.TempDir(), "herald.json")
	stdout, _, code = execute(t, nil, "observability", "dashboard", "--output", out)
	require.Equal(t, 0, code)
	require.Empty(t, stdout)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	want, err := monitoring.DashboardJSON()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// promServer is a real Prometheus on loopback, scraping one target every
// two seconds (a scrape may take a second on a loaded machine, and a
// failed one is HeraldDown) and evaluating its rules every second, with a
// data directory of its own.
type promServer struct {
	url string
	mu  sync.Mutex
	log bytes.Buffer
	// fired holds the alerts waitFiring saw firing.
	fired map[string]bool
}

func (p *promServer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func startPrometheus(t *testing.T, target string, rules []byte) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus not found (%v): .ci/run installs it with Debian's prometheus package (apt-get install prometheus)", err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "herald.yml"), rules, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(fmt.Sprintf(`
global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 1s}
rule_files: [herald.yml]
scrape_configs:
  - job_name: herald
    static_configs: [{targets: [%q]}]
`, target)), 0o644))
	addr := freeAddr(t)
	p := &promServer{url: "http://" + addr, fired: map[string]bool{}}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = p, p
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("prometheus log:\n%s", p.log.String())
			p.mu.Unlock()
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "prometheus ready")
	return p
}

// api GETs a Prometheus API path and decodes its data into v.
func (p *promServer) api(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(p.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, path)
	require.NoError(t, json.Unmarshal(body.Data, v))
}

// has reports whether the instant query q returns a series.
func (p *promServer) has(t *testing.T, q string) bool {
	var data struct{ Result []json.RawMessage }
	p.api(t, "/api/v1/query?query="+url.QueryEscape(q), &data)
	return len(data.Result) > 0
}

type promAlert struct {
	Labels      map[string]string
	Annotations map[string]string
	State       string
}

// alerts returns the alerts pending or firing.
func (p *promServer) alerts(t *testing.T) []promAlert {
	var data struct{ Alerts []promAlert }
	p.api(t, "/api/v1/alerts", &data)
	return data.Alerts
}

// waitFiring waits until alert fires with the given labels among its
// own, and returns it.
func (p *promServer) waitFiring(t *testing.T, alert string, labels map[string]string) promAlert {
	t.Helper()
	var found promAlert
	require.Eventually(t, func() bool {
		for _, a := range p.alerts(t) {
			if a.Labels["alertname"] != alert || a.State != "firing" {
				continue
			}
			match := true
			for k, v := range labels {
				match = match && a.Labels[k] == v
			}
			if match {
				found = a
				p.fired[alert] = true
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "%s %v never fired; alerts: %+v", alert, labels, p.alerts(t))
	return found
}

// evaluations waits until the rule group has been evaluated n times
// after now.
func (p *promServer) evaluations(t *testing.T, n int) {
	t.Helper()
	last := time.Now()
	for range n {
		require.Eventually(t, func() bool {
			var data struct {
				Groups []struct{ LastEvaluation time.Time }
			}
			p.api(t, "/api/v1/rules", &data)
			if len(data.Groups) == 1 && data.Groups[0].LastEvaluation.After(last) {
				last = data.Groups[0].LastEvaluation
				return true
			}
			return false
		}, 10*time.Second, 50*time.Millisecond)
	}
}

// switchable is a loopback HTTP server whose answer the test changes:
// 200 with a message id (an SMS provider's acceptance), 500, or holding
// every request until the test ends (a provider that hangs).
type switchable struct {
	*httptest.Server
	mode    atomic.Value // "ok", "fail" or "hang"
	n       atomic.Int64
	release chan struct{}
	once    sync.Once
}

func newSwitchable(t *testing.T) *switchable {
	s := &switchable{release: make(chan struct{})}
	s.mode.Store("ok")
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.n.Add(1)
		switch s.mode.Load() {
		case "fail":
			w.WriteHeader(http.StatusInternalServerError)
			return
		case "hang":
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("msg-%d", n)})
	}))
	t.Cleanup(s.Close)
	t.Cleanup(s.Release) // before Close, which waits for the held requests
	return s
}

// Release answers the held requests, and every later one.
func (s *switchable) Release() { s.once.Do(func() { close(s.release) }) }

// herald's alert rules, as shipped but for `for:` (0s here, so the test
// does not wait out production's patience; every expression is the one
// `herald observability alerts` prints), evaluated by a real Prometheus
// scraping a real `herald serve`: none fires while it delivers; then each
// fires when serve is made to misbehave as production would.
func TestObservability_AlertsFireOnAMisbehavingServe(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	// sms/flaky, an SMS provider whose receipts come back within a second
	// or never; the webhook channel's own endpoint takes one delivery at
	// a time. Its circuit counts whole two-second buckets after the
	// provider is applied, so the healthy phase's two deliveries may count
	// or not: at 4 attempts and 60% the first dead letter (2 failures with
	// 0-2 deliveries) never opens it, the second (4 failures with 0-2)
	// always does.
	flaky, hook := newSwitchable(t), newSwitchable(t)
	providers := writeProviders(t, fmt.Sprintf(`
providers:
  - name: sms/flaky
    driver: sms-http
    sms_http: {url: %q, api_key: {env: FLAKY_KEY}}
    circuit: {failure_ratio: 0.6, min_attempts: 4, cooldown: 10m}
    receipts: {token: {env: FLAKY_RECEIPTS}, window: 1s}
rules:
  sms:
    - name: all
      providers: [sms/flaky]
`, flaky.URL+"/send"))
	env := map[string]string{"DATABASE_URL": dbURL, "USER": "tester"}
	_, stderr, code := execute(t, env, "providers", "apply", "-f", providers)
	require.Equal(t, 0, code, stderr)

	metricsAddr, receiptsAddr := freeAddr(t), freeAddr(t)
	for k, v := range map[string]string{
		"HERALD_METRICS_ADDR":                   metricsAddr,
		"HERALD_RECEIPTS_LISTEN":                receiptsAddr,
		"HERALD_RECEIPTS_POLL_INTERVAL":         "100ms",
		"HERALD_NO_MAINTENANCE":                 "true",
		"HERALD_CALLBACKS_DISABLED":             "true",
		"HERALD_DISPATCH_POLL_INTERVAL":         "50ms",
		"HERALD_DISPATCH_LOCK_TIMEOUT":          "100ms",
		"HERALD_DISPATCH_STALL_TIMEOUT":         "2s",
		"HERALD_INTAKE_POLL_INTERVAL":           "50ms",
		"HERALD_CHANNELS_SMS_DRIVER":            "discard",
		"HERALD_CHANNELS_SMS_MAX_ATTEMPTS":      "2",
		"HERALD_CHANNELS_SMS_BACKOFF_BASE":      "10ms",
		"HERALD_CHANNELS_SMS_BACKOFF_CAP":       "20ms",
		"HERALD_CHANNELS_WEBHOOK_DRIVER":        "webhook",
		"HERALD_CHANNELS_WEBHOOK_ALLOW_PRIVATE": "true",
		"HERALD_CHANNELS_WEBHOOK_SECRETS_ENV":   "WEBHOOK_SECRET",
		"HERALD_CHANNELS_WEBHOOK_CONCURRENCY":   "1",
		"HERALD_CHANNELS_WEBHOOK_TIMEOUT":       "60s",
		"WEBHOOK_SECRET":                        serveTestSecret,
		"FLAKY_KEY":                             "k",
		"FLAKY_RECEIPTS":                        "r3ceipts",
	} {
		env[k] = v
	}
	m, _, errb := testMain(env)
	sctx, stopServe := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(sctx, []string{"serve", "-log-format", "json"}); m.Close() }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			flaky.Release()
			hook.Release()
			stopServe()
			require.NoError(t, <-done, "stderr: %s", errb)
		}
	}
	t.Cleanup(stop)

	th := monitoring.DefaultThresholds()
	th.Lag, th.Backlog, th.DeadLetters, th.UnmatchedReceipts, th.Malformed = 3*time.Second, 3, 0, 0, 0
	noWait := time.Duration(0)
	rules, err := monitoring.Rules(th, &monitoring.RulesOpts{For: &noWait})
	require.NoError(t, err)
	prom := startPrometheus(t, metricsAddr, rules)

	n := 0
	submit := func(body string) {
		t.Helper()
		_, err := pool.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ($1)`, body)
		require.NoError(t, err)
	}
	sms := func() {
		n++
		submit(fmt.Sprintf(`{"notification_type":"otp.sent","producer":"shop","idempotency_key":"s%d","channels":["sms"],
			"audience":{"sms":["+254712345678"]},"content":{"sms":{"body":"Your code is 1234"}}}`, n))
	}
	webhook := func() {
		n++
		submit(fmt.Sprintf(`{"notification_type":"order.shipped","producer":"shop","idempotency_key":"w%d","channels":["webhook"],
			"audience":{"webhook":[%q]},"content":{"webhook":{"order":9}}}`, n, hook.URL+"/hook"))
	}
	malformed := func() { submit(`{"notification_type":"order.shipped","producer":"shop"}`) }
	receipt := func(id string) {
		t.Helper()
		resp, err := http.Post(fmt.Sprintf("http://%s/receipts/sms/flaky?token=r3ceipts", receiptsAddr),
			"application/json", strings.NewReader(fmt.Sprintf(`{"id":%q,"status":"DELIVRD"}`, id)))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	published := func(want int) {
		t.Helper()
		require.Eventually(t, func() bool {
			var got int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM herald.routes WHERE status = 'published'`).Scan(&got))
			return got == want
		}, 30*time.Second, 20*time.Millisecond, "stderr: %s", errb)
	}

	// Healthy: deliveries succeed; Prometheus has seen them, and every
	// rule, evaluated over them, stays silent.
	sms()
	sms()
	webhook()
	published(3)
	require.Eventually(t, func() bool {
		return prom.has(t, `sum(herald_intents_total{result="accepted"}) == 3`) &&
			prom.has(t, `sum(herald_route_attempts_total{outcome="delivered"}) == 3`) &&
			prom.has(t, `herald_ready == 1`) && prom.has(t, `herald_provider_circuit_open{provider="sms/flaky"} == 0`)
	}, 30*time.Second, 100*time.Millisecond)
	prom.evaluations(t, 3)
	require.Empty(t, prom.alerts(t), "no alert while herald delivers")

	// The SMS provider answers 500: routes fail, are retried, run out of
	// attempts and are dead-lettered; its circuit opens. Prometheus has
	// just started, so the counting rules need the counter to move while
	// it watches (see TestRules_CountTheEventThatCreatesASeries): the
	// test makes each counter appear, then move.
	flaky.mode.Store("fail")
	sms()
	require.Eventually(t, func() bool { return prom.has(t, `herald_dead_letters_total{channel="sms"}`) }, 30*time.Second, 100*time.Millisecond)
	sms()
	malformed()
	receipt("never-sent-1")
	// The webhook endpoint hangs: one delivery in flight, the rest wait
	// and grow late.
	hook.mode.Store("hang")
	for range 5 {
		webhook()
	}
	require.Eventually(t, func() bool {
		return prom.has(t, `herald_intents_total{result="malformed"}`) && prom.has(t, `herald_receipts_total{result="unmatched"}`)
	}, 30*time.Second, 100*time.Millisecond)
	malformed()
	receipt("never-sent-2")

	for _, want := range []struct {
		alert  string
		labels map[string]string
	}{
		{"HeraldDeadLetters", map[string]string{"channel": "sms", "severity": "warning"}},
		{"HeraldProviderCircuitOpen", map[string]string{"provider": "sms/flaky"}},
		{"HeraldLag", map[string]string{"channel": "webhook", "severity": "critical"}},
		{"HeraldBacklog", map[string]string{"channel": "webhook"}},
		{"HeraldIntakeMalformed", nil},
		{"HeraldReceiptsUnmatched", map[string]string{"provider": "sms/flaky"}},
	} {
		a := prom.waitFiring(t, want.alert, want.labels)
		require.Regexp(t, "First: .*`(herald|curl) ", a.Annotations["description"], want.alert)
		require.NotContains(t, a.Annotations["description"], "{{", "templates expanded")
	}
	a := prom.waitFiring(t, "HeraldDeadLetters", map[string]string{"channel": "sms"})
	require.Contains(t, a.Annotations["description"], "`herald dead-letters list -channel sms -since 1h`")

	// An operator's lock on routes stops every claim: serve is up but not
	// ready, and says so; Prometheus still scrapes it.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "LOCK TABLE herald.routes IN EXCLUSIVE MODE") // a lock, not a query: no sqlc
	require.NoError(t, err)
	a = prom.waitFiring(t, "HeraldNotReady", map[string]string{"instance": metricsAddr})
	require.Contains(t, a.Annotations["description"], "curl -s http://"+metricsAddr+"/readyz")
	require.NoError(t, tx.Rollback(ctx))

	// serve stops: Prometheus cannot scrape it.
	stop()
	prom.waitFiring(t, "HeraldDown", map[string]string{"instance": metricsAddr, "job": "herald"})

	for _, a := range monitoring.Alerts(th) {
		require.True(t, prom.fired[a.Name], "%s was shown firing", a.Name)
	}
}
