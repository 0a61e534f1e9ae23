package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

// The walk below reads the served document and holds the server to every
// request constraint it states, both ways: an instance generated from each
// operation's schemas (all properties the schema allows together, its
// examples as values) is accepted, and each generated violation of one
// constraint (a missing required property, a string over maxLength or
// under minLength, a number outside minimum..maximum, a value outside an
// enum or not matching a pattern, an unknown property where
// additionalProperties is false, an empty array under minItems, a
// repeated item under uniqueItems, a property without the one it
// depends on, a time that is not date-time) is refused with 400, 413 or
// 415. The document's own validator must agree that each violation is one,
// so the walk cannot refuse what the document allows.

// walkOrder is the order the walk visits operations (a cancel needs a
// notification, a delete an entry, an intent's callback_url the
// producer's subscription). An operation not listed fails the
// walk: a new one must be placed here.
var walkOrder = []string{
	"putCallbackSubscription", "getCallbackSubscription",
	"submitNotification", "submitNotifications", "listNotifications", "getNotification",
	"cancelNotification", "putRecipient", "getRecipient", "deleteRecipient", "deleteCallbackSubscription",
	"getOpenAPI", "healthz", "readyz",
}

// headerFields: a header parameter that stands for a body property; when
// the walk sends the header, the body goes without the property.
var headerFields = map[string]string{"Idempotency-Key": "idempotency_key"}

type walker struct {
	t       *testing.T
	b       *testBundle
	doc     map[string]any
	now     time.Time
	keys    int
	notifID string
}

func TestDocument_ConstraintsAreTheServers(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxBodyBytes = 512 << 10 })
	served := b.do(t, http.MethodGet, "/openapi.json", nil, "")
	require.Equal(t, http.StatusOK, served.status)
	w := &walker{t: t, b: b, now: time.Now().UTC()}
	require.NoError(t, json.Unmarshal(served.body, &w.doc))

	type operation struct {
		id, method, path string
		op               map[string]any
	}
	var ops []operation
	for path, item := range w.doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			op := op.(map[string]any)
			id, _ := op["operationId"].(string)
			require.Contains(t, walkOrder, id, "operation %s %s is not in walkOrder", method, path)
			ops = append(ops, operation{id, strings.ToUpper(method), path, op})
		}
	}
	slices.SortFunc(ops, func(a, b operation) int {
		return slices.Index(walkOrder, a.id) - slices.Index(walkOrder, b.id)
	})
	require.Len(t, ops, len(walkOrder))
	checked := 0
	for _, o := range ops {
		checked += w.operation(o.id, o.method, o.path, o.op)
	}
	t.Logf("%d documented constraints checked against the server", checked)
}

// operation walks one operation and returns how many violations it sent.
func (w *walker) operation(id, method, path string, op map[string]any) int {
	t := w.t
	var bodySchema map[string]any
	if rb, ok := op["requestBody"].(map[string]any); ok {
		bodySchema = w.resolve(rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"])
	}
	var params []map[string]any
	for _, p := range asSlice(op["parameters"]) {
		params = append(params, w.resolve(p))
	}
	authed := len(asSlice(op["security"])) > 0 || op["security"] == nil

	// The valid request: every parameter at a valid value, the body a
	// generated instance.
	values := map[string]string{}
	for _, p := range params {
		name := p["name"].(string)
		switch {
		case name == "id":
			values[name] = w.notifID
		case name == "user_id":
			values[name] = "42"
		case p["required"] == true || w.resolve(p["schema"])["default"] != nil:
			values[name] = fmt.Sprint(w.gen(w.resolve(p["schema"]), name))
		}
	}
	var body any
	if bodySchema != nil {
		body = w.gen(bodySchema, "")
	}
	key := ""
	if authed {
		key = w.b.shopKey
	}
	send := func(values map[string]string, body any, headers ...string) answer {
		u, hdr := w.url(path, params, values)
		for k, v := range hdr {
			headers = append(headers, k+": "+v)
		}
		var b any
		if body != nil {
			j, err := json.Marshal(body)
			require.NoError(t, err)
			b = j
		}
		return w.b.do(t, method, u, b, key, headers...)
	}
	a := send(values, body)
	require.Less(t, a.status, 300, "%s: the document's generated valid request is refused: %s", id, a.body)
	w.acceptedByDocument(method, path, params, values, body, true, id+" valid request")
	if id == "submitNotification" {
		var rc Receipt
		a.json(t, &rc)
		w.notifID = rc.NotificationID
	}

	// 406 for every operation.
	a = send(values, body, "Accept: text/html")
	require.Equal(t, http.StatusNotAcceptable, a.status, "%s with Accept: text/html: %s", id, a.body)
	n := 1

	// A body: 415 for another type, 413 over the limit, and each violation
	// of its schema.
	if bodySchema != nil {
		j, err := json.Marshal(body)
		require.NoError(t, err)
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1"} {
			u, _ := w.url(path, params, values)
			a = w.b.do(t, method, u, j, key, "Content-Type: "+ct)
			require.Equal(t, http.StatusUnsupportedMediaType, a.status, "%s as %s: %s", id, ct, a.body)
			n++
		}
		u, _ := w.url(path, params, values)
		a = w.b.do(t, method, u, bytes.Repeat([]byte(" "), 600<<10), key)
		require.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%s with 600 KiB: %s", id, a.body)
		n++

		for _, v := range w.violations(bodySchema, body, nil) {
			bad := v.apply(deepCopy(body))
			if !v.annotation {
				w.acceptedByDocument(method, path, params, values, bad, false, id+": "+v.what)
			}
			w.refused(id, send(values, bad), v.what)
			n++
		}
	}

	// Each parameter's constraints.
	for _, p := range params {
		name := p["name"].(string)
		s := w.resolve(p["schema"])
		valid := values[name]
		if valid == "" {
			valid = fmt.Sprint(w.gen(s, name))
		}
		for _, v := range w.scalarViolations(s, valid) {
			if p["in"] == "path" && v.value == "" {
				continue // an empty segment routes elsewhere
			}
			vals := maps.Clone(values)
			vals[name] = fmt.Sprint(v.value)
			b := body
			if f, ok := headerFields[name]; ok && b != nil {
				b = deepCopy(b)
				delete(b.(map[string]any), f)
			}
			what := fmt.Sprintf("parameter %s: %s", name, v.what)
			if !v.annotation {
				w.acceptedByDocument(method, path, params, vals, b, false, id+": "+what)
			}
			w.refused(id, send(vals, b), what)
			n++
		}
		// A header standing for a body property: it alone is enough, and
		// the request without either is refused.
		if f, ok := headerFields[name]; ok && body != nil {
			b := deepCopy(body).(map[string]any)
			delete(b, f)
			vals := maps.Clone(values)
			vals[name] = w.freshKey()
			a := send(vals, b)
			require.Less(t, a.status, 300, "%s with %s alone: %s", id, name, a.body)
			w.refused(id, send(values, b), "neither "+name+" nor "+f)
			n += 2
		}
	}
	return n
}

// url fills path's parameters from values and returns the URL and the
// header parameters to send.
func (w *walker) url(path string, params []map[string]any, values map[string]string) (string, map[string]string) {
	q := url.Values{}
	hdr := map[string]string{}
	for _, p := range params {
		name := p["name"].(string)
		v, ok := values[name]
		if !ok {
			continue
		}
		switch p["in"] {
		case "path":
			path = strings.ReplaceAll(path, "{"+name+"}", url.PathEscape(v))
		case "query":
			q.Set(name, v)
		case "header":
			hdr[name] = v
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path, hdr
}

// acceptedByDocument checks that the document's validator accepts (want)
// or refuses the request: the walk's violations are the document's.
func (w *walker) acceptedByDocument(method, path string, params []map[string]any, values map[string]string, body any, want bool, what string) {
	w.t.Helper()
	u, hdr := w.url(path, params, values)
	var r io.Reader = http.NoBody
	if body != nil {
		j, err := json.Marshal(body)
		require.NoError(w.t, err)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, w.b.http.URL+u, r)
	require.NoError(w.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+w.b.shopKey)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	v := openAPIValidator(w.t)
	validatorMu.Lock()
	ok, errs := v.ValidateHttpRequestSync(req)
	validatorMu.Unlock()
	if want {
		require.True(w.t, ok, "%s: the document refuses its own generated instance: %s", what, describe(errs))
	} else {
		require.False(w.t, ok, "%s: the document allows this violation (the walk is wrong)", what)
	}
}

// refused checks that the server refused a violation: 400, 413 or 415,
// or, in a batch, 200 with every intent's result refused.
func (w *walker) refused(id string, a answer, what string) {
	w.t.Helper()
	if id == "submitNotifications" && a.status == http.StatusOK {
		var out struct {
			Results []BatchResult `json:"results"`
		}
		a.json(w.t, &out)
		for _, r := range out.Results {
			require.Contains(w.t, []int{400, 413}, r.Status, "%s: %s: the server accepted it: %s", id, what, a.body)
		}
		return
	}
	require.Contains(w.t, []int{400, 413, 415}, a.status, "%s: %s: the server did not refuse it: %s", id, what, a.body)
}

// resolve follows $ref and merges allOf into one schema.
func (w *walker) resolve(v any) map[string]any { return resolveSchema(w.doc, v) }

// resolveSchema follows $ref within doc and merges allOf into one schema.
func resolveSchema(doc map[string]any, v any) map[string]any {
	s, _ := v.(map[string]any)
	if s == nil {
		return map[string]any{}
	}
	if ref, ok := s["$ref"].(string); ok {
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[part]
		}
		rest := maps.Clone(s)
		delete(rest, "$ref")
		return mergeSchemas(resolveSchema(doc, cur), rest)
	}
	if all, ok := s["allOf"].([]any); ok {
		out := maps.Clone(s)
		delete(out, "allOf")
		for _, part := range all {
			out = mergeSchemas(out, resolveSchema(doc, part))
		}
		return out
	}
	return s
}

// mergeSchemas combines two schemas that both hold: properties (merged
// when both give one) and required are united, other keywords taken from
// whichever has them.
func mergeSchemas(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	for k, v := range b {
		switch k {
		case "properties":
			props := map[string]any{}
			if p, ok := out[k].(map[string]any); ok {
				maps.Copy(props, p)
			}
			for name, ps := range v.(map[string]any) {
				if have, ok := props[name].(map[string]any); ok {
					props[name] = mergeSchemas(have, ps.(map[string]any))
				} else {
					props[name] = ps
				}
			}
			out[k] = props
		case "required":
			req := slices.Clone(asSlice(out[k]))
			for _, x := range asSlice(v) {
				if !slices.Contains(req, x) {
					req = append(req, x)
				}
			}
			out[k] = req
		default:
			out[k] = v
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// otherBranches returns the properties only a oneOf's other branches
// require: a generated instance takes the first branch and leaves these out.
func otherBranches(s map[string]any) map[string]bool {
	out := map[string]bool{}
	branches := asSlice(s["oneOf"])
	for i, br := range branches {
		if i == 0 {
			continue
		}
		for _, r := range asSlice(br.(map[string]any)["required"]) {
			out[r.(string)] = true
		}
	}
	return out
}

// gen returns a valid instance of s (name is its property's name): every
// property allowed together, each value its schema's first example, else
// the least value its constraints allow. Times are relative to the walk's
// start; idempotency keys are fresh.
func (w *walker) gen(s map[string]any, name string) any {
	s = w.resolve(s)
	switch name {
	case "idempotency_key":
		return w.freshKey()
	case "occurred_at":
		return w.now.Format(time.RFC3339)
	case "send_at":
		return w.now.Add(time.Hour).Format(time.RFC3339)
	case "expires_at":
		return w.now.Add(2 * time.Hour).Format(time.RFC3339)
	}
	if ex := asSlice(s["examples"]); len(ex) > 0 {
		return deepCopy(ex[0])
	}
	if d, ok := s["default"]; ok {
		return d
	}
	if enum := asSlice(s["enum"]); len(enum) > 0 {
		return enum[0]
	}
	switch s["type"] {
	case "object":
		out := map[string]any{}
		skip := otherBranches(s)
		deps, _ := s["dependentRequired"].(map[string]any)
		props, _ := s["properties"].(map[string]any)
		for _, p := range slices.Sorted(maps.Keys(props)) {
			if skip[p] || slices.ContainsFunc(asSlice(deps[p]), func(r any) bool { return skip[r.(string)] }) {
				continue
			}
			out[p] = w.gen(w.resolve(props[p]), p)
		}
		return out
	case "array":
		items := w.resolve(s["items"])
		if enum := asSlice(items["enum"]); len(enum) > 0 {
			return slices.Clone(enum)
		}
		return []any{w.gen(items, name)}
	case "string":
		n := 1
		if m, ok := s["minLength"].(float64); ok {
			n = max(n, int(m))
		}
		return strings.Repeat("a", n)
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	}
	return map[string]any{}
}

func (w *walker) freshKey() string {
	w.keys++
	return fmt.Sprintf("walk-%d-%d", w.now.UnixNano(), w.keys)
}

// violation is one constraint broken: what, and how to break it in a copy
// of the valid instance.
type violation struct {
	what  string
	apply func(any) any
	// annotation: the constraint is a format, which JSON Schema 2020-12
	// (and the document's validator) treats as an annotation; the server
	// holds to it all the same.
	annotation bool
}

// violations returns a violation of every constraint of s that v, the
// valid instance at path, meets, recursively.
func (w *walker) violations(s map[string]any, v any, path []any) []violation {
	s = w.resolve(s)
	at := pathString(path)
	var out []violation
	switch val := v.(type) {
	case map[string]any:
		for _, r := range asSlice(s["required"]) {
			out = append(out, violation{what: fmt.Sprintf("%s: required %s missing", at, r), apply: edit(path, func(o any) any {
				delete(o.(map[string]any), r.(string))
				return o
			})})
		}
		for _, kw := range []string{"anyOf", "oneOf"} {
			var all []string
			for _, br := range asSlice(s[kw]) {
				for _, r := range asSlice(br.(map[string]any)["required"]) {
					all = append(all, r.(string))
				}
			}
			if len(all) > 0 {
				out = append(out, violation{what: fmt.Sprintf("%s: none of %s (%s)", at, kw, strings.Join(all, ", ")), apply: edit(path, func(o any) any {
					for _, r := range all {
						delete(o.(map[string]any), r)
					}
					return o
				})})
			}
			// A branch's own property constraints, on the property it requires.
			for _, br := range asSlice(s[kw]) {
				bp, _ := br.(map[string]any)["properties"].(map[string]any)
				for p, ps := range bp {
					others := slices.DeleteFunc(slices.Clone(all), func(x string) bool { return x == p })
					for _, sv := range w.scalarViolations(ps.(map[string]any), val[p]) {
						out = append(out, violation{what: fmt.Sprintf("%s.%s: %s, and no other %s branch", at, p, sv.what, kw), apply: edit(path, func(o any) any {
							m := o.(map[string]any)
							for _, x := range others {
								delete(m, x)
							}
							m[p] = sv.value
							return o
						})})
					}
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		if deps, ok := s["dependentRequired"].(map[string]any); ok {
			for p, reqs := range deps {
				out = append(out, violation{what: fmt.Sprintf("%s: %s without %v", at, p, reqs), apply: edit(path, func(o any) any {
					m := o.(map[string]any)
					m[p] = w.gen(w.resolve(props[p]), p)
					for _, r := range asSlice(reqs) {
						delete(m, r.(string))
					}
					return o
				})})
			}
		}
		if s["additionalProperties"] == false {
			out = append(out, violation{what: at + ": an unknown property", apply: edit(path, func(o any) any {
				o.(map[string]any)["zz_unknown"] = 1
				return o
			})})
		}
		for _, p := range slices.Sorted(maps.Keys(val)) {
			if ps, ok := props[p]; ok {
				out = append(out, w.violations(w.resolve(ps), val[p], append(slices.Clone(path), p))...)
			}
		}
	case []any:
		if m, ok := s["minItems"].(float64); ok && m >= 1 {
			out = append(out, violation{what: fmt.Sprintf("%s: fewer than %v items", at, m), apply: set(path, val[:int(m)-1])})
		}
		if s["uniqueItems"] == true && len(val) > 0 {
			out = append(out, violation{what: at + ": a repeated item", apply: set(path, append(slices.Clone(val), val[0]))})
		}
		if len(val) > 0 {
			out = append(out, w.violations(w.resolve(s["items"]), val[0], append(slices.Clone(path), 0))...)
		}
	default:
		for _, sv := range w.scalarViolations(s, v) {
			out = append(out, violation{at + ": " + sv.what, set(path, sv.value), sv.annotation})
		}
	}
	return out
}

type scalarViolation struct {
	what       string
	value      any
	annotation bool
}

// notMatching are tried in turn for a string that a pattern refuses; none
// is blank, which the server would read as absent.
var notMatching = []string{"!", "a\nb", "not valid", ""}

// scalarViolations returns a value breaking each of s's scalar
// constraints, given valid, a value meeting them.
func (w *walker) scalarViolations(s map[string]any, valid any) []scalarViolation {
	s = w.resolve(s)
	var out []scalarViolation
	pattern, _ := s["pattern"].(string)
	var re *regexp.Regexp
	if pattern != "" {
		re = regexp.MustCompile(pattern)
	}
	if m, ok := s["maxLength"].(float64); ok {
		n := int(m) + 1
		str := fmt.Sprint(valid)
		var long string
		for _, c := range []string{strings.Repeat("a", n), str + strings.Repeat("a", max(0, n-len([]rune(str))))} {
			if re == nil || re.MatchString(c) {
				long = c
				break
			}
		}
		require.NotEmpty(w.t, long, "no string over maxLength %d matches %s", n-1, pattern)
		out = append(out, scalarViolation{fmt.Sprintf("over maxLength %d", n-1), long, false})
	}
	if m, ok := s["minLength"].(float64); ok && m >= 1 {
		out = append(out, scalarViolation{fmt.Sprintf("under minLength %v", m), strings.Repeat("a", int(m)-1), false})
	}
	if re != nil {
		bad := slices.IndexFunc(notMatching, func(c string) bool { return !re.MatchString(c) })
		require.GreaterOrEqual(w.t, bad, 0, "every candidate matches %s", pattern)
		out = append(out, scalarViolation{"not matching " + pattern, notMatching[bad], false})
	}
	if enum := asSlice(s["enum"]); len(enum) > 0 && s["type"] == "string" {
		out = append(out, scalarViolation{"outside the enum", "zz_not_in_enum", false})
	}
	if m, ok := s["minimum"].(float64); ok {
		out = append(out, scalarViolation{fmt.Sprintf("below minimum %v", m), m - 1, false})
	}
	if m, ok := s["maximum"].(float64); ok {
		out = append(out, scalarViolation{fmt.Sprintf("above maximum %v", m), m + 1, false})
	}
	if s["format"] == "date-time" {
		out = append(out, scalarViolation{"not a date-time", "tomorrow", true})
	}
	return out
}

// edit returns a change of the value at path; set one that replaces it.
func edit(path []any, f func(any) any) func(any) any {
	return func(root any) any {
		if len(path) == 0 {
			return f(root)
		}
		parent := root
		for _, p := range path[:len(path)-1] {
			parent = step(parent, p)
		}
		last := path[len(path)-1]
		switch c := parent.(type) {
		case map[string]any:
			c[last.(string)] = f(c[last.(string)])
		case []any:
			c[last.(int)] = f(c[last.(int)])
		}
		return root
	}
}

func set(path []any, v any) func(any) any {
	return edit(path, func(any) any { return deepCopy(v) })
}

func step(v any, p any) any {
	if k, ok := p.(string); ok {
		return v.(map[string]any)[k]
	}
	return v.([]any)[p.(int)]
}

func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		case int:
			b.WriteString("[" + strconv.Itoa(p) + "]")
		}
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func TestDocument_OnlyItsMediaTypesAdmitted(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for accept, want := range map[string]int{
		"*/*":                                     http.StatusOK,
		"application/*":                           http.StatusOK,
		"application/problem+json":                http.StatusOK,
		"text/html, application/json;q=0.1":       http.StatusOK,
		"APPLICATION/JSON":                        http.StatusOK,
		"application/json;q=0":                    http.StatusNotAcceptable,
		"text/html, application/xml":              http.StatusNotAcceptable,
		"application/json;q=0, text/*;q=1":        http.StatusNotAcceptable,
		"application/problem+json;q=0.0, image/*": http.StatusNotAcceptable,
	} {
		a := b.do(t, http.MethodGet, "/v1/notifications", nil, b.shopKey, "Accept: "+accept)
		require.Equal(t, want, a.status, "Accept: %s: %s", accept, a.body)
		if want == http.StatusNotAcceptable {
			require.Equal(t, CodeNotAcceptable, a.problem(t).Code)
		}
	}
	// Without a key the answer is 401 whatever the types: nothing of the
	// request is judged before the key.
	a := b.do(t, http.MethodPost, "/v1/notifications", "{}", "", "Accept: text/html", "Content-Type: text/plain")
	require.Equal(t, http.StatusUnauthorized, a.status)

	body, err := json.Marshal(intent("", "ct-1"))
	require.NoError(t, err)
	for ct, want := range map[string]int{
		"application/json; charset=UTF-8":  http.StatusCreated,
		"text/json":                        http.StatusUnsupportedMediaType,
		"application/json; charset=utf-16": http.StatusUnsupportedMediaType,
	} {
		a := b.do(t, http.MethodPost, "/v1/notifications", body, b.shopKey, "Content-Type: "+ct)
		require.Equal(t, want, a.status, "Content-Type: %s: %s", ct, a.body)
		if want == http.StatusUnsupportedMediaType {
			require.Equal(t, CodeUnsupportedMediaType, a.problem(t).Code)
		}
	}
	// No type at all: refused too (curl -d sends form data, a bare client
	// nothing).
	req, err := http.NewRequest(http.MethodPost, b.http.URL+"/v1/notifications", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.shopKey)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	// A cancel without a body needs no type.
	var rc Receipt
	a = b.do(t, http.MethodPost, "/v1/notifications", body, b.shopKey)
	a.json(t, &rc)
	a = b.do(t, http.MethodPost, "/v1/notifications/"+rc.NotificationID+"/cancel", nil, b.shopKey)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
}
