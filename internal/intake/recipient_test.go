package intake

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestValidateRecipient_RefusesUndeliverable(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		r         heraldtype.Recipient
		wantField string
		wantCode  heraldtype.Code
	}{
		{"WebhookPortOutOfRange", heraldtype.Recipient{UserID: "42", WebhookURL: "https://hooks.example.com:99999999/u/42"}, "webhook_url", heraldtype.CodeInvalidURL},
		{"WebhookPortZero", heraldtype.Recipient{UserID: "42", WebhookURL: "https://hooks.example.com:0/"}, "webhook_url", heraldtype.CodeInvalidURL},
		{"WebhookPortNotNumeric", heraldtype.Recipient{UserID: "42", WebhookURL: "https://hooks.example.com:abc/"}, "webhook_url", heraldtype.CodeInvalidURL},
		{"PhoneWithExtension", heraldtype.Recipient{UserID: "42", Phone: "+14155552671 ext. 12"}, "phone", heraldtype.CodeInvalidPhone},
		{"PhoneWithRFC3966Extension", heraldtype.Recipient{UserID: "42", Phone: "+14155552671;ext=12"}, "phone", heraldtype.CodeInvalidPhone},
		{"PhoneWithXExtension", heraldtype.Recipient{UserID: "42", Phone: "+14155552671 x12"}, "phone", heraldtype.CodeInvalidPhone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ValidateRecipient(tt.r)
			requireFieldError(t, err, tt.wantField, tt.wantCode)
		})
	}
}

func TestValidateRecipient_Normalizes(t *testing.T) {
	t.Parallel()

	r, err := ValidateRecipient(heraldtype.Recipient{
		UserID: " 42 ", Phone: "+1 (415) 555-2671", WebhookURL: "HTTPS://Hooks.Example.com:65535/u/42",
		OptedOut: []string{"sms", "email", "sms"},
	})
	require.NoError(t, err)
	require.Equal(t, heraldtype.Recipient{
		UserID: "42", Phone: "+14155552671", WebhookURL: "https://hooks.example.com:65535/u/42",
		OptedOut: []string{"email", "sms"},
	}, r)
}

func TestChannels_AreTheVocabularys(t *testing.T) {
	t.Parallel()

	require.ElementsMatch(t, []string{
		string(heraldtype.ChannelSMS), string(heraldtype.ChannelEmail), string(heraldtype.ChannelWebhook),
	}, Channels())
}
