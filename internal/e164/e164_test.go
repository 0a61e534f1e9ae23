package e164

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValid_MatchesLibphonenumber checks every answer, asked twice (the
// second from the remembered set when the first was yes), against
// libphonenumber's parse, validation and format.
func TestValid_MatchesLibphonenumber(t *testing.T) {
	for _, s := range []string{
		"+14155550100", "+447911123456", "+4407911123456", "+33612345678",
		"+390612345678", "+12345", "+1 415 555 0100", "+1-415-555-0100",
		"14155550100", "+", "", "+999999999999", "+14155550100;ext=5",
		"+1415555010x", "+٤٤٧٩١١١٢٣٤٥٦", "+4479111234567890123",
	} {
		want := parse(s)
		require.Equal(t, want, Valid(s), "%q", s)
		require.Equal(t, want, Valid(s), "%q asked again", s)
	}
	require.True(t, Valid("+14155550100"))
	require.False(t, Valid("+14155550100 "))
}

// TestValid_SetStaysBounded checks that more valid numbers than the set
// holds leave it at most its bound, and each still valid.
func TestValid_SetStaysBounded(t *testing.T) {
	for i := range remembered + 100 {
		n := 2_025_550_000 + i%9000 + (i/9000)*10_000
		s := "+1" + itoa(n)
		if !Valid(s) {
			continue
		}
		require.LessOrEqual(t, count.Load(), int64(remembered))
	}
	var held int
	valid.Range(func(k, _ any) bool {
		held++
		require.True(t, parse(k.(string)), "%v", k)
		return true
	})
	require.LessOrEqual(t, held, remembered)
	require.Positive(t, held)
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func BenchmarkValid(b *testing.B) {
	b.Run("remembered", func(b *testing.B) {
		Valid("+447911123456")
		b.ReportAllocs()
		for b.Loop() {
			Valid("+447911123456")
		}
	})
	b.Run("libphonenumber", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			parse("+447911123456")
		}
	})
}
