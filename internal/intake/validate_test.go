package intake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/gsm7"
	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// testNow is the validation clock of every test in this package.
var testNow = intaketest.Now

// validIntent returns an intent that passes Validate: one user and one
// direct address on each of the three channels.
func validIntent() *Intent {
	return &Intent{
		NotificationType: "order.shipped",
		Producer:         "shop",
		IdempotencyKey:   "order-9-shipped",
		Audience: Audience{
			UserIDs: []string{"42"},
			SMS:     []string{"+14155550123"},
			Email:   []string{"ops@example.com"},
			Webhook: []string{"https://hooks.example.com/orders"},
		},
		Channels: []string{"sms", "email", "webhook"},
		Content: Content{
			SMS:     &SMSContent{Body: "Order 9 shipped"},
			Email:   &EmailContent{Subject: "Order 9 shipped", Text: "It is on its way."},
			Webhook: json.RawMessage(`{"order":9}`),
		},
	}
}

// fieldErrors returns err's field errors, failing the test if err is not a
// *ValidationError.
func fieldErrors(t *testing.T, err error) []heraldtype.FieldError {
	t.Helper()
	var verr *heraldtype.ValidationError
	require.True(t, errors.As(err, &verr), "want *heraldtype.ValidationError, got %T: %v", err, err)
	require.NotEmpty(t, verr.Errors)
	return verr.Errors
}

// requireFieldError asserts that err holds a field error for field with
// code.
func requireFieldError(t *testing.T, err error, field string, code heraldtype.Code) {
	t.Helper()
	for _, fe := range fieldErrors(t, err) {
		if fe.Field == field && fe.Code == code {
			require.NotEmpty(t, fe.Message)
			return
		}
	}
	require.Failf(t, "field error not reported", "want %s (%s) in %v", field, code, err)
}

func TestValidate_RefusesEachRuleWithCode(t *testing.T) {
	t.Parallel()

	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name      string
		mutate    func(in *Intent)
		lim       Limits
		wantField string
		wantCode  heraldtype.Code
	}{
		{"NotificationTypeMissing", func(in *Intent) { in.NotificationType = "" }, Limits{}, "notification_type", heraldtype.CodeMissingField},
		{"NotificationTypeBlank", func(in *Intent) { in.NotificationType = "  " }, Limits{}, "notification_type", heraldtype.CodeMissingField},
		{"NotificationTypeTooLong", func(in *Intent) { in.NotificationType = long(129) }, Limits{}, "notification_type", heraldtype.CodeInvalidField},
		{"NotificationTypeWithSpace", func(in *Intent) { in.NotificationType = "order shipped" }, Limits{}, "notification_type", heraldtype.CodeInvalidField},
		{"NotificationTypeNonASCII", func(in *Intent) { in.NotificationType = "commandé" }, Limits{}, "notification_type", heraldtype.CodeInvalidField},
		{"ProducerMissing", func(in *Intent) { in.Producer = "" }, Limits{}, "producer", heraldtype.CodeMissingField},
		{"ProducerTooLong", func(in *Intent) { in.Producer = long(129) }, Limits{}, "producer", heraldtype.CodeInvalidField},
		{"ProducerWithSlash", func(in *Intent) { in.Producer = "shop/eu" }, Limits{}, "producer", heraldtype.CodeInvalidField},
		{"IdempotencyKeyMissing", func(in *Intent) { in.IdempotencyKey = "" }, Limits{}, "idempotency_key", heraldtype.CodeMissingField},
		{"IdempotencyKeyTooLong", func(in *Intent) { in.IdempotencyKey = long(256) }, Limits{}, "idempotency_key", heraldtype.CodeInvalidField},
		{"IdempotencyKeyWithNUL", func(in *Intent) { in.IdempotencyKey = "a\x00b" }, Limits{}, "idempotency_key", heraldtype.CodeInvalidField},
		{"IdempotencyKeyWithTab", func(in *Intent) { in.IdempotencyKey = "a\tb" }, Limits{}, "idempotency_key", heraldtype.CodeInvalidField},
		{"IdempotencyKeyInvalidUTF8", func(in *Intent) { in.IdempotencyKey = "a\xffb" }, Limits{}, "idempotency_key", heraldtype.CodeInvalidField},
		{"RequestIDTooLong", func(in *Intent) { in.RequestID = long(129) }, Limits{}, "request_id", heraldtype.CodeInvalidField},
		{"TraceIDWithControl", func(in *Intent) { in.TraceID = "abc\x01" }, Limits{}, "trace_id", heraldtype.CodeInvalidField},
		{"ChannelsMissing", func(in *Intent) { in.Channels = nil }, Limits{}, "channels", heraldtype.CodeMissingField},
		{"ChannelsEmpty", func(in *Intent) { in.Channels = []string{} }, Limits{}, "channels", heraldtype.CodeMissingField},
		{"ChannelUnknown", func(in *Intent) { in.Channels = append(in.Channels, "push") }, Limits{}, "channels[3]", heraldtype.CodeUnknownChannel},
		{"ChannelCallbackIsHeraldsOwn", func(in *Intent) { in.Channels = append(in.Channels, "callback") }, Limits{}, "channels[3]", heraldtype.CodeUnknownChannel},
		{"CallbackURLNotHTTP", func(in *Intent) { in.CallbackURL = "ftp://shop.example/cb" }, Limits{}, "callback_url", heraldtype.CodeInvalidURL},
		{"CallbackURLWithUserinfo", func(in *Intent) { in.CallbackURL = "https://u:p@shop.example/cb" }, Limits{}, "callback_url", heraldtype.CodeInvalidURL},
		{"CampaignWithSpace", func(in *Intent) { in.Campaign = "spring sale" }, Limits{}, "campaign", heraldtype.CodeInvalidField},
		{"CampaignTooLong", func(in *Intent) { in.Campaign = long(129) }, Limits{}, "campaign", heraldtype.CodeInvalidField},
		{"CampaignNonASCII", func(in *Intent) { in.Campaign = "soldé" }, Limits{}, "campaign", heraldtype.CodeInvalidField},
		{"ChannelWrongCase", func(in *Intent) { in.Channels[0] = "SMS" }, Limits{}, "channels[0]", heraldtype.CodeUnknownChannel},
		{"ChannelEmpty", func(in *Intent) { in.Channels[1] = "" }, Limits{}, "channels[1]", heraldtype.CodeUnknownChannel},
		{"ChannelListedTwice", func(in *Intent) { in.Channels = append(in.Channels, " sms ") }, Limits{}, "channels[3]", heraldtype.CodeInvalidField},
		{"AudienceEmpty", func(in *Intent) { in.Audience = Audience{} }, Limits{}, "audience", heraldtype.CodeMissingField},
		{"UserIDEmpty", func(in *Intent) { in.Audience.UserIDs = []string{"42", " "} }, Limits{}, "audience.user_ids[1]", heraldtype.CodeInvalidField},
		{"UserIDTooLong", func(in *Intent) { in.Audience.UserIDs = []string{long(256)} }, Limits{}, "audience.user_ids[0]", heraldtype.CodeInvalidField},
		{"UserIDWithControl", func(in *Intent) { in.Audience.UserIDs = []string{"4\x002"} }, Limits{}, "audience.user_ids[0]", heraldtype.CodeInvalidField},
		{"AddressForUnlistedChannel", func(in *Intent) {
			in.Channels = []string{"email", "webhook"}
			in.Content.SMS = nil
		}, Limits{}, "audience.sms", heraldtype.CodeInvalidField},
		{"PhoneWithoutPlus", func(in *Intent) { in.Audience.SMS = []string{"4155550123"} }, Limits{}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"PhoneNationalFormat", func(in *Intent) { in.Audience.SMS = []string{"(415) 555-0123"} }, Limits{}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"PhoneTooShort", func(in *Intent) { in.Audience.SMS = []string{"+1415555"} }, Limits{}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"PhoneUnassignedCountryCode", func(in *Intent) { in.Audience.SMS = []string{"+999123456789"} }, Limits{}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"PhoneLetters", func(in *Intent) { in.Audience.SMS = []string{"+14155550123", "+hello"} }, Limits{}, "audience.sms[1]", heraldtype.CodeInvalidPhone},
		{"PhoneEmpty", func(in *Intent) { in.Audience.SMS = []string{""} }, Limits{}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"EmailNoAt", func(in *Intent) { in.Audience.Email = []string{"ops.example.com"} }, Limits{}, "audience.email[0]", heraldtype.CodeInvalidEmail},
		{"EmailTwoAddresses", func(in *Intent) { in.Audience.Email = []string{"a@example.com, b@example.com"} }, Limits{}, "audience.email[0]", heraldtype.CodeInvalidEmail},
		{"EmailEmpty", func(in *Intent) { in.Audience.Email = []string{""} }, Limits{}, "audience.email[0]", heraldtype.CodeInvalidEmail},
		{"EmailTooLong", func(in *Intent) { in.Audience.Email = []string{long(64) + "@" + long(190) + ".com"} }, Limits{}, "audience.email[0]", heraldtype.CodeInvalidEmail},
		{"EmailWithNewline", func(in *Intent) { in.Audience.Email = []string{"ops@exam\nple.com"} }, Limits{}, "audience.email[0]", heraldtype.CodeInvalidEmail},
		{"URLRelative", func(in *Intent) { in.Audience.Webhook = []string{"/hooks/orders"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLSchemeFTP", func(in *Intent) { in.Audience.Webhook = []string{"ftp://example.com/x"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLNoHost", func(in *Intent) { in.Audience.Webhook = []string{"https:///orders"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLOpaque", func(in *Intent) { in.Audience.Webhook = []string{"https:example.com"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLUserinfo", func(in *Intent) { in.Audience.Webhook = []string{"https://user:secret@example.com/x"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLTooLong", func(in *Intent) { in.Audience.Webhook = []string{"https://example.com/" + long(2029)} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLUnparseable", func(in *Intent) { in.Audience.Webhook = []string{"https://exa mple.com/"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLEmpty", func(in *Intent) { in.Audience.Webhook = []string{""} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLPortOutOfRange", func(in *Intent) { in.Audience.Webhook = []string{"https://hooks.example.com:99999999/orders"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLPort65536", func(in *Intent) { in.Audience.Webhook = []string{"https://hooks.example.com:65536"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLPortZero", func(in *Intent) { in.Audience.Webhook = []string{"http://10.0.0.1:0/h"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLPortOutOfRangeIPv6", func(in *Intent) { in.Audience.Webhook = []string{"http://[::1]:70000/"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLPortOutOfRangeOffTheFastPath", func(in *Intent) { in.Audience.Webhook = []string{"HTTPS://Hooks.Example.com:99999/x?y=1"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLPortNotNumeric", func(in *Intent) { in.Audience.Webhook = []string{"https://hooks.example.com:https/"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"URLInvalidUTF8", func(in *Intent) { in.Audience.Webhook = []string{"https://hooks.example.com/?q=\xc1"} }, Limits{}, "audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"PhoneWithExtension", func(in *Intent) { in.Audience.SMS = []string{"+14155552671 ext. 12"} }, Limits{}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"PhoneWithRFC3966Extension", func(in *Intent) { in.Audience.SMS = []string{"+14155552671;ext=12"} }, Limits{}, "audience.sms[0]", heraldtype.CodeInvalidPhone},
		{"PhoneWithXExtension", func(in *Intent) { in.Audience.SMS = []string{"+14155550123", "+1 415 555 2671 x12"} }, Limits{}, "audience.sms[1]", heraldtype.CodeInvalidPhone},
		{"SMSContentMissing", func(in *Intent) { in.Content.SMS = nil }, Limits{}, "content.sms", heraldtype.CodeMissingContent},
		{"EmailContentMissing", func(in *Intent) { in.Content.Email = nil }, Limits{}, "content.email", heraldtype.CodeMissingContent},
		{"WebhookContentMissing", func(in *Intent) { in.Content.Webhook = nil }, Limits{}, "content.webhook", heraldtype.CodeMissingContent},
		{"WebhookContentNull", func(in *Intent) { in.Content.Webhook = json.RawMessage("null") }, Limits{}, "content.webhook", heraldtype.CodeMissingContent},
		{"ContentForUnlistedChannel", func(in *Intent) {
			in.Channels = []string{"sms", "webhook"}
			in.Audience.Email = nil
		}, Limits{}, "content.email", heraldtype.CodeInvalidField},
		{"SMSBodyEmpty", func(in *Intent) { in.Content.SMS.Body = "" }, Limits{}, "content.sms.body", heraldtype.CodeMissingField},
		{"SMSBodyBlank", func(in *Intent) { in.Content.SMS.Body = " \n " }, Limits{}, "content.sms.body", heraldtype.CodeMissingField},
		{"SMSBodyInvalidUTF8", func(in *Intent) { in.Content.SMS.Body = "hi \xff" }, Limits{}, "content.sms.body", heraldtype.CodeInvalidField},
		{"SMSBodyWithNUL", func(in *Intent) { in.Content.SMS.Body = "hi \x00" }, Limits{}, "content.sms.body", heraldtype.CodeInvalidField},
		{"SMSBodyOverDefaultTenSegments", func(in *Intent) { in.Content.SMS.Body = long(1531) }, Limits{}, "content.sms.body", heraldtype.CodeSMSTooLong},
		{"SMSBodyOverConfiguredSegments", func(in *Intent) { in.Content.SMS.Body = long(161) }, Limits{MaxSMSSegments: 1}, "content.sms.body", heraldtype.CodeSMSTooLong},
		{"SMSUCS2BodyOverSegments", func(in *Intent) { in.Content.SMS.Body = strings.Repeat("😀", 36) }, Limits{MaxSMSSegments: 1}, "content.sms.body", heraldtype.CodeSMSTooLong},
		{"EmailSubjectTooLong", func(in *Intent) { in.Content.Email.Subject = long(999) }, Limits{}, "content.email.subject", heraldtype.CodeInvalidField},
		{"EmailSubjectWithLineBreak", func(in *Intent) { in.Content.Email.Subject = "Hi\r\nBcc: x@example.com" }, Limits{}, "content.email.subject", heraldtype.CodeInvalidField},
		{"EmailWithoutBody", func(in *Intent) { in.Content.Email.Text = "" }, Limits{}, "content.email", heraldtype.CodeMissingField},
		{"EmailHTMLInvalidUTF8", func(in *Intent) { in.Content.Email.HTML = "<p>\xff</p>" }, Limits{}, "content.email.html", heraldtype.CodeInvalidField},
		{"WebhookContentNotJSON", func(in *Intent) { in.Content.Webhook = json.RawMessage(`{"order":`) }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentTwoValues", func(in *Intent) { in.Content.Webhook = json.RawMessage(`1 2`) }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentDuplicateKey", func(in *Intent) { in.Content.Webhook = json.RawMessage(`{"a":1,"a":2}`) }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentWithNUL", func(in *Intent) { in.Content.Webhook = json.RawMessage(`{"a":"x\u0000"}`) }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentTooDeep", func(in *Intent) {
			in.Content.Webhook = json.RawMessage(strings.Repeat("[", 65) + strings.Repeat("]", 65))
		}, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentLoneSurrogate", func(in *Intent) { in.Content.Webhook = json.RawMessage(`{"note":"\ud800"}`) }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentLoneSurrogateKey", func(in *Intent) { in.Content.Webhook = json.RawMessage(`[{"\udc00":1}]`) }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentInvalidUTF8", func(in *Intent) { in.Content.Webhook = json.RawMessage("{\"note\":\"caf\xe9\"}") }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"WebhookContentHugeNumber", func(in *Intent) { in.Content.Webhook = json.RawMessage(`{"n":1e999999}`) }, Limits{}, "content.webhook", heraldtype.CodeInvalidField},
		{"PayloadTooLarge", func(in *Intent) {}, Limits{MaxPayloadBytes: 64}, "content", heraldtype.CodeTooLarge},
		{"PriorityUnknown", func(in *Intent) { in.Priority = "urgent" }, Limits{}, "priority", heraldtype.CodeInvalidField},
		{"MaxAttemptsNegative", func(in *Intent) { in.MaxAttempts = -1 }, Limits{}, "max_attempts", heraldtype.CodeInvalidField},
		{"MaxAttemptsOver100", func(in *Intent) { in.MaxAttempts = 101 }, Limits{}, "max_attempts", heraldtype.CodeInvalidField},
		{"SendAtBeyondDefault90Days", func(in *Intent) { in.SendAt = testNow.Add(90*24*time.Hour + time.Second) }, Limits{}, "send_at", heraldtype.CodeScheduleOutOfRange},
		{"SendAtBeyondConfiguredLimit", func(in *Intent) { in.SendAt = testNow.Add(2 * time.Hour) }, Limits{MaxScheduleAhead: time.Hour}, "send_at", heraldtype.CodeScheduleOutOfRange},
		{"ExpiresAtInThePast", func(in *Intent) { in.ExpiresAt = testNow.Add(-time.Second) }, Limits{}, "expires_at", heraldtype.CodeScheduleOutOfRange},
		{"ExpiresAtIsNow", func(in *Intent) { in.ExpiresAt = testNow }, Limits{}, "expires_at", heraldtype.CodeScheduleOutOfRange},
		{"ExpiresAtBeforeSendAt", func(in *Intent) {
			in.SendAt = testNow.Add(time.Hour)
			in.ExpiresAt = testNow.Add(30 * time.Minute)
		}, Limits{}, "expires_at", heraldtype.CodeScheduleOutOfRange},
		{"ExpiresAtEqualsSendAt", func(in *Intent) {
			in.SendAt = testNow.Add(time.Hour)
			in.ExpiresAt = in.SendAt
		}, Limits{}, "expires_at", heraldtype.CodeScheduleOutOfRange},
		{"OccurredAtBeyondYear9999", func(in *Intent) { in.OccurredAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, Limits{}, "occurred_at", heraldtype.CodeInvalidField},
		{"TooManyRoutes", func(in *Intent) {}, Limits{MaxRoutes: 5}, "audience", heraldtype.CodeTooManyRoutes},
		{"TooManyRoutesFromUsersTimesChannels", func(in *Intent) {
			in.Audience = Audience{UserIDs: []string{"1", "2", "3", "4"}}
		}, Limits{MaxRoutes: 11}, "audience", heraldtype.CodeTooManyRoutes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validIntent()
			tt.mutate(in)
			v, err := Validate(in, tt.lim, testNow)
			require.Nil(t, v)
			requireFieldError(t, err, tt.wantField, tt.wantCode)
		})
	}
}

func TestValidate_AcceptsValuesAtLimits(t *testing.T) {
	t.Parallel()

	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name   string
		mutate func(in *Intent)
		lim    Limits
	}{
		{"NameCharsetAndMaxLength", func(in *Intent) { in.NotificationType = "Order.Shipped_v2:eu-" + long(108) }, Limits{}},
		{"IdempotencyKeyUnicodeAt255", func(in *Intent) { in.IdempotencyKey = "clé " + strings.Repeat("é", 251) }, Limits{}},
		{"RequestAndTraceIDAt128", func(in *Intent) { in.RequestID, in.TraceID = long(128), long(128) }, Limits{}},
		{"UserIDAt255", func(in *Intent) { in.Audience.UserIDs = []string{strings.Repeat("ü", 255)} }, Limits{}},
		{"MaxAttemptsZeroAnd100", func(in *Intent) { in.MaxAttempts = 100 }, Limits{}},
		{"SendAtExactly90DaysAhead", func(in *Intent) { in.SendAt = testNow.Add(90 * 24 * time.Hour) }, Limits{}},
		{"SendAtInThePastMeansNow", func(in *Intent) { in.SendAt = testNow.Add(-time.Hour) }, Limits{}},
		{"ExpiresAtJustAfterSendAt", func(in *Intent) {
			in.SendAt = testNow.Add(time.Hour)
			in.ExpiresAt = in.SendAt.Add(time.Microsecond)
		}, Limits{}},
		{"SMSAtExactlyMaxSegments", func(in *Intent) { in.Content.SMS.Body = long(1530) }, Limits{}},
		{"EmailSubjectAt998WithHTMLOnly", func(in *Intent) {
			in.Content.Email = &EmailContent{Subject: long(998), HTML: "<p>hi</p>"}
		}, Limits{}},
		{"EmailWithoutSubject", func(in *Intent) { in.Content.Email.Subject = "" }, Limits{}},
		{"URLAt2048", func(in *Intent) { in.Audience.Webhook = []string{"https://example.com/" + long(2028)} }, Limits{}},
		{"WebhookContentString", func(in *Intent) { in.Content.Webhook = json.RawMessage(`"shipped"`) }, Limits{}},
		{"WebhookContentNumber", func(in *Intent) { in.Content.Webhook = json.RawMessage(`9`) }, Limits{}},
		{"WebhookContentFalse", func(in *Intent) { in.Content.Webhook = json.RawMessage(`false`) }, Limits{}},
		{"WebhookContent64Deep", func(in *Intent) {
			in.Content.Webhook = json.RawMessage(strings.Repeat("[", 64) + strings.Repeat("]", 64))
		}, Limits{}},
		{"RoutesExactlyMaxRoutes", func(in *Intent) {}, Limits{MaxRoutes: 6}},
		{"UsersOnly", func(in *Intent) { in.Audience = Audience{UserIDs: []string{"42"}} }, Limits{}},
		{"OneChannelOneAddress", func(in *Intent) {
			in.Channels = []string{"email"}
			in.Audience = Audience{Email: []string{"a@example.com"}}
			in.Content = Content{Email: &EmailContent{Subject: "s", Text: "t"}}
		}, Limits{}},
		{"UnknownPhoneFormattingIsNormalized", func(in *Intent) { in.Audience.SMS = []string{"+44 20 7183 8750"} }, Limits{}},
		{"HTTPURLWithPortQueryAndFragment", func(in *Intent) { in.Audience.Webhook = []string{"http://10.0.0.1:8080/h?x=1#f"} }, Limits{}},
		{"URLPortsAtTheirLimits", func(in *Intent) {
			in.Audience.Webhook = []string{"https://a.example.com:1/", "https://b.example.com:65535/", "HTTPS://C.example.com:65535/x?y"}
		}, Limits{}},
		{"WebhookContentSurrogatePairAndEscapedReplacement", func(in *Intent) {
			in.Content.Webhook = json.RawMessage(`{"emoji":"\ud83d\ude00","fffd":"\ufffd","text":"\\ud800"}`)
		}, Limits{}},
		{"EmailWithDisplayName", func(in *Intent) { in.Audience.Email = []string{"Ops Team <ops@example.com>"} }, Limits{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validIntent()
			tt.mutate(in)
			v, err := Validate(in, tt.lim, testNow)
			require.NoError(t, err)
			require.NotNil(t, v)
		})
	}
}

func TestValidate_NormalizesTheIntent(t *testing.T) {
	t.Parallel()

	in := &Intent{
		NotificationType: " order.shipped ",
		Producer:         "\tshop\n",
		IdempotencyKey:   " order-9 ",
		RequestID:        " req-1 ",
		Audience: Audience{
			UserIDs: []string{" 42 ", "42", "7"},
			SMS:     []string{"+1 (415) 555-0123", "+14155550123", " +44 20 7183 8750 "},
			Email:   []string{"Ops <ops@EXAMPLE.com>", "ops@example.COM", "Ops@example.com"},
			Webhook: []string{"HTTPS://Hooks.Example.COM/Orders", "https://hooks.example.com/Orders"},
		},
		Channels:   []string{" webhook", "sms", "email "},
		Content:    validIntent().Content,
		OccurredAt: time.Date(2026, 3, 1, 13, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		SendAt:     time.Date(2026, 3, 2, 9, 0, 0, 0, time.FixedZone("EST", -5*3600)),
		Priority:   " bulk ",
		Campaign:   " spring-sale ",
	}
	v, err := Validate(in, Limits{}, testNow)
	require.NoError(t, err)

	got := v.Intent
	require.Equal(t, "order.shipped", got.NotificationType)
	require.Equal(t, "shop", got.Producer)
	require.Equal(t, "order-9", got.IdempotencyKey)
	require.Equal(t, "req-1", got.RequestID)
	require.Equal(t, []string{"webhook", "sms", "email"}, got.Channels)
	require.Equal(t, []string{"42", "7"}, got.Audience.UserIDs)
	require.Equal(t, []string{"+14155550123", "+442071838750"}, got.Audience.SMS)
	require.Equal(t, []string{"ops@example.com", "Ops@example.com"}, got.Audience.Email, "domain lower-cased, local part kept")
	require.Equal(t, []string{"https://hooks.example.com/Orders"}, got.Audience.Webhook, "scheme and host lower-cased, path kept")
	require.Equal(t, time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC), got.OccurredAt, "UTC, truncated to microseconds")
	require.Equal(t, time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC), got.SendAt)
	require.Equal(t, heraldtype.PriorityBulk, got.Priority)
	require.Equal(t, "spring-sale", got.Campaign, "trimmed")
	require.Equal(t, int16(1), v.Priority)
	require.Equal(t, AudienceMixed, v.AudienceKind)
	require.Len(t, v.Routes, 2*3+2+2+1, "two users on three channels plus the distinct addresses")
}

func TestValidate_DefaultsOccurredAtAndPriority(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 3, 1, 12, 0, 0, 999, time.FixedZone("X", 7200))
	v, err := Validate(validIntent(), Limits{}, now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), v.Intent.OccurredAt)
	require.Equal(t, heraldtype.PriorityTransactional, v.Intent.Priority)
	require.Equal(t, int16(0), v.Priority)
	require.True(t, v.Intent.SendAt.IsZero())
	require.True(t, v.Intent.ExpiresAt.IsZero())
}

func TestValidate_PlansSortedRoutes(t *testing.T) {
	t.Parallel()

	in := validIntent()
	in.Content.SMS.Body = "Votre commande est expédiée 📦"
	v, err := Validate(in, Limits{}, testNow)
	require.NoError(t, err)

	id := func(ch, ref string) string {
		sum := sha256.Sum256([]byte(ref))
		return ch + ":" + hex.EncodeToString(sum[:])[:12]
	}
	require.Equal(t, []RoutePlan{
		{RouteID: id("email", "ops@example.com"), Channel: "email", RecipientRef: "ops@example.com"},
		{RouteID: id("email", "user:42"), Channel: "email", RecipientRef: "user:42"},
		{RouteID: id("sms", "+14155550123"), Channel: "sms", RecipientRef: "+14155550123", SMSEncoding: gsm7.EncodingUCS2, SMSSegments: 1},
		{RouteID: id("sms", "user:42"), Channel: "sms", RecipientRef: "user:42", SMSEncoding: gsm7.EncodingUCS2, SMSSegments: 1},
		{RouteID: id("webhook", "https://hooks.example.com/orders"), Channel: "webhook", RecipientRef: "https://hooks.example.com/orders"},
		{RouteID: id("webhook", "user:42"), Channel: "webhook", RecipientRef: "user:42"},
	}, v.Routes)
	for _, r := range v.Routes {
		require.NotContains(t, r.RouteID, "example", "route ids carry no address")
	}

	// Listing order does not change the plan.
	in.Channels = []string{"webhook", "email", "sms"}
	again, err := Validate(in, Limits{}, testNow)
	require.NoError(t, err)
	require.Equal(t, v.Routes, again.Routes)
}

func TestValidate_CollapsesDuplicateRecipients(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		audience Audience
		channels []string
		want     int
	}{
		{"SameNumberWrittenTwoWays", Audience{SMS: []string{"+14155550123", "+1 415-555-0123", "+1 (415) 555 0123"}}, []string{"sms"}, 1},
		{"SameEmailWithDomainCaseAndName", Audience{Email: []string{"ops@example.com", "Ops <ops@EXAMPLE.COM>"}}, []string{"email"}, 1},
		{"EmailLocalPartCaseIsDistinct", Audience{Email: []string{"ops@example.com", "OPS@example.com"}}, []string{"email"}, 2},
		{"SameURLWithHostCase", Audience{Webhook: []string{"https://Example.com/h", "HTTPS://example.com/h"}}, []string{"webhook"}, 1},
		{"SameUserTwice", Audience{UserIDs: []string{"42", " 42"}}, []string{"sms", "email"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validIntent()
			in.Audience = tt.audience
			in.Channels = tt.channels
			full := in.Content
			in.Content = Content{}
			for _, ch := range tt.channels {
				switch ch {
				case "sms":
					in.Content.SMS = full.SMS
				case "email":
					in.Content.Email = full.Email
				case "webhook":
					in.Content.Webhook = full.Webhook
				}
			}
			v, err := Validate(in, Limits{}, testNow)
			require.NoError(t, err)
			require.Len(t, v.Routes, tt.want)
		})
	}
}

func TestValidate_ClassifiesAudienceKind(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		audience Audience
		want     string
	}{
		{"UsersOnly", Audience{UserIDs: []string{"42"}}, AudienceUsers},
		{"AddressesOnly", Audience{SMS: []string{"+14155550123"}, Webhook: []string{"https://example.com/h"}}, AudienceAddresses},
		{"Mixed", Audience{UserIDs: []string{"42"}, Email: []string{"ops@example.com"}}, AudienceMixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validIntent()
			in.Audience = tt.audience
			v, err := Validate(in, Limits{}, testNow)
			require.NoError(t, err)
			require.Equal(t, tt.want, v.AudienceKind)
		})
	}
}

func TestValidate_ReportsEveryFieldError(t *testing.T) {
	t.Parallel()

	in := &Intent{
		Producer: "shop eu",
		Audience: Audience{
			SMS:     []string{"+14155550123", "0123", "+1 nope"},
			Webhook: []string{"ftp://example.com"},
		},
		Channels:    []string{"sms", "fax", "sms"},
		Content:     Content{SMS: &SMSContent{}},
		MaxAttempts: 500,
		ExpiresAt:   testNow.Add(-time.Hour),
	}
	_, err := Validate(in, Limits{}, testNow)
	type fc struct {
		Field string
		Code  heraldtype.Code
	}
	var got []fc
	for _, fe := range fieldErrors(t, err) {
		got = append(got, fc{fe.Field, fe.Code})
	}
	require.Equal(t, []fc{
		{"notification_type", heraldtype.CodeMissingField},
		{"producer", heraldtype.CodeInvalidField},
		{"idempotency_key", heraldtype.CodeMissingField},
		{"channels[1]", heraldtype.CodeUnknownChannel},
		{"channels[2]", heraldtype.CodeInvalidField},
		{"max_attempts", heraldtype.CodeInvalidField},
		{"expires_at", heraldtype.CodeScheduleOutOfRange},
		{"audience.sms[1]", heraldtype.CodeInvalidPhone},
		{"audience.sms[2]", heraldtype.CodeInvalidPhone},
		{"audience.webhook", heraldtype.CodeInvalidField},
		{"audience.webhook[0]", heraldtype.CodeInvalidURL},
		{"content.sms.body", heraldtype.CodeMissingField},
	}, got)

	var verr *heraldtype.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, heraldtype.CodeMissingField, verr.Code(), "Code is the first error's code")
}

func TestValidate_LeavesInputUnchanged(t *testing.T) {
	t.Parallel()

	in := validIntent()
	in.NotificationType = " order.shipped "
	in.Audience.SMS = []string{"+1 415 555 0123", "+14155550123"}
	in.Content.Webhook = json.RawMessage(`{ "b": 1, "a": 2 }`)
	before := *in
	before.Audience.SMS = append([]string(nil), in.Audience.SMS...)
	smsBefore := *in.Content.SMS

	_, err := Validate(in, Limits{}, testNow)
	require.NoError(t, err)
	require.Equal(t, before, *in)
	require.Equal(t, smsBefore, *in.Content.SMS)
}

func TestValidate_RefusesNilIntent(t *testing.T) {
	t.Parallel()

	v, err := Validate(nil, Limits{}, testNow)
	require.Nil(t, v)
	requireFieldError(t, err, "", heraldtype.CodeMissingField)
}
