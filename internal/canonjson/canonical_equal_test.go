package canonjson_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/harness/canonjsonref"
)

// trickyJSON are inputs where a hand-written JSON scanner can go wrong. Each
// must give exactly what the encoding/json reference gives.
var trickyJSON = []string{
	// Shapes and whitespace.
	``, ` `, `{}`, `[]`, ` { } `, "\t[\n]\r", `{"a":{},"b":[]}`, `[[[]],[{}]]`,
	`{"b":{"d":1,"c":2},"a":[{"y":1,"x":2}]}`, `{"a":1,"b":2}`, `{"b":1,"a":2}`,
	`{"a" : 1 , "b" :2}`, `[1 , 2]`, `{"pad":"xxxxxxxx"}`,
	// Not JSON.
	`{`, `}`, `[`, `]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`,
	`{"a" 1}`, `{1:2}`, `{'a':1}`, `[1 2]`, `1 2`, `{} {}`, `{}x`, `"a" "b"`, `nul`, `nulll`, `truex`,
	`True`, `-`, `--1`, `+1`, `01`, `-01`, `1.`, `.1`, `1.e3`, `1e`, `1e+`, `1E-`, `0x1`, `1_000`,
	`NaN`, `Infinity`, `"abc`, `"\"`, `"\x"`, `"\'"`, `"\u12"`, `"\u12G4"`, `"\U1234"`, "\"a\x01b\"",
	"\"tab\there\"", "\x00", "[1]\x00", "\xef\xbb\xbf{}", "\u00a0{}", "{}\v",
	// Strings.
	`"plain"`, `"\u00e9\/\u003c\t\u0001"`, `"\"\\\/\b\f\n\r\t"`, `"\u0022\u005c"`, `"\u007f"`,
	`"\ud800"`, `"\udc00"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	`"\ude00\ud83d"`, `"\ud83dx"`, `"\ud83d\"`, `"\ud83d\n"`, `"\uD83D\uDE00"`, `"\uffff"`, `"\ufffd"`,
	"\"\xff\"", "\"a\xffb\xfe\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "\"\xe2\x80\xa8\u2029\"",
	"\"\xf0\x9f\x98\"", "\"caf\xc3\xa9\"", "\"\xc3\"", "\"x\xff\\n\"", `"<&>"`, `"\u003c\u0026\u003e"`,
	// Not text: invalid UTF-8 and unpaired surrogate escapes, next to
	// backslashes that are not escapes of them.
	`"\\ud800"`, `"\\\ud800"`, `"\\\\ud800"`, `["ok","\ud800"]`, `{"b":"\ud800","a":"\u0000"}`,
	`"\u0000\ud800"`, `{"\ud800":"\u0000"}`, `"\ud800\ud800\udc00"`, `"\udbff\udfff"`, `"\ud800\\udc00"`,
	`{"a":{"b":[1,"\udfff"]}}`, "[\"\\n\xff\"]", "{\"k\":{\"\xc3\":1}}", `"\ud800`, `["\ud800",}`,
	// U+0000.
	`"\u0000"`, `["\u0000"]`, `{"\u0000":1}`, `{"a":{"b":["x","\u0000"]}}`, `{"a\u0000b":1,"a\u0000b":2}`,
	`{"\u0000":"\u0000"}`, `{"":"\u0000"}`, `{"":{"":[0,"\u0000"]}}`, `{".x":"\u0000"}`,
	// Duplicate keys and ordering.
	`{"a":1,"a":1}`, `{"a":{"k":1,"k":1}}`, `{"b":1,"a":2,"b":3,"a":4}`, `{"a":1,"\u0061":2}`,
	`{"a":1,"b":2,"a":3}`, `{"é":1,"e":2,"\u00e9":3}`, `{"z":1,"\u007a":2}`,
	`{"b":1,"a":2,"c":{"y":1,"x":2,"x":3}}`, `{"\ud800":1,"\udc00":2}`, "{\"\xff\":1,\"\xfe\":2}",
	`{"a\"b":1,"a":2,"a\\":3}`, `{"aa":1,"a":2,"":3,"a\n":4,"a\t":5}`, `[{"b":1,"a":2},{"d":1,"c":2}]`,
	`{"b":{"b":1,"a":2},"a":{"b":1,"a":2}}`, `{"k":[{"z":0,"y":0}],"j":{"x":{"w":1,"v":2}}}`,
	`{"a":1,"b":"\u0000","a":2}`, `{"a":1,"a":2,"b":"\u0000"}`, `{"a":1,"a":2,"b":1e99999}`,
	// Numbers.
	`0`, `-0`, `1.0`, `1e2`, `1E+2`, `-1.5e-3`, `12345678901234567890123`, `[1.0,1e2,-0]`,
	`1e999`, `1e1000`, `1e+0999`, `1e-0000999`, `1e-1000`, `[1e1000000]`, `1E1000`,
	`0.` + strings.Repeat("1", 998), `0.` + strings.Repeat("1", 999), `-` + strings.Repeat("9", 1000),
	strings.Repeat("9", 1001), `{"n":1e5000}`, `{"a":[0,1e5000]}`,
	// Literals.
	`true`, `false`, `null`, `[true,false,null]`, `{"t":true}`,
	// Errors after problems: invalid JSON wins.
	`["\u0000"`, `{"a":1,"a":2`, `[1e1000,`, `{"\u0000":1,}`,
}

// deepJSON returns n nested arrays (or objects) around inner.
func deepJSON(n int, object bool, inner string) string {
	if object {
		return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
	}
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func trickyJSONAll() []string {
	all := slices.Clone(trickyJSON)
	for _, n := range []int{63, 64, 65, 70} {
		for _, obj := range []bool{false, true} {
			for _, inner := range []string{`1`, `"s"`, `null`, `[]`, `{}`, `{"b":1,"a":"\u0000"}`, "\"x\xff\\u0000\"", `1e9999`, `[1,`, `1}`} {
				all = append(all, deepJSON(n, obj, inner))
			}
		}
	}
	all = append(all,
		deepJSON(10000, false, "1"), deepJSON(10001, false, "1"),
		deepJSON(9999, true, "[]"), deepJSON(10000, true, "[]"),
		`{"a":1,"b":`+deepJSON(70, false, "1")+`}`,
		`{"b":`+deepJSON(64, true, "1")+`,"a":1}`,
		`[`+deepJSON(63, true, `{"z":1,"y":2}`)+`]`,
	)
	return all
}

// errString returns err's message, "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// requireCanonicalJSONMatches checks Canonical, Repair and validJSON
// against the encoding/json reference for raw.
func requireCanonicalJSONMatches(t *testing.T, raw []byte) {
	t.Helper()
	want, wantErr := canonjsonref.Canonical(raw)
	got, gotErr := canonjson.Canonical(raw)
	require.Equal(t, errString(wantErr), errString(gotErr), "canonicalJSON(%q) error", raw)
	require.Equal(t, string(want), string(got), "canonicalJSON(%q)", raw)

	valid := json.Valid(raw)
	require.Equal(t, valid, canonjson.ValidJSON(raw), "validJSON(%q)", raw)

	// Repair (RawFields) is only given valid JSON.
	got, gotErr = canonjson.Repair(raw)
	if !valid {
		require.Error(t, gotErr, "non-strict walk of invalid %q", raw)
		return
	}
	want, wantErr = canonjsonref.Repair(raw)
	require.Equal(t, errString(wantErr), errString(gotErr), "non-strict walk(%q) error", raw)
	require.Equal(t, string(want), string(got), "non-strict walk(%q)", raw)
}

func TestCanonicalJSON_MatchesReference(t *testing.T) {
	t.Parallel()
	for _, in := range trickyJSONAll() {
		requireCanonicalJSONMatches(t, []byte(in))
	}
}

// FuzzCanonicalJSON compares Canonical, Repair and validJSON with the
// encoding/json reference on arbitrary input.
func FuzzCanonicalJSON(f *testing.F) {
	for _, in := range trickyJSONAll() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		requireCanonicalJSONMatches(t, raw)
	})
}

func TestJSONBSafeNumber_MatchesReference(t *testing.T) {
	t.Parallel()
	for _, lit := range []string{"0", "1e999", "1e1000", "1E-0999", "1e+00001000", "1.5", strings.Repeat("1", 1000), strings.Repeat("1", 1001), "-" + strings.Repeat("1", 999) + "e5"} {
		require.Equal(t, canonjsonref.JSONBSafeNumber(lit), canonjson.JSONBSafeNumber([]byte(lit)), lit)
	}
}

// trickyStrings stress marshalString: HTML characters, U+2028/9, control
// characters, invalid UTF-8.
var trickyStrings = []string{
	"", "plain", "<script>&amp;</script>", "\u2028\u2029", "a\u2028b", "\x00\x01\x1f\x7f",
	"\b\f\n\r\t", `"quoted" \back\slash`, "\xff", "a\xffb", "\xe2\x80", "\xe2\x80\xa8",
	"\xed\xa0\x80", "é€😀", "\ufffd", "\u00a0", "<>&'",
}

// fuzzRequest builds a request from fuzzed strings: each list is split on
// "|", "-" meaning nil and "" an empty non-nil list.
func fuzzRequest(strs []string, maxAttempts int, sendAt, expiresAt int64) *canonjson.Request {
	list := func(s string) []string {
		switch s {
		case "-":
			return nil
		case "":
			return []string{}
		}
		return strings.Split(s, "|")
	}
	at := func(ns int64) time.Time {
		if ns == 0 {
			return time.Time{}
		}
		return time.Unix(0, ns).In(time.FixedZone("X", 3600))
	}
	return &canonjson.Request{
		NotificationType: strs[0],
		Producer:         strs[1],
		IdempotencyKey:   strs[2],
		Priority:         strs[3],
		Channels:         list(strs[4]),
		UserIDs:          list(strs[5]),
		SMS:              list(strs[6]),
		Email:            list(strs[7]),
		Webhook:          list(strs[8]),
		MaxAttempts:      maxAttempts,
		SendAt:           at(sendAt),
		ExpiresAt:        at(expiresAt),
	}
}

// validRequest is what intake's tests' valid intent asks for: one user and
// one direct address on each of the three channels.
func validRequest() *canonjson.Request {
	return &canonjson.Request{
		NotificationType: "order.shipped",
		Producer:         "shop",
		IdempotencyKey:   "order-9-shipped",
		Channels:         []string{"sms", "email", "webhook"},
		UserIDs:          []string{"42"},
		SMS:              []string{"+14155550123"},
		Email:            []string{"ops@example.com"},
		Webhook:          []string{"https://hooks.example.com/orders"},
	}
}

// fuzzPayload returns content JSON shaped like an intent's canonical
// content: an SMS and an e-mail made of text, and webhook (if the
// reference takes it as JSON).
func fuzzPayload(text string, webhook []byte) []byte {
	s := canonjson.AppendString(nil, text)
	out := fmt.Appendf(nil, `{"email":{"html":%s,"subject":%s,"text":%s},"sms":{"body":%s}`, s, s, s, s)
	if canon, err := canonjsonref.Canonical(webhook); err == nil {
		out = append(append(out, `,"webhook":`...), canon...)
	}
	return append(out, '}')
}

// requireFingerprintMatches checks Fingerprint of r with content payload
// against the encoding/json reference.
func requireFingerprintMatches(t *testing.T, r *canonjson.Request, payload []byte) {
	t.Helper()
	r.Content = payload
	before := *r
	for _, l := range []*[]string{&before.Channels, &before.UserIDs, &before.SMS, &before.Email, &before.Webhook} {
		*l = slices.Clone(*l)
	}
	require.Equal(t, canonjsonref.Fingerprint(r), canonjson.Fingerprint(r), "fingerprint of %+v with payload %q", r, payload)
	require.Equal(t, before, *r, "fingerprint must not modify the request")
}

func TestFingerprint_MatchesReference(t *testing.T) {
	t.Parallel()
	for _, s := range trickyStrings {
		r := fuzzRequest([]string{s, s, s, s, s + "|b|" + s, "b|" + s, "-", "", s}, 7, 1, 1700000000123456789)
		requireFingerprintMatches(t, r, fuzzPayload(s, []byte(`{"s":"`+s+`"}`)))
	}
	for _, in := range trickyJSONAll() {
		requireFingerprintMatches(t, validRequest(), fuzzPayload("x", []byte(in)))
	}
	requireFingerprintMatches(t, &canonjson.Request{}, []byte(`{}`))
	requireFingerprintMatches(t, &canonjson.Request{MaxAttempts: -5}, []byte(`{}`))
}

// FuzzFingerprint compares Fingerprint with the encoding/json reference on
// arbitrary requests and content.
func FuzzFingerprint(f *testing.F) {
	for i, s := range trickyStrings {
		f.Add(s, "shop", "key-"+s, "bulk", "webhook|sms", "b|a|"+s, "-", "", s, s, []byte(`{"b":"`+s+`","a":1}`), i, int64(i), int64(0))
	}
	f.Fuzz(func(t *testing.T, typ, producer, key, priority, channels, users, sms, email, webhook, text string, content []byte, maxAttempts int, sendAt, expiresAt int64) {
		r := fuzzRequest([]string{typ, producer, key, priority, channels, users, sms, email, webhook}, maxAttempts, sendAt, expiresAt)
		requireFingerprintMatches(t, r, fuzzPayload(text, content))
	})
}
