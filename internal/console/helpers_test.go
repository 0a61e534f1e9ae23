package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/console"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// The console's tests run on a cluster of their own whose logins need
// their password over TCP, so that a wrong one is refused (the shared
// test cluster trusts every local connection).
var cluster struct {
	once  sync.Once
	admin string
	stop  func() error
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.stop != nil {
		if err := cluster.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the password cluster:", err)
		}
	}
	os.Exit(code)
}

// Secrets the pages must never show: the providers' API keys (given to
// the engine through its environment) and the logins' passwords.
const (
	flakyKey   = "flaky-key-Zq8vN3"
	steadyKey  = "steady-key-Jm4xW7"
	operatorPW = "operator-pw-Kp2s"
	auditorPW  = "auditor-pw-Rt5u"
	producerPW = "producer-pw-Hy6i"
)

// testBundle is a database of its own on the password cluster, with an
// operator's, an auditor's and a producer's login, and a console on it.
type testBundle struct {
	admin    *pgxpool.Pool
	dbURL    string
	console  *console.Console
	operator string
	auditor  string
	producer string
}

func setup(t testing.TB, tune ...func(*console.Config)) *testBundle {
	t.Helper()
	ctx := context.Background()
	cluster.once.Do(func() {
		var c *pgtemp.Cluster
		c, cluster.stop, cluster.err = pgtemp.StartWithPasswords(ctx)
		if cluster.err == nil {
			cluster.admin = c.URL("postgres")
		}
	})
	require.NoError(t, cluster.err)
	dbURL, drop, err := pgtemp.CreateDatabase(ctx, &pgtemp.DatabaseOpts{ServerURL: cluster.admin, Label: t.Name()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = drop(context.Background()) })
	return bundleOn(t, dbURL, tune...)
}

// bundleOn is setup on a migrated database dbURL (a superuser's URL, on a
// server that asks every other login for its password over TCP).
func bundleOn(t testing.TB, dbURL string, tune ...func(*console.Config)) *testBundle {
	t.Helper()
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	b := &testBundle{admin: admin, dbURL: dbURL}
	b.operator = b.login(t, "op", operatorPW, "herald_operator")
	b.auditor = b.login(t, "aud", auditorPW, "herald_auditor")
	b.producer = b.login(t, "shop", producerPW, "herald_producer")

	// The console connects wherever the URL says, as whoever signs in.
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = nil
	cctx, cancel := context.WithCancel(ctx)
	cfg := &console.Config{Listen: "127.0.0.1:0", DatabaseURL: u.String(), Logger: slog.New(slog.DiscardHandler), LoginBurst: 50}
	for _, f := range tune {
		f(cfg)
	}
	b.console, err = console.New(cctx, cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- b.console.Run(cctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return b
}

// login creates a LOGIN role with password, member of roles, dropped when
// the test ends (logins are the cluster's, not the database's).
func (b *testBundle) login(t testing.TB, prefix, password string, roles ...string) string {
	t.Helper()
	name := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()%1e9)
	// DDL: the rare SQL that has no place in queries/.
	_, err := b.admin.Exec(context.Background(), fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE %s",
		pgx.Identifier{name}.Sanitize(), password, strings.Join(roles, ", ")))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = b.admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	})
	return name
}

// outage is two loopback SMS providers: sms/flaky answers 500 while
// failing is set, sms/steady always 200. Intents to +254 go to sms/flaky,
// the rest to sms/steady.
type outage struct {
	failing atomic.Bool
	flaky   *httptest.Server
	steady  *httptest.Server
}

func smsServer(t *testing.T, fail func() bool) *httptest.Server {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if fail() {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":"upstream down"}`)
			return
		}
		fmt.Fprintf(w, `{"id":"m%d"}`, n.Add(1))
	}))
	t.Cleanup(s.Close)
	return s
}

// stageOutage configures the providers and a content rule that holds
// intents mentioning "lottery" for review, and runs an engine on the
// database until the test ends.
func (b *testBundle) stageOutage(t *testing.T) *outage {
	t.Helper()
	ctx := context.Background()
	o := &outage{}
	o.failing.Store(true)
	o.flaky = smsServer(t, o.failing.Load)
	o.steady = smsServer(t, func() bool { return false })
	f, err := routing.Parse(fmt.Appendf(nil, `
providers:
  - name: sms/flaky
    driver: sms-http
    sms_http: {url: %q, api_key: {env: FLAKY_KEY}}
  - name: sms/steady
    driver: sms-http
    sms_http: {url: %q, api_key: {env: STEADY_KEY}}
rules:
  sms:
    - name: kenya
      match: {prefixes: ["+254"]}
      providers: [sms/flaky]
    - name: rest
      providers: [sms/steady]
`, o.flaky.URL+"/send", o.steady.URL+"/send"))
	require.NoError(t, err)
	_, err = routing.Apply(ctx, b.admin, f, "tester", nil)
	require.NoError(t, err)
	_, err = b.admin.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode, note) VALUES ('word', 'lottery', 'review', 'scam wording')`)
	require.NoError(t, err)

	e, err := engine.New(b.admin, &engine.Config{
		Logger:     slog.New(slog.DiscardHandler),
		GetenvFunc: func(k string) string { return map[string]string{"FLAKY_KEY": flakyKey, "STEADY_KEY": steadyKey}[k] },
		Dispatch:   dispatch.Config{PollInterval: 50 * time.Millisecond},
		Intake:     &sqldoor.WorkerConfig{PollInterval: 50 * time.Millisecond},
	})
	require.NoError(t, err)
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(ectx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return o
}

// submit puts intents on the SQL intake, each a JSON object.
func (b *testBundle) submit(t *testing.T, bodies ...string) {
	t.Helper()
	_, err := benchstore.New().IntakeInsertReturning(context.Background(), b.admin, bodies)
	require.NoError(t, err)
}

func smsIntent(key, phone, text string, extra string) string {
	return fmt.Sprintf(`{"notification_type":"order.shipped","producer":"shop","idempotency_key":%q,"channels":["sms"],
		"audience":{"sms":[%q]},"content":{"sms":{"body":%q}}%s}`, key, phone, text, extra)
}

// count runs a count query as the superuser.
func (b *testBundle) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.admin.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// eventually waits for the count query to reach want.
func (b *testBundle) eventually(t *testing.T, want int, sql string, args ...any) {
	t.Helper()
	require.Eventually(t, func() bool { return b.count(t, sql, args...) == want }, 20*time.Second, 25*time.Millisecond,
		"waiting for %d from %s", want, sql)
}

// stageStory stages the outage and what the pages show: dead letters
// on sms/flaky, deliveries on sms/steady, a held intent, a pending
// campaign and a malformed entry whose raw body holds markup.
func (b *testBundle) stageStory(t *testing.T) *outage {
	t.Helper()
	o := b.stageOutage(t)
	var bodies []string
	for i := range 6 {
		bodies = append(bodies, smsIntent(fmt.Sprintf("ke-%d", i), "+254712345678", "Your parcel is on its way", `,"max_attempts":1`))
	}
	for i := range 3 {
		bodies = append(bodies, smsIntent(fmt.Sprintf("uk-%d", i), "+447911123456", "Your parcel is on its way", ""))
	}
	for i := range 2 {
		bodies = append(bodies, smsIntent(fmt.Sprintf("spring-%d", i), "+447911123456", "Spring sale",
			`,"campaign":"spring","send_at":"`+time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339)+`"`))
	}
	bodies = append(bodies, smsIntent("prize", "+447911123456", "You won the LOTTERY, claim now", ""))
	bodies = append(bodies, `{"producer":"shop","idempotency_key":"bad","notification_type":"x<script>alert(1)</script>","channels":["pigeon"]}`)
	b.submit(t, bodies...)
	b.eventually(t, 6, `SELECT count(*) FROM herald.dead_letters`)
	b.eventually(t, 3, `SELECT count(*) FROM herald.routes WHERE status = 'published'`)
	b.eventually(t, 1, `SELECT count(*) FROM herald.held_intents`)
	require.Eventually(t, func() bool { return b.count(t, `SELECT count(*) FROM herald.malformed_intents`) == 1 }, 20*time.Second,
		25*time.Millisecond, "malformed: %s", b.malformedCodes(t))
	b.eventually(t, 2, `SELECT count(*) FROM herald.routes r JOIN herald.records rec USING (notification_id) WHERE rec.campaign = 'spring'`)
	return o
}

// client is a person's HTTP client of the console (no browser), with a
// cookie jar.
type client struct {
	t    testing.TB
	base string
	http *http.Client
}

func (b *testBundle) client(t testing.TB) *client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &client{t: t, base: b.console.URL(), http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signIn signs in as user and returns the answer's status.
func (c *client) signIn(user, password string) int {
	c.t.Helper()
	res, _ := c.post("/login", url.Values{"user": {user}, "password": {password}})
	return res
}

func (c *client) get(path string) (int, string) {
	c.t.Helper()
	res, err := c.http.Get(c.base + path)
	require.NoError(c.t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	return res.StatusCode, string(body)
}

func (c *client) post(path string, form url.Values) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	return res.StatusCode, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token reads the session's form token from a page.
func (c *client) token() string {
	c.t.Helper()
	_, body := c.get("/")
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(c.t, m, "no form token on the overview")
	return m[1]
}

func (b *testBundle) malformedCodes(t *testing.T) string {
	var s string
	require.NoError(t, b.admin.QueryRow(context.Background(),
		`SELECT coalesce(string_agg(failure_code || ': ' || failure_message, '; '), '') FROM herald.malformed_intents`).Scan(&s))
	return s
}
