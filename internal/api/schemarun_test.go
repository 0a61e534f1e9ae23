package api

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	"github.com/pb33f/libopenapi/renderer"
	"github.com/stretchr/testify/require"
)

// The schema run generates requests from the served document, at random
// from a seed: positive cases are valid by every schema and constraint the
// document states (leaf values rendered by libopenapi's mock renderer, the
// shape chosen by the run: which optional properties, which oneOf and
// anyOf branches, how many items), and each is sent with negatives made
// from it by breaking exactly one documented constraint (type, required,
// enum, pattern, minLength, maxLength, minimum, maximum, minItems,
// uniqueItems, additionalProperties, dependentRequired, oneOf, format).
// The server must answer no 5xx, accept every positive (a 404 for an id
// the producer has none of is an answer, not a refusal) and refuse every
// negative with 400, 413 or 415 (in a batch: the broken intent's result).
// The document's validator must agree that each negative is one.
//
// What a description states and a schema cannot is the run's to respect
// in positives (semantic below): a phone number libphonenumber calls
// valid, content and addresses for the listed channels only, a schedule
// in range, a fresh idempotency key, the key's own producer, a cursor this
// API returned, no template (a positive would need one published first).
//
// The seed is -schemarun.seed, else HERALD_SCHEMARUN_SEED, else 1; a
// failure names it.

var schemaRunSeed = flag.Int64("schemarun.seed", 0, "the schema run's seed (0: $HERALD_SCHEMARUN_SEED, else 1)")

// schemaRunRounds is how many times the run visits every operation; each
// visit is a positive case and schemaRunNegatives negatives.
const (
	schemaRunRounds    = 30
	schemaRunNegatives = 2
)

// schemaRunPhones are numbers libphonenumber calls valid, in the forms the
// document's pattern allows.
var schemaRunPhones = []string{
	"+14155550123", "+1 (415) 555-0123", "+1.415.555.0124", "+442079460958", "+44 20 7946 0959",
	"+33142685300", "+49 30 901820", "+81312345678", "+5511987654321", "+61 2 9876 5432",
}

func schemaRunSeedValue(t *testing.T) int64 {
	if *schemaRunSeed != 0 {
		return *schemaRunSeed
	}
	if v := os.Getenv("HERALD_SCHEMARUN_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "HERALD_SCHEMARUN_SEED")
		return n
	}
	return 1
}

// schemaRun is one run's state.
type schemaRun struct {
	t      *testing.T
	b      *testBundle
	doc    map[string]any
	seed   int64
	rnd    *rand.Rand
	mock   *renderer.SchemaRenderer
	now    time.Time
	serial int

	notifications []string // ids accepted so far
	users         []string // user ids put so far
	cursor        string   // the last list page's next
	subscribed    bool     // a callback subscription was put

	positives, negatives, serverErrors int
	byKind                             map[string]int
	disagreements                      []string
}

func TestDocument_SchemaRunAgreesWithTheServer(t *testing.T) {
	t.Parallel()
	seed := schemaRunSeedValue(t)
	b := setup(t, func(c *Config) { c.MaxBodyBytes = 512 << 10 })
	served := b.do(t, http.MethodGet, "/openapi.json", nil, "")
	require.Equal(t, http.StatusOK, served.status)
	// A dictionary that does not exist: the renderer's words are random
	// letters, the same on every machine.
	mock := renderer.CreateRendererUsingDictionary(filepath.Join(t.TempDir(), "no-dictionary"))
	mock.SetSeed(seed)
	r := &schemaRun{t: t, b: b, seed: seed, rnd: rand.New(rand.NewSource(seed)), mock: mock,
		now: time.Now().UTC(), byKind: map[string]int{}}
	require.NoError(t, json.Unmarshal(served.body, &r.doc))

	rounds := schemaRunRounds
	if testing.Short() {
		rounds = 5
	}
	start := time.Now()
	for range rounds {
		for _, op := range docOperations(t, served.body) {
			r.operation(op)
		}
	}
	kinds := slices.Sorted(maps.Keys(r.byKind))
	var counts []string
	for _, k := range kinds {
		counts = append(counts, fmt.Sprintf("%s %d", k, r.byKind[k]))
	}
	t.Logf("seed %d: %d positive and %d negative cases in %v (negatives by constraint: %s); %d server errors, %d disagreements",
		seed, r.positives, r.negatives, time.Since(start).Round(time.Millisecond), strings.Join(counts, ", "),
		r.serverErrors, len(r.disagreements))
	if len(r.disagreements) > 0 {
		t.Errorf("seed %d: %d disagreements between the document and the server:\n  %s", seed, len(r.disagreements),
			strings.Join(r.disagreements[:min(len(r.disagreements), 30)], "\n  "))
	}
}

// runCase is one request.
type runCase struct {
	values map[string]string // parameters by name
	body   any               // nil: none
}

func (c runCase) clone() runCase {
	out := runCase{values: maps.Clone(c.values)}
	if c.body != nil {
		out.body = cloneJSON(c.body)
	}
	return out
}

// operation sends one positive case of op and negatives made from it.
func (r *schemaRun) operation(op *docOperation) {
	raw := r.opSchema(op)
	var bodySchema map[string]any
	if rb, ok := raw["requestBody"].(map[string]any); ok {
		bodySchema = r.resolve(rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"])
	}
	params := map[string]map[string]any{}
	var names []string
	for _, p := range asSlice(raw["parameters"]) {
		p := p.(map[string]any)
		params[p["name"].(string)] = p
		names = append(names, p["name"].(string))
	}
	if bodySchema == nil && len(params) == 0 {
		return // nothing to generate: the plain request is other tests'
	}

	c := runCase{values: map[string]string{}}
	for _, name := range names {
		if v, ok := r.paramValue(op, params[name]); ok {
			c.values[name] = v
		}
	}
	if bodySchema != nil {
		switch op.OperationID {
		case "cancelNotification":
			if r.rnd.Intn(2) == 0 {
				c.body = r.gen(bodySchema, "")
			}
		default:
			c.body = r.gen(bodySchema, "")
		}
		r.semanticBody(op.OperationID, c.body)
		if v, ok := params["Idempotency-Key"]; ok && v != nil && r.rnd.Intn(3) == 0 {
			body := c.body.(map[string]any)
			c.values["Idempotency-Key"] = body["idempotency_key"].(string)
			delete(body, "idempotency_key")
		}
	}
	r.positive(op, c)

	// Negatives: every constraint the positive meets, a few of them broken.
	type candidate struct {
		kind, what string
		apply      func(runCase) runCase
		annotation bool
	}
	var cands []candidate
	if c.body != nil {
		for _, v := range r.violations(bodySchema, c.body, nil) {
			cands = append(cands, candidate{v.kind, v.what, func(rc runCase) runCase {
				rc.body = v.apply(rc.body)
				return rc
			}, v.kind == "format"})
		}
	}
	for _, name := range names {
		s := r.resolve(params[name]["schema"])
		valid, ok := c.values[name]
		if !ok {
			valid = fmt.Sprint(r.leaf(s, name))
		}
		for _, v := range r.scalarBreaks(s, valid, true) {
			if params[name]["in"] == "path" && v.value == "" {
				continue // an empty segment routes elsewhere
			}
			cands = append(cands, candidate{v.kind, "parameter " + name + ": " + v.what, func(rc runCase) runCase {
				rc.values[name] = fmt.Sprint(v.value)
				if name == "Idempotency-Key" && rc.body != nil {
					delete(rc.body.(map[string]any), "idempotency_key")
				}
				return rc
			}, v.kind == "format"}) // as in a body: a format is an annotation to the document's validator
		}
	}
	for range min(schemaRunNegatives, len(cands)) {
		i := r.rnd.Intn(len(cands))
		cand := cands[i]
		cands = slices.Delete(cands, i, i+1)
		bad := cand.apply(c.clone())
		r.negative(op, bad, cand.kind, cand.what, cand.annotation)
	}
}

// opSchema returns op's raw operation object.
func (r *schemaRun) opSchema(op *docOperation) map[string]any {
	return r.doc["paths"].(map[string]any)[op.path].(map[string]any)[strings.ToLower(op.method)].(map[string]any)
}

// paramValue returns a valid value of parameter p, or false to leave it
// out: ids and cursors are ones the server gave.
func (r *schemaRun) paramValue(op *docOperation, p map[string]any) (string, bool) {
	name := p["name"].(string)
	switch name {
	case "id":
		if len(r.notifications) == 0 || r.rnd.Intn(5) == 0 {
			return fmt.Sprintf("01a22321-%04x-7000-8000-%012x", r.rnd.Intn(1<<16), r.rnd.Int63n(1<<48)), true
		}
		return r.notifications[r.rnd.Intn(len(r.notifications))], true
	case "after":
		if r.cursor == "" || r.rnd.Intn(2) == 0 {
			return "", false
		}
		return r.cursor, true
	case "user_id":
		if op.OperationID == "deleteRecipient" && len(r.users) > 0 && r.rnd.Intn(4) != 0 {
			return r.users[r.rnd.Intn(len(r.users))], true
		}
	case "Idempotency-Key":
		return "", false // set from the body, when moved
	}
	if p["required"] != true && r.rnd.Intn(2) == 0 {
		return "", false
	}
	return fmt.Sprint(r.leaf(r.resolve(p["schema"]), name)), true
}

// send sends c to op and returns the answer.
func (r *schemaRun) send(op *docOperation, c runCase) answer {
	path := op.path
	q := url.Values{}
	var headers []string
	raw := r.opSchema(op)
	for _, p := range asSlice(raw["parameters"]) {
		p := p.(map[string]any)
		name := p["name"].(string)
		v, ok := c.values[name]
		if !ok {
			continue
		}
		switch p["in"] {
		case "path":
			path = strings.ReplaceAll(path, "{"+name+"}", url.PathEscape(v))
		case "query":
			q.Set(name, v)
		case "header":
			headers = append(headers, name+": "+v)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body any
	if c.body != nil {
		j, err := json.Marshal(c.body)
		require.NoError(r.t, err)
		body = j
	}
	return r.b.do(r.t, op.method, path, body, r.b.shopKey, headers...)
}

func (r *schemaRun) disagree(format string, args ...any) {
	r.disagreements = append(r.disagreements, fmt.Sprintf(format, args...))
}

func (r *schemaRun) positive(op *docOperation, c runCase) {
	r.positives++
	a := r.send(op, c)
	body, _ := json.Marshal(c.body)
	switch {
	case a.status >= 500:
		r.serverErrors++
		r.disagree("%s positive %v %s: %d %s", op.OperationID, c.values, body, a.status, a.body)
		return
	case a.status == http.StatusNotFound && (c.values["id"] != "" || c.values["user_id"] != ""):
		return // an id the producer has none of
	case a.status >= 300:
		r.disagree("%s positive refused %v %s: %d %s", op.OperationID, c.values, body, a.status, a.body)
		return
	}
	switch op.OperationID {
	case "submitNotification":
		var rc Receipt
		a.json(r.t, &rc)
		r.notifications = append(r.notifications, rc.NotificationID)
	case "submitNotifications":
		var out runBatchAnswer
		a.json(r.t, &out)
		for i, res := range out.Results {
			if res.Status >= 300 {
				r.disagree("%s positive intent %d refused %s: %s", op.OperationID, i, body, a.body)
				continue
			}
			r.notifications = append(r.notifications, res.Receipt.NotificationID)
		}
	case "listNotifications":
		var l List
		a.json(r.t, &l)
		r.cursor = l.Next
	case "putRecipient":
		r.users = append(r.users, c.values["user_id"])
	case "putCallbackSubscription":
		r.subscribed = true
	}
}

// runBatchAnswer is a batch's answer as the run reads it.
type runBatchAnswer struct {
	Results []BatchResult `json:"results"`
}

func (r *schemaRun) negative(op *docOperation, c runCase, kind, what string, annotation bool) {
	r.negatives++
	r.byKind[kind]++
	body, _ := json.Marshal(c.body)
	if !annotation && r.documentAccepts(op, c) {
		r.disagree("%s negative %q is one the document allows (the run is wrong): %v %s", op.OperationID, what, c.values, body)
	}
	a := r.send(op, c)
	switch {
	case a.status >= 500:
		r.serverErrors++
		r.disagree("%s negative %q: %d %s", op.OperationID, what, a.status, a.body)
	case slices.Contains([]int{400, 413, 415}, a.status):
	case op.OperationID == "submitNotifications" && a.status == http.StatusOK:
		var out runBatchAnswer
		a.json(r.t, &out)
		refused := slices.ContainsFunc(out.Results, func(res BatchResult) bool { return res.Status == 400 || res.Status == 413 })
		if !refused {
			r.disagree("%s negative %q accepted: %s → %s", op.OperationID, what, body, a.body)
		}
	default:
		r.disagree("%s negative %q accepted: %v %s → %d %s", op.OperationID, what, c.values, body, a.status, a.body)
	}
}

// documentAccepts reports whether the document's validator takes c as a
// request of op.
func (r *schemaRun) documentAccepts(op *docOperation, c runCase) bool {
	path := op.path
	q := url.Values{}
	hdr := http.Header{}
	for _, p := range asSlice(r.opSchema(op)["parameters"]) {
		p := p.(map[string]any)
		name := p["name"].(string)
		v, ok := c.values[name]
		if !ok {
			continue
		}
		switch p["in"] {
		case "path":
			path = strings.ReplaceAll(path, "{"+name+"}", url.PathEscape(v))
		case "query":
			q.Set(name, v)
		case "header":
			hdr.Set(name, v)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body *strings.Reader
	if c.body != nil {
		j, err := json.Marshal(c.body)
		require.NoError(r.t, err)
		body = strings.NewReader(string(j))
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(op.method, r.b.http.URL+path, body)
	require.NoError(r.t, err)
	req.Header = hdr
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+r.b.shopKey)
	v := openAPIValidator(r.t)
	validatorMu.Lock()
	defer validatorMu.Unlock()
	ok, _ := v.ValidateHttpRequestSync(req)
	return ok
}

// resolve follows $ref and merges allOf.
func (r *schemaRun) resolve(v any) map[string]any { return resolveSchema(r.doc, v) }

// infeasible are properties a positive leaves out: a template must be
// published by the producer before an intent names it, and data goes only
// with a template.
var infeasible = map[string]bool{"template": true, "data": true}

// gen returns a random valid instance of s, the property name's value.
func (r *schemaRun) gen(s map[string]any, name string) any {
	s = r.resolve(s)
	if enum := asSlice(s["enum"]); len(enum) > 0 {
		return enum[r.rnd.Intn(len(enum))]
	}
	switch s["type"] {
	case "object":
		return r.genObject(s)
	case "array":
		items := r.resolve(s["items"])
		if enum := asSlice(items["enum"]); len(enum) > 0 && s["uniqueItems"] == true {
			pick := slices.Clone(enum)
			r.rnd.Shuffle(len(pick), func(i, j int) { pick[i], pick[j] = pick[j], pick[i] })
			n := 1 + r.rnd.Intn(len(pick))
			return pick[:n]
		}
		n := 1 + r.rnd.Intn(3)
		if m, ok := s["minItems"].(float64); ok {
			n = max(n, int(m))
		}
		out := make([]any, 0, n)
		for range n {
			v := r.gen(items, name)
			if s["uniqueItems"] == true && slices.Contains(out, v) {
				continue
			}
			out = append(out, v)
		}
		return out
	case nil:
		if ex := asSlice(s["examples"]); len(ex) > 0 && r.rnd.Intn(2) == 0 {
			return cloneJSON(ex[r.rnd.Intn(len(ex))])
		}
		return map[string]any{"n": float64(r.rnd.Intn(1000)), "s": r.mock.RandomWord(3, 10, 0)}
	}
	return r.leaf(s, name)
}

func (r *schemaRun) genObject(s map[string]any) map[string]any {
	props, _ := s["properties"].(map[string]any)
	include := map[string]bool{}
	for _, p := range asSlice(s["required"]) {
		include[p.(string)] = true
	}
	// oneOf: a feasible branch; the others' own required properties out.
	exclude := map[string]bool{}
	if branches := asSlice(s["oneOf"]); len(branches) > 0 {
		var feasible []map[string]any
		for _, br := range branches {
			br := br.(map[string]any)
			if !slices.ContainsFunc(asSlice(br["required"]), func(p any) bool { return infeasible[p.(string)] }) {
				feasible = append(feasible, br)
			}
		}
		chosen := feasible[r.rnd.Intn(len(feasible))]
		for _, br := range branches {
			for _, p := range asSlice(br.(map[string]any)["required"]) {
				exclude[p.(string)] = true
			}
		}
		for _, p := range asSlice(chosen["required"]) {
			include[p.(string)], exclude[p.(string)] = true, false
		}
	}
	// anyOf: one or more branches, with their property constraints.
	if branches := asSlice(s["anyOf"]); len(branches) > 0 {
		for i, br := range branches {
			if i > 0 && r.rnd.Intn(2) == 0 && len(include) > 0 {
				continue
			}
			br := br.(map[string]any)
			for _, p := range asSlice(br["required"]) {
				include[p.(string)] = true
			}
			if bp, ok := br["properties"].(map[string]any); ok {
				props = mergeSchemas(map[string]any{"properties": props}, map[string]any{"properties": bp})["properties"].(map[string]any)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(props)) {
		if !include[p] && !exclude[p] && !infeasible[p] && r.rnd.Intn(2) == 0 {
			include[p] = true
		}
	}
	out := map[string]any{}
	for _, p := range slices.Sorted(maps.Keys(include)) {
		if include[p] && !exclude[p] && !infeasible[p] {
			out[p] = r.gen(r.resolve(props[p]), p)
		}
	}
	return out
}

// leaf renders a scalar of s with the mock renderer: an example now and
// then, else a value from its type, format, pattern and bounds.
func (r *schemaRun) leaf(s map[string]any, name string) any {
	if enum := asSlice(s["enum"]); len(enum) > 0 {
		return enum[r.rnd.Intn(len(enum))]
	}
	switch s["type"] {
	case "boolean":
		return r.rnd.Intn(2) == 0
	case "integer", "number":
		lo, hi := int64(1), int64(100)
		if m, ok := s["minimum"].(float64); ok {
			lo = int64(m)
		}
		if m, ok := s["maximum"].(float64); ok {
			hi = int64(m)
		}
		return float64(r.mock.RandomInt(lo, hi+1))
	}
	if ex := asSlice(s["examples"]); len(ex) > 0 && r.rnd.Intn(4) == 0 {
		return cloneJSON(ex[r.rnd.Intn(len(ex))])
	}
	if s["format"] == "date-time" {
		return r.now.Add(time.Duration(r.rnd.Intn(3600)) * time.Second).Format(time.RFC3339)
	}
	bs := &base.Schema{Type: []string{"string"}, Format: fmt.Sprint(s["format"])}
	if bs.Format == "<nil>" {
		bs.Format = ""
	}
	if p, ok := s["pattern"].(string); ok && p != "\\S" {
		bs.Pattern = p
	}
	lo, hi := int64(1), int64(24)
	if m, ok := s["minLength"].(float64); ok {
		lo = int64(m)
	}
	if m, ok := s["maxLength"].(float64); ok {
		hi = min(hi, int64(m))
	}
	n := lo + r.rnd.Int63n(max(1, hi-lo+1))
	bs.MinLength, bs.MaxLength = &n, &hi
	re := runRegexp(s)
	for range 20 {
		v, ok := r.mock.RenderSchema(bs).(string)
		if ok && validText(v) && strings.TrimSpace(v) != "" && (re == nil || re.MatchString(v)) &&
			int64(len([]rune(v))) <= runMaxLength(s) && int64(len([]rune(v))) >= lo {
			return v
		}
	}
	r.t.Fatalf("the renderer made no valid %s for %v", name, s)
	return nil
}

func runRegexp(s map[string]any) *regexp.Regexp {
	if p, ok := s["pattern"].(string); ok {
		return regexp.MustCompile(p)
	}
	return nil
}

func runMaxLength(s map[string]any) int64 {
	if m, ok := s["maxLength"].(float64); ok {
		return int64(m)
	}
	return 1 << 20
}

// semanticBody makes a generated body meet what the descriptions state
// and the schemas cannot.
func (r *schemaRun) semanticBody(opID string, body any) {
	switch opID {
	case "submitNotification":
		r.semanticIntent(body.(map[string]any))
	case "submitNotifications":
		for _, in := range body.(map[string]any)["intents"].([]any) {
			r.semanticIntent(in.(map[string]any))
		}
	case "putRecipient":
		m := body.(map[string]any)
		if _, ok := m["phone"]; ok {
			m["phone"] = schemaRunPhones[r.rnd.Intn(len(schemaRunPhones))]
		}
	case "putCallbackSubscription":
		// A secret that decodes to a key of 16 bytes or more, and a URL
		// without control characters, as the descriptions state.
		m := body.(map[string]any)
		m["url"] = "https://shop.example.com/herald/status"
		if _, ok := m["secret"]; ok {
			m["secret"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		}
	}
}

func (r *schemaRun) semanticIntent(in map[string]any) {
	r.serial++
	in["idempotency_key"] = fmt.Sprintf("run-%d-%d-%d", r.seed, r.now.UnixNano(), r.serial)
	if _, ok := in["producer"]; ok {
		in["producer"] = "shop"
	}
	if !r.subscribed { // a callback_url needs the producer's subscription
		delete(in, "callback_url")
	}
	if _, ok := in["campaign"]; ok { // a campaign's intents share one send_at: one campaign each
		in["campaign"] = fmt.Sprintf("run-%d-%d", r.now.UnixNano(), r.serial)
	}
	channels := map[string]bool{}
	for _, c := range in["channels"].([]any) {
		channels[c.(string)] = true
	}
	intent := r.resolve(map[string]any{"$ref": "#/components/schemas/Intent"})
	props := intent["properties"].(map[string]any)
	// Addresses for listed channels only, and at least one recipient.
	aud := in["audience"].(map[string]any)
	for k := range aud {
		if k != "user_ids" && !channels[k] {
			delete(aud, k)
		}
	}
	if sms, ok := aud["sms"].([]any); ok {
		for i := range sms {
			sms[i] = schemaRunPhones[r.rnd.Intn(len(schemaRunPhones))]
		}
		aud["sms"] = slices.Compact(sms)
	}
	if len(aud) == 0 {
		aud["user_ids"] = []any{strconv.Itoa(r.rnd.Intn(1000))}
	}
	// Content for each listed channel, and only those.
	contentSchema := r.resolve(props["content"])
	content, _ := in["content"].(map[string]any)
	if content == nil {
		content = map[string]any{}
	}
	for k := range content {
		if !channels[k] {
			delete(content, k)
		}
	}
	for _, c := range in["channels"].([]any) { // in order: the run is the seed's
		c := c.(string)
		if _, ok := content[c]; !ok {
			content[c] = r.gen(r.resolve(contentSchema["properties"].(map[string]any)[c]), c)
		}
	}
	in["content"] = content
	// A sender only with sms, and the one approved for the run's producer
	// (herald.sender_ids, which no schema can name); a flash SMS only with
	// sms.
	if _, ok := in["from_sender"]; ok {
		if channels["sms"] {
			in["from_sender"] = "ACME"
		} else {
			delete(in, "from_sender")
		}
	}
	if in["message_type"] == "FLASH_SMS" && !channels["sms"] {
		delete(in, "message_type")
	}
	// A schedule in range: occurred in the past, sent within a day,
	// expiring after it is sent.
	send := r.now.Add(time.Duration(60+r.rnd.Intn(86400)) * time.Second)
	if _, ok := in["occurred_at"]; ok {
		in["occurred_at"] = r.now.Add(-time.Duration(r.rnd.Intn(3600)) * time.Second).Format(time.RFC3339)
	}
	_, campaign := in["campaign"]
	if _, ok := in["send_at"]; ok || campaign {
		in["send_at"] = send.Format(time.RFC3339)
	}
	if _, ok := in["expires_at"]; ok {
		in["expires_at"] = send.Add(time.Duration(3600+r.rnd.Intn(86400)) * time.Second).Format(time.RFC3339)
	}
}

// runBreak is one constraint of a body broken.
type runBreak struct {
	kind, what string
	apply      func(any) any
}

// violations returns a break of every constraint of s that v, the valid
// instance at path, meets, recursively.
func (r *schemaRun) violations(s map[string]any, v any, path []any) []runBreak {
	s = r.resolve(s)
	at := runPath(path)
	var out []runBreak
	if t, ok := s["type"].(string); ok {
		out = append(out, runBreak{"type", at + ": not a " + t, runSet(path, wrongType(t))})
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, req := range asSlice(s["required"]) {
			out = append(out, runBreak{"required", fmt.Sprintf("%s: required %s missing", at, req), runEdit(path, func(o any) any {
				delete(o.(map[string]any), req.(string))
				return o
			})})
		}
		if branches := asSlice(s["anyOf"]); len(branches) > 0 {
			var all []string
			for _, br := range branches {
				for _, p := range asSlice(br.(map[string]any)["required"]) {
					all = append(all, p.(string))
				}
			}
			out = append(out, runBreak{"required", fmt.Sprintf("%s: none of %v", at, all), runEdit(path, func(o any) any {
				for _, p := range all {
					delete(o.(map[string]any), p)
				}
				return o
			})})
		}
		if branches := asSlice(s["oneOf"]); len(branches) > 0 {
			out = append(out, runBreak{"oneOf", at + ": content and a template both", runEdit(path, func(o any) any {
				m := o.(map[string]any)
				m["template"] = map[string]any{"name": "order.shipped"}
				return o
			})})
		}
		if deps, ok := s["dependentRequired"].(map[string]any); ok {
			for p, reqs := range deps {
				out = append(out, runBreak{"dependentRequired", fmt.Sprintf("%s: %s without %v", at, p, reqs), runEdit(path, func(o any) any {
					m := o.(map[string]any)
					m[p] = map[string]any{"order": 9.0}
					for _, x := range asSlice(reqs) {
						delete(m, x.(string))
					}
					return o
				})})
			}
		}
		if s["additionalProperties"] == false {
			out = append(out, runBreak{"additionalProperties", at + ": an unknown property", runEdit(path, func(o any) any {
				o.(map[string]any)["zz_unknown"] = 1.0
				return o
			})})
		}
		for _, p := range slices.Sorted(maps.Keys(val)) {
			ps, ok := props[p]
			if !ok {
				continue
			}
			out = append(out, r.violations(r.resolve(ps), val[p], append(slices.Clone(path), p))...)
		}
	case []any:
		if m, ok := s["minItems"].(float64); ok && m >= 1 && len(val) == int(m) {
			out = append(out, runBreak{"minItems", fmt.Sprintf("%s: fewer than %v items", at, m), runSet(path, val[:int(m)-1])})
		}
		if s["uniqueItems"] == true && len(val) > 0 {
			out = append(out, runBreak{"uniqueItems", at + ": a repeated item", runSet(path, append(slices.Clone(val), val[0]))})
		}
		if len(val) > 0 {
			i := r.rnd.Intn(len(val))
			out = append(out, r.violations(r.resolve(s["items"]), val[i], append(slices.Clone(path), i))...)
		}
	default:
		for _, b := range r.scalarBreaks(s, v, false) {
			out = append(out, runBreak{b.kind, at + ": " + b.what, runSet(path, b.value)})
		}
	}
	return out
}

func wrongType(t string) any {
	switch t {
	case "string":
		return 12345.0
	case "integer":
		return 1.5
	case "number", "boolean":
		return "yes"
	case "array":
		return "not an array"
	}
	return []any{"not an object"}
}

type runScalarBreak struct {
	kind, what string
	value      any
}

// runNotMatching are strings a pattern may refuse; none is blank, which
// the server reads as absent.
var runNotMatching = []string{"!", "a\nb", "not valid", "a b", "x"}

// scalarBreaks returns a value breaking each of s's scalar constraints,
// given valid, a value meeting them. asText: the value is sent as text
// (a parameter), so a type break is a word where a number is wanted.
func (r *schemaRun) scalarBreaks(s map[string]any, valid any, asText bool) []runScalarBreak {
	var out []runScalarBreak
	re := runRegexp(s)
	if asText && (s["type"] == "integer" || s["type"] == "number") {
		out = append(out, runScalarBreak{"type", "not a number", "many"})
	}
	if m, ok := s["maxLength"].(float64); ok {
		n := int(m) + 1 + r.rnd.Intn(20)
		str := fmt.Sprint(valid)
		long := str + strings.Repeat("a", max(0, n-len([]rune(str))))
		if re == nil || re.MatchString(long) {
			out = append(out, runScalarBreak{"maxLength", fmt.Sprintf("over maxLength %v", m), long})
		}
	}
	if m, ok := s["minLength"].(float64); ok && m >= 2 {
		out = append(out, runScalarBreak{"minLength", fmt.Sprintf("under minLength %v", m), strings.Repeat("a", int(m)-1)})
	}
	if re != nil {
		var bad []string
		for _, c := range runNotMatching {
			if !re.MatchString(c) {
				bad = append(bad, c)
			}
		}
		if len(bad) > 0 {
			out = append(out, runScalarBreak{"pattern", "not matching " + re.String(), bad[r.rnd.Intn(len(bad))]})
		}
	}
	if enum := asSlice(s["enum"]); len(enum) > 0 && s["type"] == "string" {
		out = append(out, runScalarBreak{"enum", "outside the enum", "zz_" + r.mock.RandomWord(3, 8, 0)})
	}
	if m, ok := s["minimum"].(float64); ok {
		out = append(out, runScalarBreak{"minimum", fmt.Sprintf("below minimum %v", m), m - 1 - float64(r.rnd.Intn(5))})
	}
	if m, ok := s["maximum"].(float64); ok {
		out = append(out, runScalarBreak{"maximum", fmt.Sprintf("above maximum %v", m), m + 1 + float64(r.rnd.Intn(5))})
	}
	if s["format"] == "date-time" {
		bad := []string{"tomorrow", "2026-13-01T00:00:00Z", "2026-01-01 10:00"}
		out = append(out, runScalarBreak{"format", "not a date-time", bad[r.rnd.Intn(len(bad))]})
	}
	return out
}

func runEdit(path []any, f func(any) any) func(any) any {
	return func(root any) any {
		if len(path) == 0 {
			return f(root)
		}
		parent := root
		for _, p := range path[:len(path)-1] {
			if k, ok := p.(string); ok {
				parent = parent.(map[string]any)[k]
			} else {
				parent = parent.([]any)[p.(int)]
			}
		}
		switch c := parent.(type) {
		case map[string]any:
			k := path[len(path)-1].(string)
			c[k] = f(c[k])
		case []any:
			i := path[len(path)-1].(int)
			c[i] = f(c[i])
		}
		return root
	}
}

func runSet(path []any, v any) func(any) any {
	return runEdit(path, func(any) any { return cloneJSON(v) })
}

func runPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		}
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = cloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneJSON(e)
		}
		return out
	}
	return v
}
