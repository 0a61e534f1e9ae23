package intake

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestSenderKindOf(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]SenderKind{
		"ACME": SenderAlphanumeric, "Shop24": SenderAlphanumeric, "ABCDEFGHIJK": SenderAlphanumeric,
		"+447700900123": SenderInternational, "+123456789012345": SenderInternational,
		"12345": SenderNumeric, "123456789012345": SenderNumeric,
		"": SenderInvalid, "ABCDEFGHIJKL": SenderInvalid, "+ACME": SenderInvalid, "+": SenderInvalid,
		"1234567890123456": SenderInvalid, "AC ME": SenderInvalid, "ACME\x07": SenderInvalid,
		"AC\nME": SenderInvalid, "Café": SenderInvalid, "AC-ME": SenderInvalid,
	} {
		got, why := SenderKindOf(s)
		require.Equal(t, want, got, "%q", s)
		require.Equal(t, want == SenderInvalid, why != "", "%q: %s", s, why)
	}
}

func TestValidateSenderAndMessageType(t *testing.T) {
	t.Parallel()

	t.Run("StoredInTheSMSContent", func(t *testing.T) {
		t.Parallel()
		in := validIntent()
		in.FromSender, in.MessageType = " ACME ", heraldtype.MessageTypeFlashSMS
		v, err := Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		require.Equal(t, "ACME", v.Intent.FromSender)
		require.Equal(t, heraldtype.MessageTypeFlashSMS, v.Intent.MessageType)
		require.Contains(t, string(v.PayloadJSON), `"sms":{"body":"Order 9 shipped","flash":true,"from":"ACME"}`)
	})
	t.Run("WithATemplateStoredBesideIt", func(t *testing.T) {
		t.Parallel()
		in := validIntent()
		in.Content = Content{}
		in.Template = &heraldtype.TemplateRef{Name: "shipped"}
		in.Data = map[string]any{"order": 9}
		plain, err := Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		require.Equal(t, `{"data":{"order":9},"template":{"locale":"","name":"shipped","version":0}}`, string(plain.PayloadJSON))
		in.FromSender, in.MessageType = "ACME", heraldtype.MessageTypeFlashSMS
		v, err := Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		require.Equal(t, `{"data":{"order":9},"sms_options":{"flash":true,"from":"ACME"},"template":{"locale":"","name":"shipped","version":0}}`, string(v.PayloadJSON))
		require.NotEqual(t, plain.Fingerprint, v.Fingerprint)
		in.MessageType = ""
		v, err = Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		require.Contains(t, string(v.PayloadJSON), `"sms_options":{"from":"ACME"}`)
	})
	t.Run("AbsentLeavesThePayloadAsItWas", func(t *testing.T) {
		t.Parallel()
		v, err := Validate(validIntent(), Limits{}, testNow)
		require.NoError(t, err)
		require.Contains(t, string(v.PayloadJSON), `"sms":{"body":"Order 9 shipped"}`)
	})
	t.Run("SMSSpelledOutIsTheDefault", func(t *testing.T) {
		t.Parallel()
		in := validIntent()
		in.MessageType = heraldtype.MessageTypeSMS
		v, err := Validate(in, Limits{}, testNow)
		require.NoError(t, err)
		require.Empty(t, v.Intent.MessageType)
		require.Equal(t, mustFingerprint(t, validIntent()), v.Fingerprint)
	})
	t.Run("PartOfTheFingerprintWhenPresent", func(t *testing.T) {
		t.Parallel()
		base := mustFingerprint(t, validIntent())
		in := validIntent()
		in.FromSender = "ACME"
		withSender := mustFingerprint(t, in)
		in.MessageType = heraldtype.MessageTypeFlashSMS
		withFlash := mustFingerprint(t, in)
		in.FromSender = "ACME2"
		other := mustFingerprint(t, in)
		require.Len(t, map[string]bool{base: true, withSender: true, withFlash: true, other: true}, 4)
	})

	tests := []struct {
		name   string
		mutate func(in *Intent)
		field  string
	}{
		{"SenderTooLong", func(in *Intent) { in.FromSender = "ABCDEFGHIJKL" }, "from_sender"},
		{"SenderNumberTooLong", func(in *Intent) { in.FromSender = "+" + strings.Repeat("1", 16) }, "from_sender"},
		{"SenderControlCharacter", func(in *Intent) { in.FromSender = "AC\x00ME" }, "from_sender"},
		{"SenderNewline", func(in *Intent) { in.FromSender = "ACME\r\n" + "X" }, "from_sender"},
		{"SenderBlank", func(in *Intent) { in.FromSender = "   " }, "from_sender"},
		{"SenderPunctuation", func(in *Intent) { in.FromSender = "ACME;DROP" }, "from_sender"},
		{"SenderWithoutSMS", func(in *Intent) {
			in.Channels = []string{"email"}
			in.Audience = Audience{Email: []string{"ops@example.com"}}
			in.Content.SMS, in.Content.Webhook = nil, nil
			in.FromSender = "ACME"
		}, "from_sender"},
		{"MessageTypeUnknown", func(in *Intent) { in.MessageType = "MMS" }, "message_type"},
		{"MessageTypeWrongCase", func(in *Intent) { in.MessageType = "flash_sms" }, "message_type"},
		{"FlashWithoutSMS", func(in *Intent) {
			in.Channels = []string{"email"}
			in.Audience = Audience{Email: []string{"ops@example.com"}}
			in.Content.SMS, in.Content.Webhook = nil, nil
			in.MessageType = heraldtype.MessageTypeFlashSMS
		}, "message_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validIntent()
			tt.mutate(in)
			_, err := Validate(in, Limits{}, testNow)
			require.Error(t, err)
			var found bool
			for _, fe := range fieldErrors(t, err) {
				if fe.Field == tt.field {
					found = true
					require.Equal(t, heraldtype.CodeInvalidField, fe.Code)
					require.NotContains(t, fe.Message, "\x00")
				}
			}
			require.True(t, found, "no error on %s in %v", tt.field, err)
		})
	}
}

func TestDecodeRawSenderAndMessageType(t *testing.T) {
	t.Parallel()
	in, err := DecodeRaw([]byte(`{"from_sender":"ACME","message_type":"FLASH_SMS"}`), Limits{})
	require.NoError(t, err)
	require.Equal(t, "ACME", in.FromSender)
	require.Equal(t, heraldtype.MessageTypeFlashSMS, in.MessageType)
	_, err = DecodeRaw([]byte(`{"from_sender":42}`), Limits{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "from_sender")
}
