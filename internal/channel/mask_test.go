package channel

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMaskAddress_HidesMostOfEveryKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"Empty", "", ""},
		{"E164US", "+14155550100", "+1415*****00"},
		{"E164UK", "+447911123456", "+4479******56"},
		{"E164Short", "+3225551234", "+3225****34"},
		{"PhoneNinedigits", "+12345678", "+12****78"},
		{"PhoneSixDigits", "+123456", "+******"},
		{"PhoneWithSeparators", "+1 (415) 555-0100", "+1415*****00"},
		{"PhoneWithoutPlus", "4155550100", "4155****00"},
		{"Email", "jane@example.com", "j***@example.com"},
		{"EmailOneLetter", "j@example.com", "j***@example.com"},
		{"EmailUnicode", "zoë@exemple.fr", "z***@exemple.fr"},
		{"EmailWithName", "Jane Doe <jane@example.com>", "j***@example.com"},
		{"EmailEmptyLocal", "@example.com", "***@example.com"},
		{"URLWithPathAndQuery", "https://hooks.example.com/v1/abc?token=s3cr3t", "https://hooks.example.com"},
		{"URLWithPort", "http://127.0.0.1:8080/hook", "http://127.0.0.1:8080"},
		{"URLWithUserinfo", "https://user:pass@hooks.example.com/x", "https://hooks.example.com"},
		{"URLUnparsable", "https://%zz/", "[url]"},
		{"Other", "some-opaque-token", "s***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, MaskAddress(tt.in))
		})
	}
}

func TestRedact_MasksAddressesInText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"SMTPReply", "5.1.1 <jane@example.com>: Recipient address rejected", 0, "5.1.1 <j***@example.com>: Recipient address rejected"},
		{"ProviderError", "The 'to' number +14155550100 is not a valid mobile number", 0, "The 'to' number +1415*****00 is not a valid mobile number"},
		{"URL", "see https://hooks.example.com/a?token=x for details", 0, "see https://hooks.example.com for details"},
		{"ShortNumbersKept", "error 21211: code 5.7.1", 0, "error 21211: code 5.7.1"},
		{"StatusCodesKept", "bind_transceiver: ESME_RBINDFAIL (0x0000000D), then 0x00000058", 0,
			"bind_transceiver: ESME_RBINDFAIL (0x0000000D), then 0x00000058"},
		{"LongerHexIsNoCode", "0x254712345678", 0, "0x2547******78"},
		{"LineBreaksFlattened", "line one\r\nline two", 0, "line one  line two"},
		{"Truncated", "abcdefghij", 5, "abcde…"},
		{"TruncatedOnRuneBoundary", "ééééé", 3, "é…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Redact(tt.in, tt.max))
		})
	}
}

func TestMaskAddress_NeverReturnsFullAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"+14155550100", "jane.doe@example.com", "https://h.example.com/secret-path", "x@y.z"} {
		got := MaskAddress(addr)
		require.NotEqual(t, addr, got)
		require.False(t, strings.Contains(got, addr), got)
	}
}
