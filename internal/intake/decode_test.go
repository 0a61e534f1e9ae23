package intake

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// validEntry is the raw JSON form of validIntent.
const validEntry = intaketest.ValidEntry

func TestDecodeRaw_DecodesAnEntry(t *testing.T) {
	t.Parallel()

	in, err := DecodeRaw([]byte(validEntry), Limits{})
	require.NoError(t, err)
	require.Equal(t, validIntent(), in)
}

func TestDecodeRaw_ReadsMarshalledIntent(t *testing.T) {
	t.Parallel()

	want := validIntent()
	want.OccurredAt = time.Date(2026, 2, 28, 23, 59, 59, 123456789, time.UTC)
	want.SendAt = testNow.Add(time.Hour)
	want.ExpiresAt = testNow.Add(2 * time.Hour)
	want.Priority = heraldtype.PriorityBulk
	want.MaxAttempts = 7
	want.RequestID = "req-1"
	want.TraceID = "trace-1"
	want.Campaign = "spring-sale"
	want.Content.Email.HTML = "<p>It is on its way.</p>"
	body, err := json.Marshal(want)
	require.NoError(t, err)

	got, err := DecodeRaw(body, Limits{})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestDecodeRaw_NullOrEmptyTimeIsAbsent(t *testing.T) {
	t.Parallel()

	in, err := DecodeRaw([]byte(`{"notification_type":null,"channels":null,"audience":null,
		"content":{"sms":null,"email":null,"webhook":null},"send_at":"","expires_at":null,
		"max_attempts":null,"request_id":null}`), Limits{})
	require.NoError(t, err)
	require.Equal(t, &Intent{}, in)
}

func TestDecodeRaw_RefusesBadEntriesWithCodes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		body      string
		lim       Limits
		wantField string
		wantCode  heraldtype.Code
	}{
		{"OverMaxEntryBytes", validEntry, Limits{MaxEntryBytes: 100}, "", heraldtype.CodeTooLarge},
		{"OverDefaultMaxEntryBytes", `{"x":"` + strings.Repeat("a", 256<<10) + `"}`, Limits{}, "", heraldtype.CodeTooLarge},
		{"Empty", ``, Limits{}, "", heraldtype.CodeNotJSON},
		{"Whitespace", " \n", Limits{}, "", heraldtype.CodeNotJSON},
		{"PlainText", `order 9 shipped`, Limits{}, "", heraldtype.CodeNotJSON},
		{"Truncated", `{"producer":"shop",`, Limits{}, "", heraldtype.CodeNotJSON},
		{"TrailingGarbage", `{} {}`, Limits{}, "", heraldtype.CodeNotJSON},
		{"InvalidUTF8", "{\"producer\":\"sh\xffop\"}", Limits{}, "", heraldtype.CodeNotJSON},
		{"ByteOrderMark", "\uFEFF{}", Limits{}, "", heraldtype.CodeNotJSON},
		{"SingleQuotes", `{'producer':'shop'}`, Limits{}, "", heraldtype.CodeNotJSON},
		{"TopLevelArray", `[{"producer":"shop"}]`, Limits{}, "", heraldtype.CodeWrongShape},
		{"TopLevelNull", `null`, Limits{}, "", heraldtype.CodeWrongShape},
		{"TopLevelString", `"order.shipped"`, Limits{}, "", heraldtype.CodeWrongShape},
		{"TopLevelNumber", `42`, Limits{}, "", heraldtype.CodeWrongShape},
		{"UnknownField", `{"prodcuer":"shop"}`, Limits{}, "prodcuer", heraldtype.CodeWrongShape},
		{"UnknownFieldWithNULKey", `{"a\u0000":1}`, Limits{}, "a\uFFFD", heraldtype.CodeWrongShape},
		{"UnknownFieldLongKeyIsCut", `{"` + strings.Repeat("k", 100) + `":1}`, Limits{}, strings.Repeat("k", 63) + "…", heraldtype.CodeWrongShape},
		{"FieldNameCaseMatters", `{"Producer":"shop"}`, Limits{}, "Producer", heraldtype.CodeWrongShape},
		{"RepeatedField", `{"producer":"shop","producer":"shop"}`, Limits{}, "producer", heraldtype.CodeWrongShape},
		{"StringFieldGivenNumber", `{"producer":7}`, Limits{}, "producer", heraldtype.CodeWrongShape},
		{"StringFieldGivenObject", `{"idempotency_key":{"k":1}}`, Limits{}, "idempotency_key", heraldtype.CodeWrongShape},
		{"ChannelsGivenString", `{"channels":"sms"}`, Limits{}, "channels", heraldtype.CodeWrongShape},
		{"ChannelElementNumber", `{"channels":["sms",2]}`, Limits{}, "channels[1]", heraldtype.CodeWrongShape},
		{"ChannelElementNull", `{"channels":[null]}`, Limits{}, "channels[0]", heraldtype.CodeWrongShape},
		{"AudienceGivenArray", `{"audience":["42"]}`, Limits{}, "audience", heraldtype.CodeWrongShape},
		{"AudienceUnknownList", `{"audience":{"phone":["+14155550123"]}}`, Limits{}, "audience.phone", heraldtype.CodeWrongShape},
		{"AudienceListOfObjects", `{"audience":{"email":[{"address":"a@example.com"}]}}`, Limits{}, "audience.email[0]", heraldtype.CodeWrongShape},
		{"ContentGivenString", `{"content":"hi"}`, Limits{}, "content", heraldtype.CodeWrongShape},
		{"ContentUnknownChannel", `{"content":{"push":{}}}`, Limits{}, "content.push", heraldtype.CodeWrongShape},
		{"SMSContentGivenString", `{"content":{"sms":"hi"}}`, Limits{}, "content.sms", heraldtype.CodeWrongShape},
		{"SMSContentUnknownField", `{"content":{"sms":{"text":"hi"}}}`, Limits{}, "content.sms.text", heraldtype.CodeWrongShape},
		{"EmailSubjectGivenNumber", `{"content":{"email":{"subject":1}}}`, Limits{}, "content.email.subject", heraldtype.CodeWrongShape},
		{"MaxAttemptsGivenString", `{"max_attempts":"3"}`, Limits{}, "max_attempts", heraldtype.CodeWrongShape},
		{"MaxAttemptsFraction", `{"max_attempts":1.5}`, Limits{}, "max_attempts", heraldtype.CodeWrongShape},
		{"MaxAttemptsExponent", `{"max_attempts":1e1}`, Limits{}, "max_attempts", heraldtype.CodeWrongShape},
		{"MaxAttemptsBoolean", `{"max_attempts":true}`, Limits{}, "max_attempts", heraldtype.CodeWrongShape},
		{"MaxAttemptsOverflow", `{"max_attempts":99999999999}`, Limits{}, "max_attempts", heraldtype.CodeInvalidField},
		{"MaxAttemptsZeroWrittenOut", `{"max_attempts":0}`, Limits{}, "max_attempts", heraldtype.CodeInvalidField},
		{"SendAtGivenNumber", `{"send_at":1767225600}`, Limits{}, "send_at", heraldtype.CodeWrongShape},
		{"SendAtNotRFC3339", `{"send_at":"tomorrow"}`, Limits{}, "send_at", heraldtype.CodeInvalidField},
		{"SendAtWithoutZone", `{"send_at":"2026-03-01T12:00:00"}`, Limits{}, "send_at", heraldtype.CodeInvalidField},
		{"ExpiresAtDateOnly", `{"expires_at":"2026-03-01"}`, Limits{}, "expires_at", heraldtype.CodeInvalidField},
		// The zero instant would read as "no time" in the Intent.
		{"ExpiresAtZeroTime", `{"expires_at":"0001-01-01T00:00:00Z"}`, Limits{}, "expires_at", heraldtype.CodeScheduleOutOfRange},
		{"ExpiresAtZeroInstantWithOffset", `{"expires_at":"0001-01-01T01:30:00+01:30"}`, Limits{}, "expires_at", heraldtype.CodeScheduleOutOfRange},
		{"SendAtZeroTime", `{"send_at":"0001-01-01T00:00:00Z"}`, Limits{}, "send_at", heraldtype.CodeInvalidField},
		{"OccurredAtZeroTime", `{"occurred_at":"0001-01-01T00:00:00.000Z"}`, Limits{}, "occurred_at", heraldtype.CodeInvalidField},
		// time.Parse takes offsets up to +24:00 and minutes up to 60.
		{"SendAtOffsetPlus24", `{"send_at":"2026-03-01T12:00:00+24:00"}`, Limits{}, "send_at", heraldtype.CodeInvalidField},
		{"ExpiresAtOffsetMinus24", `{"expires_at":"2026-03-02T12:00:00-24:00"}`, Limits{}, "expires_at", heraldtype.CodeInvalidField},
		{"OccurredAtOffsetMinute60", `{"occurred_at":"2026-03-01T12:00:00+23:60"}`, Limits{}, "occurred_at", heraldtype.CodeInvalidField},
		{"OccurredAtOffsetMinute60UnderAnHour", `{"occurred_at":"2026-03-01T12:00:00-05:60"}`, Limits{}, "occurred_at", heraldtype.CodeInvalidField},
		// encoding/json would decode these as U+FFFD.
		{"SMSBodyLoneSurrogate", `{"content":{"sms":{"body":"code \ud800"}}}`, Limits{}, "content.sms.body", heraldtype.CodeInvalidField},
		{"SMSBodyLowSurrogateFirst", `{"content":{"sms":{"body":"\ude00\ud83d"}}}`, Limits{}, "content.sms.body", heraldtype.CodeInvalidField},
		{"EmailTextHighSurrogateWithoutLow", `{"content":{"email":{"text":"\ud83d\u0041"}}}`, Limits{}, "content.email.text", heraldtype.CodeInvalidField},
		{"EmailSubjectLoneSurrogate", `{"content":{"email":{"subject":"\udfff"}}}`, Limits{}, "content.email.subject", heraldtype.CodeInvalidField},
		{"IdempotencyKeyLoneSurrogate", `{"idempotency_key":"k\ud800"}`, Limits{}, "idempotency_key", heraldtype.CodeInvalidField},
		{"AudienceUserIDLoneSurrogate", `{"audience":{"user_ids":["42","\udbff"]}}`, Limits{}, "audience.user_ids[1]", heraldtype.CodeInvalidField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := DecodeRaw([]byte(tt.body), tt.lim)
			require.Nil(t, in)
			requireFieldError(t, err, tt.wantField, tt.wantCode)
		})
	}
}

func TestDecodeRaw_ReportsEveryShapeError(t *testing.T) {
	t.Parallel()

	_, err := DecodeRaw([]byte(`{"producer":1,"colour":"red","channels":["sms",{}],
		"audience":{"sms":"+14155550123"},"content":{"sms":{"body":false}},"send_at":"now"}`), Limits{})
	type fc struct {
		Field string
		Code  heraldtype.Code
	}
	var got []fc
	for _, fe := range fieldErrors(t, err) {
		got = append(got, fc{fe.Field, fe.Code})
	}
	require.Equal(t, []fc{
		{"producer", heraldtype.CodeWrongShape},
		{"colour", heraldtype.CodeWrongShape},
		{"channels[1]", heraldtype.CodeWrongShape},
		{"audience.sms", heraldtype.CodeWrongShape},
		{"content.sms.body", heraldtype.CodeWrongShape},
		{"send_at", heraldtype.CodeInvalidField},
	}, got)
}

func TestDecodeRaw_ThenValidateReportsCodes(t *testing.T) {
	t.Parallel()

	in, err := DecodeRaw([]byte(`{"notification_type":"order.shipped","producer":"shop",
		"idempotency_key":"k","channels":["sms"],"audience":{"sms":["0123"]},
		"content":{"sms":{"body":"hi"}}}`), Limits{})
	require.NoError(t, err)
	_, err = Validate(in, Limits{}, testNow)
	requireFieldError(t, err, "audience.sms[0]", heraldtype.CodeInvalidPhone)
}

func TestDecodeRaw_ThenValidateRefusesTricks(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		mod       func(m map[string]any)
		wantField string
		wantCode  heraldtype.Code
	}{
		{"WebhookContentLoneSurrogate", func(m map[string]any) {
			sub(m, "content")["webhook"] = json.RawMessage(`{"order":9,"note":"\ud800"}`)
		}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentLoneSurrogateKey", func(m map[string]any) {
			sub(m, "content")["webhook"] = json.RawMessage(`{"\udc00":1}`)
		}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookURLPortOutOfRange", func(m map[string]any) {
			sub(m, "audience")["webhook"] = []any{"https://hooks.example.com:99999999/orders"}
		}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"WebhookURLPortZero", func(m map[string]any) {
			sub(m, "audience")["webhook"] = []any{"http://hooks.example.com:0/"}
		}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"PhoneWithExtension", func(m map[string]any) {
			sub(m, "audience")["sms"] = []any{"+14155552671 ext. 12"}
		}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"ExpiresAtZeroTime", func(m map[string]any) {
			m["expires_at"] = "0001-01-01T00:00:00Z"
		}, "expires_at", heraldtype.CodeScheduleOutOfRange},
		{"SendAtOffsetPlus24", func(m map[string]any) {
			m["send_at"] = "2026-03-01T13:00:00+24:00"
		}, "send_at", heraldtype.CodeInvalidField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := DecodeRaw([]byte(intaketest.EntryWith(tt.mod)), Limits{})
			if err == nil {
				_, err = Validate(in, Limits{}, testNow)
			}
			requireFieldError(t, err, tt.wantField, tt.wantCode)
		})
	}
}

func TestDecodeRaw_KeepsText(t *testing.T) {
	t.Parallel()

	in, err := DecodeRaw([]byte(`{"send_at":"2026-03-01T12:00:00+23:59","expires_at":"2026-03-02T12:00:00-23:59",
		"occurred_at":"0001-01-01T00:00:01Z","content":{"sms":{"body":"\ud83d\ude00 \\ud800 \ufffd"}}}`), Limits{})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 2, 28, 12, 1, 0, 0, time.UTC), in.SendAt.UTC())
	require.Equal(t, time.Date(2026, 3, 3, 11, 59, 0, 0, time.UTC), in.ExpiresAt.UTC())
	require.Equal(t, time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), in.OccurredAt)
	require.Equal(t, "😀 \\ud800 \uFFFD", in.Content.SMS.Body, "a pair, an escaped backslash and an escaped U+FFFD are text")
}

// requireJSONBSafe asserts that out is JSON PostgreSQL's jsonb accepts: one
// valid value, valid UTF-8, and no \u escape other than a control
// character's (so no \u0000 and no lone surrogate).
func requireJSONBSafe(t testing.TB, out []byte) {
	t.Helper()
	require.True(t, json.Valid(out), "not valid JSON: %q", out)
	require.True(t, utf8.Valid(out), "not valid UTF-8: %q", out)
	for i := 0; i < len(out); i++ {
		if out[i] != '\\' {
			continue
		}
		i++
		if out[i] != 'u' {
			continue
		}
		esc := string(out[i+1 : i+5])
		require.True(t, esc[:3] == "000" || esc[:3] == "001", "unexpected escape \\u%s in %q", esc, out)
		require.NotEqual(t, "0000", esc, "\\u0000 in %q", out)
		i += 4
	}
}

func TestRawFields_ReturnsJSONBSafeJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		body string
		want string
	}{
		{"ObjectItself", `{"producer": "shop", "n": 1.50, "a": [true, null]}`, `{"a":[true,null],"n":1.50,"producer":"shop"}`},
		{"EmptyObject", ` {} `, `{}`},
		{"ArrayIsWrappedAsText", `[1, 2]`, `{"body":"[1, 2]"}`},
		{"ScalarIsWrappedAsText", `42`, `{"body":"42"}`},
		{"TextIsWrapped", `order "9" shipped`, `{"body":"order \"9\" shipped"}`},
		{"BrokenJSONIsWrapped", `{"producer":`, `{"body":"{\"producer\":"}`},
		{"EmptyBody", ``, `{"body":""}`},
		{"NULEscapeInStringIsReplaced", `{"a":"x\u0000y"}`, "{\"a\":\"x\uFFFDy\"}"},
		{"NULEscapeInKeyIsReplaced", `{"\u0000":1}`, "{\"\uFFFD\":1}"},
		{"RawNULByteIsReplaced", "bad\x00body", "{\"body\":\"bad\uFFFDbody\"}"},
		{"InvalidUTF8InTextIsReplaced", "bad\xffbody", "{\"body\":\"bad\uFFFDbody\"}"},
		{"InvalidUTF8InObjectIsReplaced", "{\"a\":\"\xff\"}", "{\"a\":\"\uFFFD\"}"},
		{"LoneSurrogateIsReplaced", `{"a":"\udc00"}`, "{\"a\":\"\uFFFD\"}"},
		{"ControlCharactersStayEscaped", `{"a":"\u0001\n"}`, `{"a":"\u0001\n"}`},
		{"HugeNumberBecomesString", `{"n":1e999999,"m":-2E+5}`, `{"m":-2E+5,"n":"1e999999"}`},
		{"DuplicateKeysAreKept", `{"a":1,"a":2}`, `{"a":1,"a":2}`},
		{"DeepValueBecomesText", `{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
			`{"a":` + strings.Repeat("[", 63) + `"` + strings.Repeat("[", 7) + strings.Repeat("]", 7) + `"` + strings.Repeat("]", 63) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := RawFields([]byte(tt.body))
			require.Equal(t, tt.want, string(got))
			requireJSONBSafe(t, got)
		})
	}
}

func TestRawFields_TruncatesOversizedEntry(t *testing.T) {
	t.Parallel()

	// A multi-byte rune straddles the excerpt's end; it must not be split.
	body := []byte("{\"x\":\"" + strings.Repeat("a", 4089) + "€" + strings.Repeat("b", 300<<10) + "\"}")
	got := RawFields(body)
	requireJSONBSafe(t, got)

	var out struct {
		Body      string `json:"body"`
		Truncated bool   `json:"truncated"`
		Bytes     int    `json:"bytes"`
	}
	require.NoError(t, json.Unmarshal(got, &out))
	require.True(t, out.Truncated)
	require.Equal(t, len(body), out.Bytes)
	require.Len(t, out.Body, 4095, "cut before the €, which would not fit whole")
	require.True(t, strings.HasPrefix(string(body), out.Body))
}

func TestPartialFields_DigsOutWhatItCan(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name                        string
		body                        string
		wantType, wantProd, wantKey string
	}{
		{"ValidEntry", validEntry, "order.shipped", "shop", "order-9-shipped"},
		{"StopsAtSyntaxError", `{"producer":" shop ","notification_type":"a.b","idempotency_key":`, "a.b", "shop", ""},
		{"FieldsAfterAnErrorAreLost", `{"producer":"shop",,"idempotency_key":"k"}`, "", "shop", ""},
		{"NonStringsAreIgnored", `{"producer":7,"notification_type":["a"],"idempotency_key":"k"}`, "", "", "k"},
		{"NestedFieldsAreIgnored", `{"audience":{"producer":"x"},"content":{"idempotency_key":"y"}}`, "", "", ""},
		{"FirstOccurrenceWins", `{"producer":"a","producer":"b"}`, "", "a", ""},
		{"NotAnObject", `["producer","shop"]`, "", "", ""},
		{"NotJSON", `producer=shop`, "", "", ""},
		{"NULAndInvalidUTF8AreReplaced", "{\"producer\":\"s\\u0000h\xffop\"}", "", "s\uFFFDh\uFFFDop", ""},
		{"LongValuesAreCut", `{"notification_type":"` + strings.Repeat("é", 200) + `","idempotency_key":"` + strings.Repeat("k", 300) + `"}`,
			strings.Repeat("é", 128), "", strings.Repeat("k", 255)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			typ, prod, key := PartialFields([]byte(tt.body))
			require.Equal(t, tt.wantType, typ)
			require.Equal(t, tt.wantProd, prod)
			require.Equal(t, tt.wantKey, key)
		})
	}
}

// Metadata through the raw doors: an object of strings, whatever else is
// refused with the member's path, and the budget is Validate's.
func TestDecodeRaw_Metadata(t *testing.T) {
	t.Parallel()
	entry := func(meta string) []byte {
		return []byte(`{"notification_type":"a","producer":"p","idempotency_key":"k","channels":["sms"],
			"audience":{"sms":["+14155550123"]},"content":{"sms":{"body":"hi"}},"metadata":` + meta + `}`)
	}
	t.Run("ObjectOfStrings", func(t *testing.T) {
		t.Parallel()
		in, err := DecodeRaw(entry(`{"order_id":"9","tenant":"acme"}`), Limits{})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"order_id": "9", "tenant": "acme"}, in.Metadata)
		v, err := Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		require.JSONEq(t, `{"order_id":"9","tenant":"acme"}`, string(v.MetadataJSON))
	})
	t.Run("NullAndEmptyAreNone", func(t *testing.T) {
		t.Parallel()
		for _, m := range []string{`null`, `{}`} {
			in, err := DecodeRaw(entry(m), Limits{})
			require.NoError(t, err)
			v, err := Validate(in, Limits{}, testNow)
			require.NoError(t, err)
			require.Nil(t, v.MetadataJSON, m)
			require.Nil(t, v.Intent.Metadata, m)
		}
	})
	for name, c := range map[string]struct {
		meta, field string
		code        heraldtype.Code
	}{
		"NotAnObject":    {`["a"]`, "metadata", heraldtype.CodeWrongShape},
		"NumberValue":    {`{"n":1}`, "metadata.n", heraldtype.CodeWrongShape},
		"ObjectValue":    {`{"o":{"a":"b"}}`, "metadata.o", heraldtype.CodeWrongShape},
		"NullValue":      {`{"z":null}`, "metadata.z", heraldtype.CodeWrongShape},
		"RepeatedKey":    {`{"a":"1","a":"2"}`, "metadata.a", heraldtype.CodeWrongShape},
		"LoneSurrogate":  {`{"a":"\ud800"}`, "metadata.a", heraldtype.CodeInvalidField},
		"TooManyMembers": {`{` + manyMembers(40) + `}`, "metadata", heraldtype.CodeInvalidField},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeRaw(entry(c.meta), Limits{})
			requireFieldError(t, err, c.field, c.code)
		})
	}
}

// manyMembers returns n distinct metadata members, comma-separated.
func manyMembers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"k` + strconv.Itoa(i) + `":"v"`
	}
	return strings.Join(parts, ",")
}

func TestValidate_Metadata(t *testing.T) {
	t.Parallel()
	with := func(m map[string]string) error {
		in := validIntent()
		in.Metadata = m
		_, err := Validate(in, Limits{}, testNow)
		return err
	}
	require.NoError(t, with(map[string]string{strings.Repeat("k", MaxMetadataKeyLen): strings.Repeat("v", MaxMetadataValueBytes)}))
	requireFieldError(t, with(map[string]string{strings.Repeat("k", MaxMetadataKeyLen+1): "v"}), "metadata."+strings.Repeat("k", 63)+"…", heraldtype.CodeInvalidField)
	requireFieldError(t, with(map[string]string{"": "v"}), "metadata", heraldtype.CodeInvalidField)
	requireFieldError(t, with(map[string]string{"a b": "v"}), "metadata.a b", heraldtype.CodeInvalidField)
	requireFieldError(t, with(map[string]string{"a": strings.Repeat("v", MaxMetadataValueBytes+1)}), "metadata.a", heraldtype.CodeInvalidField)
	requireFieldError(t, with(map[string]string{"a": "\xff"}), "metadata.a", heraldtype.CodeInvalidField)
	requireFieldError(t, with(map[string]string{"a": "x\x00"}), "metadata.a", heraldtype.CodeInvalidField)
	many := map[string]string{}
	for i := range MaxMetadataKeys + 1 {
		many["k"+strconv.Itoa(i)] = "v"
	}
	requireFieldError(t, with(many), "metadata", heraldtype.CodeInvalidField)
	big := map[string]string{}
	for i := range 9 {
		big["k"+strconv.Itoa(i)] = strings.Repeat("v", MaxMetadataValueBytes)
	}
	requireFieldError(t, with(big), "metadata", heraldtype.CodeTooLarge)
}

// Metadata counts in the fingerprint only when present: an intent without
// it keeps the fingerprint it always had, and other metadata is another
// request.
func TestFingerprint_CoversMetadataOnlyWhenPresent(t *testing.T) {
	t.Parallel()
	fp := func(m map[string]string) string {
		in := validIntent()
		in.Metadata = m
		v, err := Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		return v.Fingerprint
	}
	v, err := Validate(validIntent(), Limits{}, testNow)
	require.NoError(t, err)
	require.Equal(t, fingerprint(&v.Intent, v.PayloadJSON), fp(nil))
	require.Equal(t, fp(nil), fp(map[string]string{}))
	require.NotEqual(t, fp(nil), fp(map[string]string{"a": "1"}))
	require.NotEqual(t, fp(map[string]string{"a": "1"}), fp(map[string]string{"a": "2"}))
	require.Equal(t, fp(map[string]string{"a": "1", "b": "2"}), fp(map[string]string{"b": "2", "a": "1"}))
}
