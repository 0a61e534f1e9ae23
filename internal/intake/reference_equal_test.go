package intake

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/canonjsonref"
	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// trickyURLs sit on either side of normalizeURL's fast path.
var trickyURLs = []string{
	"https://bench.example.com/hook/0", "http://a", "http://a/", "https://a:80", "https://a:80/x",
	"https://a:", "https://:80", "https://", "http:///x", "https://a::80", "https://a:8a", "https://a:80:90",
	"HTTPS://a", "https://A", "https://a/B_c-d.e~f", "https://a//x", "https://a/./../x", "https://a/x?",
	"https://a/x?q=1", "https://a/x#f", "https://a/%41", "https://a/ x", "https://a/é", "https://é/",
	"https://a b/", "https://a_b/", "https://u@a/", "https://u:p@a/", "ftp://a/", "https:a", "https:/a",
	"https://[::1]/", "https://[::1]:80/", "https://1.2.3.4/", "https://-/", "https://./", "https://../",
	"https://a.b-c.d/", "https://a:0/", "https://a:99999999999999999999/", "https://a:080/", "",
	"https://a/" + strings.Repeat("x", maxURLLen-len("https://a/")),
	"https://a/" + strings.Repeat("x", maxURLLen-len("https://a/")+1),
	"https://a/" + strings.Repeat("é", maxURLLen),
	"https://a;b/", "https://a,b/", "https://a%2e/", "http://a/\x00", "http://a\x7f/",
	"https://a:1/", "https://a:65535/", "https://a:65536/", "https://a:99999999/", "https://a:00000/",
	"https://a:000080/", "https://[::1]:0/", "https://[::1]:70000/", "https://A:65536/", "https://a:1",
	"HTTP://0?\xc1", "https://a/\xff", "https://\xc3\xa9/",
}

func requireNormalizeURLMatches(t *testing.T, s string) {
	t.Helper()
	v, code, msg := refNormalizeURL(s)
	gv, gcode, gmsg := normalizeURL(s)
	require.Equal(t, []string{v, string(code), msg}, []string{gv, string(gcode), gmsg}, "normalizeURL(%q)", s)
}

func TestNormalizeURL_MatchesReference(t *testing.T) {
	t.Parallel()
	for _, s := range trickyURLs {
		requireNormalizeURLMatches(t, s)
	}
}

// FuzzNormalizeURL compares normalizeURL with the reference.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range trickyURLs {
		f.Add(s)
	}
	f.Fuzz(requireNormalizeURLMatches)
}

func TestNormalizeList_MatchesReference(t *testing.T) {
	t.Parallel()
	lists := [][]string{
		nil, {}, {"x"}, {"bad"}, {"https://a", "https://a"}, {"https://a", " https://a ", "HTTPS://A", "https://b"},
		{"bad", "https://a"}, {"https://a", "bad", "https://b", "bad"},
	}
	var long []string
	for i := range 20 {
		long = append(long, "https://a/"+strconv.Itoa(i%7), "bad"+strconv.Itoa(i))
	}
	lists = append(lists, long, long[:8], long[:9])
	norms := map[string]func(string) (string, heraldtype.Code, string){
		"url": normalizeURL, "email": normalizeEmail, "phone": normalizePhone,
		"all-valid": func(s string) (string, heraldtype.Code, string) { return strings.ToLower(s), "", "" },
	}
	for name, norm := range norms {
		for _, list := range lists {
			var wantErrs, gotErrs errorList
			want := refNormalizeList(&wantErrs, "audience.x", list, norm)
			got := normalizeList(&gotErrs, "audience.x", list, norm)
			require.Equal(t, want, got, "%s %q", name, list)
			require.Equal(t, want == nil, got == nil, "%s %q: nil-ness", name, list)
			require.Equal(t, wantErrs, gotErrs, "%s %q", name, list)
		}
	}
}

// FuzzValidateMatchesReference runs raw entries through DecodeRaw and
// Validate and checks the webhook content and the fingerprint of what
// Validate accepts against the encoding/json reference.
func FuzzValidateMatchesReference(f *testing.F) {
	for _, s := range intaketest.Seeds() {
		f.Add([]byte(s.Body))
	}
	for _, in := range []*Intent{validIntent(), benchIntent(3)} {
		body, err := json.Marshal(in)
		require.NoError(f, err)
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodeRaw(body, Limits{})
		if err != nil {
			return
		}
		v, err := Validate(in, Limits{}, testNow)
		if err != nil {
			return
		}
		if v.Intent.Content.Webhook != nil {
			want, err := canonjsonref.Canonical(in.Content.Webhook)
			require.NoError(t, err)
			require.Equal(t, string(want), string(v.Intent.Content.Webhook))
		}
		require.Equal(t, refFingerprint(&v.Intent, v.PayloadJSON), v.Fingerprint)
	})
}

func TestFingerprint_MatchesReference(t *testing.T) {
	t.Parallel()
	// Through Validate, on the shapes the other tests use.
	for _, in := range []*Intent{validIntent(), benchIntent(1)} {
		v, err := Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		require.Equal(t, refFingerprint(&v.Intent, v.PayloadJSON), v.Fingerprint)
	}
}
