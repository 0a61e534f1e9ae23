package intake

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// mustFingerprint validates in at testNow and returns its fingerprint.
func mustFingerprint(t *testing.T, in *Intent) string {
	t.Helper()
	v, err := Validate(in, Limits{}, testNow)
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), v.Fingerprint)
	return v.Fingerprint
}

func TestFingerprint_IgnoresOrderAndFormatting(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		mutate func(in *Intent)
	}{
		{"ChannelOrder", func(in *Intent) { in.Channels = []string{"webhook", "sms", "email"} }},
		{"UserIDOrder", func(in *Intent) { in.Audience.UserIDs = []string{"7", "42"} }},
		{"AddressOrder", func(in *Intent) {
			in.Audience.SMS = []string{"+442071838750", "+14155550123"}
			in.Audience.Email = []string{"b@example.com", "ops@example.com"}
		}},
		{"PhoneFormatting", func(in *Intent) { in.Audience.SMS = []string{"+1 (415) 555-0123", "+44 20 7183 8750"} }},
		{"EmailDomainCaseAndDisplayName", func(in *Intent) {
			in.Audience.Email = []string{"Ops <ops@EXAMPLE.com>", "b@Example.Com"}
		}},
		{"URLSchemeAndHostCase", func(in *Intent) { in.Audience.Webhook = []string{"HTTPS://HOOKS.example.com/orders"} }},
		{"DuplicateRecipients", func(in *Intent) {
			in.Audience.SMS = append(in.Audience.SMS, "+1 415 555 0123")
			in.Audience.UserIDs = append(in.Audience.UserIDs, "42")
		}},
		{"SurroundingWhitespace", func(in *Intent) {
			in.NotificationType = " order.shipped\n"
			in.IdempotencyKey = " order-9-shipped "
		}},
		{"NewRequestID", func(in *Intent) { in.RequestID = "retry-2" }},
		{"NewTraceID", func(in *Intent) { in.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736" }},
		{"NewCallbackURL", func(in *Intent) { in.CallbackURL = "https://shop.example/herald/callbacks" }},
		{"OccurredAtDefaultedOrSet", func(in *Intent) { in.OccurredAt = testNow.Add(-time.Minute) }},
		{"DefaultPrioritySpelledOut", func(in *Intent) { in.Priority = heraldtype.PriorityTransactional }},
		{"SameInstantInAnotherZone", func(in *Intent) {
			in.SendAt = in.SendAt.In(time.FixedZone("X", -7*3600))
		}},
		{"WebhookKeyOrderAndWhitespace", func(in *Intent) {
			in.Content.Webhook = json.RawMessage("{ \"status\": \"shipped\",\n \"order\": 9 }")
		}},
	}
	base := func() *Intent {
		in := validIntent()
		in.Audience.UserIDs = []string{"42", "7"}
		in.Audience.SMS = []string{"+14155550123", "+442071838750"}
		in.Audience.Email = []string{"ops@example.com", "b@example.com"}
		in.SendAt = testNow.Add(time.Hour)
		in.Content.Webhook = json.RawMessage(`{"order":9,"status":"shipped"}`)
		return in
	}
	want := mustFingerprint(t, base())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := base()
			tt.mutate(in)
			require.Equal(t, want, mustFingerprint(t, in))
		})
	}
}

func TestFingerprint_ChangesWithTheRequest(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		mutate func(in *Intent)
	}{
		{"NotificationType", func(in *Intent) { in.NotificationType = "order.delivered" }},
		{"Producer", func(in *Intent) { in.Producer = "warehouse" }},
		{"IdempotencyKey", func(in *Intent) { in.IdempotencyKey = "order-10-shipped" }},
		{"ChannelDropped", func(in *Intent) {
			in.Channels = []string{"sms", "email"}
			in.Audience.Webhook = nil
			in.Content.Webhook = nil
		}},
		{"UserAdded", func(in *Intent) { in.Audience.UserIDs = append(in.Audience.UserIDs, "43") }},
		{"UserMovedToAnotherList", func(in *Intent) {
			in.Audience.UserIDs = nil
			in.Audience.Email = append(in.Audience.Email, "42@example.com")
		}},
		{"OtherNumber", func(in *Intent) { in.Audience.SMS = []string{"+14155550124"} }},
		{"EmailLocalPartCase", func(in *Intent) { in.Audience.Email = []string{"Ops@example.com"} }},
		{"SMSBody", func(in *Intent) { in.Content.SMS.Body = "Order 9 shipped!" }},
		{"EmailSubject", func(in *Intent) { in.Content.Email.Subject = "Order 9 has shipped" }},
		{"EmailTextMovedToHTML", func(in *Intent) {
			in.Content.Email.HTML, in.Content.Email.Text = in.Content.Email.Text, ""
		}},
		{"WebhookValue", func(in *Intent) { in.Content.Webhook = json.RawMessage(`{"order":10}`) }},
		{"WebhookNumberSpelling", func(in *Intent) { in.Content.Webhook = json.RawMessage(`{"order":9.0}`) }},
		{"SendAt", func(in *Intent) { in.SendAt = testNow.Add(time.Hour) }},
		{"SendAtByOneMicrosecond", func(in *Intent) { in.SendAt = testNow.Add(time.Hour + time.Microsecond) }},
		{"ExpiresAt", func(in *Intent) { in.ExpiresAt = testNow.Add(time.Hour) }},
		{"Priority", func(in *Intent) { in.Priority = heraldtype.PriorityBulk }},
		{"MaxAttempts", func(in *Intent) { in.MaxAttempts = 3 }},
	}
	want := mustFingerprint(t, validIntent())
	seen := map[string]string{}
	for _, tt := range tests {
		in := validIntent()
		tt.mutate(in)
		got := mustFingerprint(t, in)
		require.NotEqual(t, want, got, tt.name)
		require.NotContains(t, seen, got, "%s collides with %s", tt.name, seen[got])
		seen[got] = tt.name
	}
}

func TestFingerprint_ListsCannotBleed(t *testing.T) {
	t.Parallel()

	// Two intents whose lists concatenate to the same strings must differ.
	a := validIntent()
	a.Audience.UserIDs = []string{"a", "b"}
	b := validIntent()
	b.Audience.UserIDs = []string{"a,b"}
	require.NotEqual(t, mustFingerprint(t, a), mustFingerprint(t, b))
}

func TestPayloadJSON_IsCanonicalContent(t *testing.T) {
	t.Parallel()

	in := validIntent()
	in.Content = Content{
		SMS:     &SMSContent{Body: "Tom & Jerry <3 \"quotes\"\n€"},
		Email:   &EmailContent{Subject: "Hi", HTML: "<p>Hi & bye</p>"},
		Webhook: json.RawMessage("{\"z\": [1, 2.50, {\"b\":true,\"a\":null}],\n \"a\": \"<\\u0026>\"}"),
	}
	v, err := Validate(in, Limits{}, testNow)
	require.NoError(t, err)
	require.Equal(t,
		`{"email":{"html":"<p>Hi & bye</p>","subject":"Hi"},`+
			`"sms":{"body":"Tom & Jerry <3 \"quotes\"\n€"},`+
			`"webhook":{"a":"<&>","z":[1,2.50,{"a":null,"b":true}]}}`,
		string(v.PayloadJSON))

	var back Content
	require.NoError(t, json.Unmarshal(v.PayloadJSON, &back))
	require.Equal(t, *in.Content.SMS, *back.SMS)
	require.Equal(t, *in.Content.Email, *back.Email)
	require.JSONEq(t, string(in.Content.Webhook), string(back.Webhook))
	require.Equal(t, v.Intent.Content.Webhook, back.Webhook, "the normalized intent holds the canonical webhook content")
}
