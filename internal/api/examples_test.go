package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The examples of the served document are what the server answers: each
// request example (a body's, or a parameter's) is sent to a real server,
// and the answer must have the status of the response example of the same
// name (the operation's success status when there is none), validate
// against the documented response (b.do's checking transport validates
// every answer), and equal that example but for what
// differs from one server to the next (times, request ids, notification
// ids, cursors). Every response example validates against its schema, and
// every request example that is answered 2xx against its own.

// orderedObject is a JSON object that remembers its keys' order: examples
// are sent in the order the document gives them (a replay after the
// original).
type orderedObject struct {
	keys []string
	m    map[string]json.RawMessage
}

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &o.m); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		o.keys = append(o.keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// docExample is an Example Object's value.
type docExample struct {
	Value json.RawMessage `json:"value"`
}

type docMedia struct {
	Examples orderedObject `json:"examples"`
}

type docParameter struct {
	Name     string        `json:"name"`
	In       string        `json:"in"`
	Required bool          `json:"required"`
	Examples orderedObject `json:"examples"`
}

type docLink struct {
	OperationID string            `json:"operationId"`
	Parameters  map[string]string `json:"parameters"`
}

type docResponse struct {
	Content map[string]docMedia `json:"content"`
	Links   orderedObject       `json:"links"`
}

type docOperation struct {
	method, path string
	OperationID  string         `json:"operationId"`
	Parameters   []docParameter `json:"parameters"`
	RequestBody  *struct {
		Content map[string]docMedia `json:"content"`
	} `json:"requestBody"`
	Responses map[string]docResponse `json:"responses"`
}

// docOperations returns the served document's operations in its order.
func docOperations(t *testing.T, served []byte) []*docOperation {
	t.Helper()
	var d struct {
		Paths orderedObject `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(served, &d))
	var ops []*docOperation
	for _, path := range d.Paths.keys {
		var item orderedObject
		require.NoError(t, json.Unmarshal(d.Paths.m[path], &item))
		for _, method := range item.keys {
			op := &docOperation{method: strings.ToUpper(method), path: path}
			require.NoError(t, json.Unmarshal(item.m[method], op))
			ops = append(ops, op)
		}
	}
	return ops
}

func exampleValue(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var e docExample
	require.NoError(t, json.Unmarshal(raw, &e))
	require.NotNil(t, e.Value, "an example without a value")
	return e.Value
}

// names returns the request examples' names, in the document's order:
// the body's, then the parameters' not given yet.
func (op *docOperation) names() []string {
	var out []string
	if op.RequestBody != nil {
		out = append(out, op.RequestBody.Content["application/json"].Examples.keys...)
	}
	for _, p := range op.Parameters {
		for _, k := range p.Examples.keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// expected returns the status and example of the response example named
// name, or the operation's least 2xx and no example.
func (op *docOperation) expected(t *testing.T, name string) (int, json.RawMessage) {
	t.Helper()
	success := 0
	for code, r := range op.Responses {
		n, err := strconv.Atoi(code)
		require.NoError(t, err)
		for _, m := range r.Content {
			if raw, ok := m.Examples.m[name]; ok {
				return n, exampleValue(t, raw)
			}
		}
		if n < 300 && (success == 0 || n < success) {
			success = n
		}
	}
	require.NotZero(t, success, "%s has no 2xx", op.OperationID)
	return success, nil
}

// exampleRun sends the document's examples to one server and learns which
// live notification id stands for each id the examples show.
type exampleRun struct {
	t   *testing.T
	b   *testBundle
	ids map[string]string // document's id → the live one
}

// request returns op's URL and body for the request example named name:
// each parameter's example of that name (else its first), the body's.
func (r *exampleRun) request(op *docOperation, name string) (string, []byte) {
	t := r.t
	path := op.path
	q := url.Values{}
	for _, p := range op.Parameters {
		raw, ok := p.Examples.m[name]
		if !ok && len(p.Examples.keys) > 0 && p.Required {
			raw, ok = p.Examples.m[p.Examples.keys[0]], true
		}
		if !ok {
			require.False(t, p.Required, "%s %s: no example of the required parameter %s", op.OperationID, name, p.Name)
			continue
		}
		var v any
		require.NoError(t, json.Unmarshal(exampleValue(t, raw), &v))
		s := fmt.Sprint(v)
		if live, ok := r.ids[s]; ok {
			s = live
		}
		switch p.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(s))
		case "query":
			q.Set(p.Name, s)
		default:
			t.Fatalf("%s: a %s parameter example is not sent by this test", op.OperationID, p.In)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body []byte
	if op.RequestBody != nil {
		if raw, ok := op.RequestBody.Content["application/json"].Examples.m[name]; ok {
			body = exampleValue(t, raw)
		}
	}
	return path, body
}

func TestDocument_ExamplesAreWhatTheServerAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	served := b.do(t, http.MethodGet, "/openapi.json", nil, "")
	require.Equal(t, http.StatusOK, served.status)
	r := &exampleRun{t: t, b: b, ids: map[string]string{}}
	sent, checked := 0, 0
	for _, op := range docOperations(t, served.body) {
		checked += r.responseExamplesValidate(op)
		names := op.names()
		if len(names) == 0 {
			names = []string{""} // the plain request
		}
		for _, name := range names {
			path, body := r.request(op, name)
			want, example := op.expected(t, name)
			var send any
			if body != nil {
				send = body
			}
			a := b.do(t, op.method, path, send, b.shopKey)
			require.Equal(t, want, a.status, "%s example %q: %s", op.OperationID, name, a.body)
			if want < 300 && body != nil {
				r.requestValidates(op.method, path, body, op.OperationID+" example "+name)
			}
			if example != nil {
				r.sameAsExample(example, a.body, op.OperationID+" example "+name)
			}
			sent++
		}
	}
	t.Logf("%d request examples sent, %d response examples validated", sent, checked)
}

// responseExamplesValidate checks each response example of op against
// the document, as an answer to op, and returns how many it checked.
func (r *exampleRun) responseExamplesValidate(op *docOperation) int {
	n := 0
	for code, resp := range op.Responses {
		status, err := strconv.Atoi(code)
		require.NoError(r.t, err)
		for ctype, m := range resp.Content {
			for _, name := range m.Examples.keys {
				path := op.path
				for _, p := range op.Parameters {
					if p.In == "path" {
						path = strings.ReplaceAll(path, "{"+p.Name+"}", "x")
					}
				}
				req, err := http.NewRequest(op.method, r.b.http.URL+path, nil)
				require.NoError(r.t, err)
				res := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ctype}},
					Body: io.NopCloser(bytes.NewReader(exampleValue(r.t, m.Examples.m[name]))), Request: req}
				v := openAPIValidator(r.t)
				validatorMu.Lock()
				ok, errs := v.ValidateHttpResponse(req, res)
				validatorMu.Unlock()
				require.True(r.t, ok, "%s %s example %q does not match its schema: %s", op.OperationID, code, name, describe(errs))
				n++
			}
		}
	}
	return n
}

// requestValidates checks that a request example the server accepted is
// one the document allows.
func (r *exampleRun) requestValidates(method, path string, body []byte, what string) {
	req, err := http.NewRequest(method, r.b.http.URL+path, bytes.NewReader(body))
	require.NoError(r.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.b.shopKey)
	v := openAPIValidator(r.t)
	validatorMu.Lock()
	ok, errs := v.ValidateHttpRequestSync(req)
	validatorMu.Unlock()
	require.True(r.t, ok, "%s: the document refuses the request example: %s", what, describe(errs))
}

var (
	exampleUUID  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	exampleReqID = regexp.MustCompile(`^req_[0-9a-f]{24}$`)
)

// sameAsExample checks that the live answer is the example but for what
// a server makes anew: times, request ids, the next cursor, notification
// ids (the first sight of a document's id learns the live one).
func (r *exampleRun) sameAsExample(example, live []byte, what string) {
	var ex, got any
	require.NoError(r.t, json.Unmarshal(example, &ex))
	require.NoError(r.t, json.Unmarshal(live, &got), "%s: %s", what, live)
	r.same(ex, got, what, "")
}

func (r *exampleRun) same(ex, got any, what, at string) {
	t := r.t
	switch e := ex.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s at %s: answered %v, the example has an object", what, at, got)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range e {
				if !yield(k) {
					return
				}
			}
		})
		// ids first, so a detail that names one reads it mapped.
		slices.SortStableFunc(keys, func(a, b string) int {
			return boolInt(!strings.HasSuffix(a, "id")) - boolInt(!strings.HasSuffix(b, "id"))
		})
		for k := range g {
			require.Contains(t, e, k, "%s: the answer has %s.%s, the example not", what, at, k)
		}
		for _, k := range keys {
			require.Contains(t, g, k, "%s: the example has %s.%s, the answer not", what, at, k)
			if k == "next" { // a cursor holds a time and an id
				continue
			}
			r.same(e[k], g[k], what, at+"."+k)
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s at %s: answered %v, the example has an array", what, at, got)
		require.Len(t, g, len(e), "%s at %s", what, at)
		for i := range e {
			r.same(e[i], g[i], what, fmt.Sprintf("%s[%d]", at, i))
		}
	case string:
		g, ok := got.(string)
		require.True(t, ok, "%s at %s: answered %v, the example has a string", what, at, got)
		if _, err := time.Parse(time.RFC3339Nano, e); err == nil {
			_, err := time.Parse(time.RFC3339Nano, g)
			require.NoError(t, err, "%s at %s", what, at)
			return
		}
		if exampleReqID.MatchString(e) {
			require.Regexp(t, exampleReqID, g, "%s at %s", what, at)
			return
		}
		if exampleUUID.MatchString(e) {
			if live, ok := r.ids[e]; ok {
				require.Equal(t, live, g, "%s at %s: the answer names another notification", what, at)
			} else {
				require.Regexp(t, exampleUUID, g, "%s at %s", what, at)
				r.ids[e] = g
			}
			return
		}
		for doc, live := range r.ids {
			e = strings.ReplaceAll(e, doc, live)
		}
		require.Equal(t, e, g, "%s at %s", what, at)
	default:
		require.Equal(t, ex, got, "%s at %s", what, at)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The submit's links lead where they say: the runtime expression read
// from a real receipt names the notification submitted, the linked GET
// answers it, and the linked cancel cancels it.
func TestDocument_SubmitLinksLeadToTheNotification(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	served := b.do(t, http.MethodGet, "/openapi.json", nil, "")
	require.Equal(t, http.StatusOK, served.status)
	ops := docOperations(t, served.body)
	byID := map[string]*docOperation{}
	for _, op := range ops {
		byID[op.OperationID] = op
	}
	submit := byID["submitNotification"]
	in := intent("", "links-1")
	first := b.do(t, http.MethodPost, "/v1/notifications", in, b.shopKey)
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	replay := b.do(t, http.MethodPost, "/v1/notifications", in, b.shopKey)
	require.Equal(t, http.StatusOK, replay.status, "%s", replay.body)
	var rc Receipt
	first.json(t, &rc)

	followed := 0
	for _, step := range []struct {
		status string
		answer answer
	}{{"201", first}, {"200", replay}} {
		links := submit.Responses[step.status].Links
		require.ElementsMatch(t, []string{"getNotification", "cancelNotification"}, links.keys,
			"the submit's %s links", step.status)
		for _, name := range links.keys {
			var l docLink
			require.NoError(t, json.Unmarshal(links.m[name], &l))
			op := byID[l.OperationID]
			require.NotNil(t, op, "link %s names no operation", name)
			path := op.path
			for p, expr := range l.Parameters {
				v := runtimeExpression(t, expr, step.answer.body)
				require.Equal(t, rc.NotificationID, v, "link %s: %s", name, expr)
				path = strings.ReplaceAll(path, "{"+p+"}", url.PathEscape(v))
			}
			require.NotContains(t, path, "{", "link %s leaves a parameter of %s unfilled", name, op.path)
			a := b.do(t, op.method, path, nil, b.shopKey)
			require.Equal(t, http.StatusOK, a.status, "link %s: %s", name, a.body)
			switch l.OperationID {
			case "getNotification":
				var n Notification
				a.json(t, &n)
				require.Equal(t, rc.NotificationID, n.ID)
				require.Equal(t, "links-1", n.IdempotencyKey)
				require.Len(t, n.Routes, len(rc.RouteIDs))
			case "cancelNotification":
				var c Cancellation
				a.json(t, &c)
				require.Equal(t, rc.NotificationID, c.NotificationID)
				if step.status == "201" {
					require.Len(t, c.Canceled, len(rc.RouteIDs), "the first cancel cancels every pending route")
				} else {
					require.Empty(t, c.Canceled, "a second cancel has nothing left to cancel")
				}
			default:
				t.Fatalf("link %s to %s: this test knows no check of it", name, l.OperationID)
			}
			followed++
		}
	}
	var n Notification
	b.do(t, http.MethodGet, "/v1/notifications/"+rc.NotificationID, nil, b.shopKey).json(t, &n)
	for _, rt := range n.Routes {
		require.Equal(t, "canceled", rt.Status, "route %s after the linked cancel", rt.ID)
	}
	t.Logf("%d links followed", followed)
}

// runtimeExpression evaluates the one form of OpenAPI runtime expression
// the document's links use: $response.body#/json/pointer.
func runtimeExpression(t *testing.T, expr string, body []byte) string {
	t.Helper()
	pointer, ok := strings.CutPrefix(expr, "$response.body#")
	require.True(t, ok, "runtime expression %q: only $response.body#/… is evaluated here", expr)
	var v any
	require.NoError(t, json.Unmarshal(body, &v))
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s: %s is not an object in %s", expr, tok, body)
		v, ok = m[tok]
		require.True(t, ok, "%s: no %s in %s", expr, tok, body)
	}
	s, ok := v.(string)
	require.True(t, ok, "%s is not a string in %s", expr, body)
	return s
}
