package api

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
)

// TestMain runs the tests on a throwaway cluster and then, when every test
// ran and passed, checks that they produced every status code the document
// gives every operation: with the validating transport below (every
// answer, and every request that succeeded, matches the document), a
// handler and the document cannot drift apart unnoticed.
func TestMain(m *testing.M) {
	code := coverStatuses(m.Run())
	_ = pgtemp.StopServer()
	os.Exit(code)
}

func coverStatuses(code int) int {
	if code != 0 || flag.Lookup("test.run").Value.String() != "" || flag.Lookup("test.skip").Value.String() != "" ||
		testing.Short() {
		return code
	}
	var missing []string
	for _, op := range documentedStatuses() {
		if !seen.has(op) {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		fmt.Fprintf(os.Stderr, "FAIL: the tests never saw these answers the document gives (a test, or the document, is missing):\n  %s\n",
			strings.Join(missing, "\n  "))
		return 1
	}
	return 0
}

// seen holds "METHOD /path/pattern STATUS" of every answer the tests got.
var seen = &seenSet{m: map[string]bool{}}

type seenSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *seenSet) add(k string) { s.mu.Lock(); s.m[k] = true; s.mu.Unlock() }
func (s *seenSet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

// openAPIDoc is the document as plain JSON, for the drift tests.
type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Responses map[string]json.RawMessage `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

func readDoc(t testing.TB) openAPIDoc {
	var d openAPIDoc
	if err := json.Unmarshal(OpenAPI(), &d); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return d
}

func documentedStatuses() []string {
	var d openAPIDoc
	_ = json.Unmarshal(OpenAPI(), &d)
	var out []string
	for path, ops := range d.Paths {
		for method, op := range ops {
			for status := range op.Responses {
				out = append(out, strings.ToUpper(method)+" "+path+" "+status)
			}
		}
	}
	return out
}

var (
	validatorOnce sync.Once
	docValidator  validator.Validator
	validatorErr  error
	validatorMu   sync.Mutex // the validator's caches are not documented as safe for concurrent use
)

func openAPIValidator(t testing.TB) validator.Validator {
	t.Helper()
	validatorOnce.Do(func() {
		doc, err := libopenapi.NewDocument(OpenAPI())
		if err != nil {
			validatorErr = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			validatorErr = fmt.Errorf("%v", errs)
			return
		}
		docValidator = v
	})
	require.NoError(t, validatorErr)
	return docValidator
}

// checkingTransport sends requests and checks each exchange against the
// document: every answer, and every request that got a 2xx. It records the
// (operation, status) seen.
type checkingTransport struct {
	t    testing.TB
	next http.RoundTripper
}

func (c *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if _, slow := req.Body.(*trickle); !slow && req.Body != nil { // a trickle is sent as it comes
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	pattern := operationOf(req.Method, req.URL.Path)
	if pattern == "" {
		return resp, nil // an unknown path: answered with a 404 or 405 problem, in no operation
	}
	seen.add(fmt.Sprintf("%s %d", pattern, resp.StatusCode))

	v := openAPIValidator(c.t)
	check := req.Clone(req.Context())
	check.Body = io.NopCloser(bytes.NewReader(reqBody))
	checkResp := *resp
	checkResp.Body = io.NopCloser(bytes.NewReader(respBody))
	validatorMu.Lock()
	defer validatorMu.Unlock()
	if resp.StatusCode < 300 && !strings.Contains(string(respBody), `"error":`) { // a batch's refused intents need not match
		if ok, errs := v.ValidateHttpRequestSync(check); !ok {
			c.t.Errorf("request %s %s does not match openapi.json: %s", req.Method, req.URL.Path, describe(errs))
		}
		check = req.Clone(req.Context())
		check.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	if ok, errs := v.ValidateHttpResponse(check, &checkResp); !ok {
		c.t.Errorf("answer %d to %s %s does not match openapi.json: %s\n%s", resp.StatusCode, req.Method, req.URL.Path,
			describe(errs), respBody)
	}
	return resp, nil
}

func describe[E interface{ Error() string }](errs []E) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
		if se, ok := any(e).(interface{ GetSchemaErrors() []string }); ok {
			b.WriteString(strings.Join(se.GetSchemaErrors(), "; "))
		}
		b.WriteString("; ")
	}
	return b.String()
}

// operationOf returns "METHOD /document/path" for a request, or "".
func operationOf(method, path string) string {
	for _, p := range endpointPatterns() {
		m, tmpl, _ := strings.Cut(p, " ")
		if m != method {
			continue
		}
		ps, ts := strings.Split(path, "/"), strings.Split(tmpl, "/")
		if len(ps) != len(ts) {
			continue
		}
		match := true
		for i := range ts {
			if !(strings.HasPrefix(ts[i], "{") || ts[i] == ps[i]) {
				match = false
				break
			}
		}
		// A literal segment wins over a wildcard (batch over {id}).
		if match && !(strings.Contains(tmpl, "{id}") && slices.Contains(ps, "batch") && len(ps) == 4) {
			return p
		}
	}
	return ""
}

// testBundle is an API server on a fresh database, over real HTTP on
// 127.0.0.1, with a key of producer "shop" and one of "mall".
type testBundle struct {
	admin    *pgxpool.Pool // the engine's login
	apiPool  *pgxpool.Pool // the API's login (herald_api)
	server   *Server
	http     *httptest.Server
	client   *http.Client
	registry *prometheus.Registry
	shopKey  string
	mallKey  string
}

func setup(t *testing.T, mutate func(*Config)) *testBundle {
	t.Helper()
	b := &testBundle{admin: pgtemp.NewPool(t), registry: prometheus.NewRegistry()}
	_, b.apiPool = pgtemp.Login(t, b.admin, "api", "herald_api")
	cfg := &Config{Pool: b.apiPool, Metrics: metrics.New(b.registry)}
	if mutate != nil {
		mutate(cfg)
	}
	var err error
	b.server, err = New(cfg)
	require.NoError(t, err)
	b.http = httptest.NewServer(b.server.Handler())
	t.Cleanup(b.http.Close)
	b.client = &http.Client{Transport: &checkingTransport{t: t, next: http.DefaultTransport}}
	ctx := context.Background()
	shop, err := CreateKey(ctx, b.admin, "shop", "test", "shop's key")
	require.NoError(t, err)
	mall, err := CreateKey(ctx, b.admin, "mall", "test", "mall's key")
	require.NoError(t, err)
	b.shopKey, b.mallKey = shop.Secret, mall.Secret
	// The document's example sender, approved for both as an operator would.
	for _, p := range []string{"shop", "mall"} {
		_, err = store.New().SenderIDApprove(ctx, b.admin, store.SenderIDApproveParams{Producer: p, Sender: "ACME", Actor: "test"})
		require.NoError(t, err)
	}
	return b
}

// answer is one HTTP answer, its body decoded where JSON.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(a.body, v), "%s", a.body)
}

func (a answer) problem(t *testing.T) Problem {
	t.Helper()
	require.Equal(t, "application/problem+json", a.header.Get("Content-Type"), "%s", a.body)
	var p Problem
	a.json(t, &p)
	require.Equal(t, ProblemTypePrefix+string(p.Code), p.Type)
	require.Equal(t, a.status, p.Status)
	require.NotEmpty(t, p.RequestID)
	require.Equal(t, a.header.Get("X-Request-Id"), p.RequestID)
	return p
}

// do sends method path with body (a string, or a value to marshal; nil
// for none) and key ("" for none), and headers as "Name: value".
func (b *testBundle) do(t *testing.T, method, path string, body any, key string, headers ...string) answer {
	t.Helper()
	var r io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(v)
	case []byte:
		r = bytes.NewReader(v)
	default:
		j, err := json.Marshal(v)
		require.NoError(t, err)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.http.URL+path, r)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: out}
}

// intent returns a valid intent of producer with key: one SMS to a direct
// number and one e-mail to user 42.
func intent(producer, key string) map[string]any {
	in := map[string]any{
		"notification_type": "order.shipped",
		"idempotency_key":   key,
		"channels":          []string{"sms", "email"},
		"audience":          map[string]any{"user_ids": []string{"42"}, "sms": []string{"+14155550123"}},
		"content": map[string]any{
			"sms":   map[string]any{"body": "Order 9 shipped"},
			"email": map[string]any{"subject": "Order 9 shipped", "text": "On its way."},
		},
	}
	if producer != "" {
		in["producer"] = producer
	}
	return in
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.admin.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
