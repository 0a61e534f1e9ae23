package intake

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/gsm7"
	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// fuzzLimits are the limits the seeds are written for.
var fuzzLimits = Limits(intaketest.Limits)

// sub returns m[key] as an object.
func sub(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// fuzzCorpusDir holds further seed inputs, and any failing input the fuzzer
// finds; go test runs them all. Files named accepted_* must validate.
const fuzzCorpusDir = "testdata/fuzz/FuzzDecodeValidate"

// FuzzDecodeValidate feeds arbitrary bytes through the raw intake door:
// DecodeRaw, Validate, RawFields and PartialFields must never panic, must
// refuse only with declared codes and must keep what they produce storable.
func FuzzDecodeValidate(f *testing.F) {
	for _, s := range intaketest.Seeds() {
		f.Add([]byte(s.Body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		requireJSONBSafe(t, RawFields(body))
		requirePartialFieldsStorable(t, body)

		in, err := DecodeRaw(body, fuzzLimits)
		if err != nil {
			requireDeclaredCodes(t, err)
			return
		}
		v, err := Validate(in, fuzzLimits, testNow)
		if err != nil {
			requireDeclaredCodes(t, err)
			return
		}
		requireValidatedSound(t, v)
	})
}

// requireDeclaredCodes asserts err is a *ValidationError whose every code
// is declared (and not idempotency_conflict, which only the accept path
// returns) and whose message PostgreSQL's text type can store.
func requireDeclaredCodes(t *testing.T, err error) {
	t.Helper()
	var verr *heraldtype.ValidationError
	require.True(t, errors.As(err, &verr), "want *heraldtype.ValidationError, got %T: %v", err, err)
	require.NotEmpty(t, verr.Errors)
	for _, fe := range verr.Errors {
		require.Contains(t, heraldtype.Codes(), fe.Code)
		require.NotEqual(t, heraldtype.CodeIdempotencyConflict, fe.Code)
		require.NotEmpty(t, fe.Message)
	}
	msg := err.Error()
	require.True(t, utf8.ValidString(msg), "message not UTF-8: %q", msg)
	require.NotContains(t, msg, "\x00")
	require.Less(t, len(msg), 16<<10, "message too long")
}

// requirePartialFieldsStorable asserts PartialFields returns values fit for
// text columns.
func requirePartialFieldsStorable(t *testing.T, body []byte) {
	t.Helper()
	typ, prod, key := PartialFields(body)
	for _, s := range []string{typ, prod, key} {
		require.True(t, utf8.ValidString(s))
		require.NotContains(t, s, "\x00")
		require.Equal(t, strings.TrimSpace(s), s)
	}
	require.LessOrEqual(t, utf8.RuneCountInString(typ), 128)
	require.LessOrEqual(t, utf8.RuneCountInString(prod), 128)
	require.LessOrEqual(t, utf8.RuneCountInString(key), 255)
}

// requireValidatedSound checks the invariants of an accepted intent: it is
// within limits and storable, its routes are well-formed, validating it
// again changes nothing, and it survives the raw door's JSON unchanged.
func requireValidatedSound(t *testing.T, v *Validated) {
	t.Helper()
	lim := fuzzLimits.WithDefaults()

	_, err := hex.DecodeString(v.Fingerprint)
	require.NoError(t, err)
	require.Len(t, v.Fingerprint, 64)
	require.LessOrEqual(t, len(v.PayloadJSON), lim.MaxPayloadBytes)
	requireJSONBSafe(t, v.PayloadJSON)
	require.Contains(t, []string{AudienceUsers, AudienceAddresses, AudienceMixed}, v.AudienceKind)

	in := v.Intent
	text := []string{in.NotificationType, in.Producer, in.IdempotencyKey, in.RequestID, in.TraceID, string(in.Priority)}
	text = slices.Concat(text, in.Channels, in.Audience.UserIDs, in.Audience.SMS, in.Audience.Email, in.Audience.Webhook)
	for _, s := range text {
		require.True(t, utf8.ValidString(s), "%q", s)
		require.NotContains(t, s, "\x00")
	}

	require.NotEmpty(t, v.Routes)
	require.LessOrEqual(t, len(v.Routes), lim.MaxRoutes)
	ids := map[string]bool{}
	for i, r := range v.Routes {
		require.False(t, ids[r.RouteID], "route id %s twice", r.RouteID)
		ids[r.RouteID] = true
		require.Regexp(t, `^(sms|email|webhook):[0-9a-f]{12}$`, r.RouteID)
		require.True(t, strings.HasPrefix(r.RouteID, r.Channel+":"))
		if r.Channel == "sms" {
			require.Contains(t, []string{gsm7.EncodingGSM7, gsm7.EncodingUCS2}, r.SMSEncoding)
			require.True(t, r.SMSSegments >= 1 && r.SMSSegments <= lim.MaxSMSSegments)
		} else {
			require.Empty(t, r.SMSEncoding)
			require.Zero(t, r.SMSSegments)
		}
		if i > 0 {
			prev := v.Routes[i-1]
			require.True(t, prev.Channel < r.Channel || prev.Channel == r.Channel && prev.RecipientRef < r.RecipientRef)
		}
	}

	again, err := Validate(&in, lim, testNow)
	require.NoError(t, err, "the normalized intent must validate")
	require.Equal(t, v, again, "normalizing is idempotent")

	body, err := json.Marshal(in)
	require.NoError(t, err)
	decoded, err := DecodeRaw(body, Limits{MaxEntryBytes: 1 << 30})
	require.NoError(t, err, "the raw door must read json.Marshal of an intent: %s", body)
	viaRaw, err := Validate(decoded, lim, testNow)
	require.NoError(t, err)
	require.Equal(t, v.Fingerprint, viaRaw.Fingerprint, "both doors agree")
}

// seedCodes runs body through DecodeRaw and Validate with fuzzLimits and
// returns every failure code reported, or nil if it is accepted.
func seedCodes(t *testing.T, body []byte) []string {
	t.Helper()
	in, err := DecodeRaw(body, fuzzLimits)
	if err == nil {
		_, err = Validate(in, fuzzLimits, testNow)
	}
	if err == nil {
		return nil
	}
	var verr *heraldtype.ValidationError
	require.ErrorAs(t, err, &verr)
	var codes []string
	for _, fe := range verr.Errors {
		codes = append(codes, string(fe.Code))
	}
	return codes
}

// corpusFiles returns the inputs stored under fuzzCorpusDir.
func corpusFiles(t *testing.T) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(fuzzCorpusDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(fuzzCorpusDir, e.Name()))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		require.Len(t, lines, 2, "%s: want a header and one []byte value", e.Name())
		require.Equal(t, "go test fuzz v1", lines[0])
		lit, ok := strings.CutPrefix(lines[1], "[]byte(")
		require.True(t, ok, "%s: want a []byte value", e.Name())
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		require.NoError(t, err, e.Name())
		files[e.Name()] = []byte(s)
	}
	return files
}

func TestFuzzSeeds_ProduceDeclaredCodes(t *testing.T) {
	t.Parallel()

	for _, s := range intaketest.Seeds() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			codes := seedCodes(t, []byte(s.Body))
			if s.Want == "" {
				require.Empty(t, codes, "seed must be accepted")
				return
			}
			require.Contains(t, codes, s.Want)
		})
	}
}

func TestFuzzSeeds_CoverEveryFailureCode(t *testing.T) {
	t.Parallel()

	covered := map[string]bool{}
	for _, s := range intaketest.Seeds() {
		for _, c := range seedCodes(t, []byte(s.Body)) {
			covered[c] = true
		}
	}
	for name, body := range corpusFiles(t) {
		codes := seedCodes(t, body)
		if strings.HasPrefix(name, "accepted_") {
			require.Empty(t, codes, "corpus file %s must be accepted", name)
		}
		for _, c := range codes {
			covered[c] = true
		}
	}
	for _, c := range heraldtype.Codes() {
		if c == heraldtype.CodeIdempotencyConflict || c == heraldtype.CodeRejectedByDatabase || c == heraldtype.CodeProducerMismatch ||
			c == heraldtype.CodeUnknownTemplate || c == heraldtype.CodeContentBlocked ||
			c == heraldtype.CodeCampaignCanceled || c == heraldtype.CodeCallbackURLNeedsSubscription ||
			c == heraldtype.CodeSenderNotApproved {
			continue // only the accept path, the worker and package content (which reads the templates) return these
		}
		require.True(t, covered[string(c)], "no seed produces %s", c)
	}
}

// FuzzNormalizeAddress checks that address normalization is a fixed point:
// a normalized address normalizes to itself, so that a stored intent
// revalidates to the same routes and fingerprint.
func FuzzNormalizeAddress(f *testing.F) {
	for _, s := range []string{
		"+1 (415) 555-0123", "+44 20 7183 8750", "+1-800-FLOWERS", "0123",
		"Ops <ops@EXAMPLE.com>", `"john doe"@example.org`, "a@[192.0.2.1]", "x@ÉXAMPLE.com",
		"HTTPS://Hooks.Example.COM/a b?x=1#f", "http://[::1]:8080/", "http://ex%41mple.com/%7e", "https://例え.jp/パス",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, norm := range []func(string) (string, heraldtype.Code, string){normalizePhone, normalizeEmail, normalizeURL} {
			out, code, _ := norm(strings.TrimSpace(s))
			if code != "" {
				require.Contains(t, heraldtype.Codes(), code)
				continue
			}
			require.True(t, utf8.ValidString(out), "%q", out)
			require.NotContains(t, out, "\x00")
			again, code, msg := norm(out)
			require.Empty(t, code, "normalized %q to %q, which is refused: %s", s, out, msg)
			require.Equal(t, out, again, "normalizing %q is not idempotent", s)
		}
	})
}
