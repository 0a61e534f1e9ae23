package gsm7

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPack_MatchesTheSpecificationsExample(t *testing.T) {
	t.Parallel()
	// "hellohello" packed, from 3GPP TS 23.038's worked example.
	require.Equal(t, []byte{0xE8, 0x32, 0x9B, 0xFD, 0x46, 0x97, 0xD9, 0xEC, 0x37}, Pack([]byte("hellohello"), 0))
	// Seven septets leave seven spare bits: a CR fills them, and is dropped.
	p := Pack([]byte("1234567"), 0)
	require.Equal(t, byte('\r'<<1), p[6]&0xFE)
	require.Equal(t, []byte("1234567"), Unpack(p, 0))
}

// FuzzPack checks Unpack undoes Pack at every fill.
func FuzzPack(f *testing.F) {
	f.Add([]byte("hello world"), uint8(1))
	f.Add([]byte("1234567"), uint8(0))
	f.Add([]byte("abc\r"), uint8(0))
	f.Fuzz(func(t *testing.T, septets []byte, fill uint8) {
		fill %= 7
		for i := range septets {
			septets[i] &= 0x7F
		}
		got := Unpack(Pack(septets, int(fill)), int(fill))
		if n := len(septets); n > 0 && septets[n-1] == '\r' {
			// A wanted final CR may come back doubled, never lost.
			require.True(t, bytes.HasPrefix(got, septets), "%q -> %q", septets, got)
			return
		}
		require.Equal(t, len(septets), len(got))
		if len(septets) > 0 {
			require.Equal(t, septets, got)
		}
	})
}
