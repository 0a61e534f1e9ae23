package intake

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateRecipientRefusesWhatNoChannelCanDeliverTo(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		r         Recipient
		wantField string
		wantCode  string
	}{
		{"WebhookPortOutOfRange", Recipient{UserID: "42", WebhookURL: "https://hooks.example.com:99999999/u/42"}, "webhook_url", CodeInvalidURL},
		{"WebhookPortZero", Recipient{UserID: "42", WebhookURL: "https://hooks.example.com:0/"}, "webhook_url", CodeInvalidURL},
		{"WebhookPortNotNumeric", Recipient{UserID: "42", WebhookURL: "https://hooks.example.com:abc/"}, "webhook_url", CodeInvalidURL},
		{"PhoneWithExtension", Recipient{UserID: "42", Phone: "+14155552671 ext. 12"}, "phone", CodeInvalidPhone},
		{"PhoneWithRFC3966Extension", Recipient{UserID: "42", Phone: "+14155552671;ext=12"}, "phone", CodeInvalidPhone},
		{"PhoneWithXExtension", Recipient{UserID: "42", Phone: "+14155552671 x12"}, "phone", CodeInvalidPhone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ValidateRecipient(tt.r)
			requireFieldError(t, err, tt.wantField, tt.wantCode)
		})
	}
}

func TestValidateRecipientNormalizesWhatIsDeliverable(t *testing.T) {
	t.Parallel()

	r, err := ValidateRecipient(Recipient{
		UserID: " 42 ", Phone: "+1 (415) 555-2671", WebhookURL: "HTTPS://Hooks.Example.com:65535/u/42",
		OptedOut: []string{"sms", "email", "sms"},
	})
	require.NoError(t, err)
	require.Equal(t, Recipient{
		UserID: "42", Phone: "+14155552671", WebhookURL: "https://hooks.example.com:65535/u/42",
		OptedOut: []string{"email", "sms"},
	}, r)
}
