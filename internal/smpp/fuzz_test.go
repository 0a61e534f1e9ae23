package smpp

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/intake"
)

// FuzzDecode feeds Decode and ReadPDU arbitrary bytes: they must never
// panic, and whatever decodes must encode and decode again to the same
// PDU (decode → encode → decode).
func FuzzDecode(f *testing.F) {
	for _, p := range samplePDUs() {
		b, err := p.Encode()
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0, 0, 0, 16, 0x80, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		rp, rerr := ReadPDU(bytes.NewReader(b))
		if err != nil {
			// ReadPDU may still read a PDU off the front of b, which may
			// hold more than one.
			require.Nil(t, p)
			return
		}
		require.NoError(t, rerr)
		require.Equal(t, p, rp)
		enc, err := p.Encode()
		require.NoError(t, err, "a decoded PDU must encode")
		again, err := Decode(enc)
		require.NoError(t, err, "an encoded PDU must decode")
		require.Equal(t, p, again)
	})
}

// FuzzSplitAgreesWithIntake checks Split against intake.Encoding, the
// reference for how herald counts segments: the same encoding, the same
// number of parts, parts within capacity that decode on their own (no
// escape or surrogate pair cut), and the parts together giving the body
// back; and that Message's submits, in every long-message mode, encode
// and give the body back.
func FuzzSplitAgreesWithIntake(f *testing.F) {
	for _, s := range []string{"", "hello", "€€€", string(bytes.Repeat([]byte("a"), 161)),
		string(bytes.Repeat([]byte("a"), 152)) + "€b", "😀😀😀 emoji", string(bytes.Repeat([]byte("ж"), 200)),
		string(bytes.Repeat([]byte("x"), 66)) + "😀" + "tail", "bad \xff utf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		enc, segments := intake.Encoding(body)
		seg := Split(body)
		if enc == intake.EncodingGSM7 {
			require.Equal(t, uint8(CodingDefault), seg.DataCoding)
		} else {
			require.Equal(t, uint8(CodingUCS2), seg.DataCoding)
		}
		require.Len(t, seg.Parts, segments, "parts must agree with intake's segment count")
		want := string([]rune(body)) // invalid UTF-8 reads as U+FFFD, as intake counts it
		var got string
		for _, p := range seg.Parts {
			if seg.DataCoding == CodingDefault {
				if len(seg.Parts) > 1 {
					require.LessOrEqual(t, len(p), gsm7Multi)
				}
				got += DecodeGSM7(p)
			} else {
				if len(seg.Parts) > 1 {
					require.LessOrEqual(t, len(p), 2*ucs2Multi)
				}
				s := DecodeUCS2(p)
				require.True(t, utf8.ValidString(s))
				got += s
			}
		}
		require.Equal(t, want, got)
		if len(seg.Parts) > 255 {
			return
		}
		for _, mode := range []LongMode{LongUDH, LongSAR, LongPayload} {
			for _, packed := range []bool{false, true} {
				sms, err := Message(SM{DestinationAddr: "1"}, body, MessageOpts{Long: mode, Packed: packed, Ref: 7})
				require.NoError(t, err)
				var text string
				for _, sm := range sms {
					_, err := (&PDU{Command: SubmitSM, Body: sm}).Encode()
					require.NoError(t, err)
					_, _, s, err := UserData(sm, packed)
					require.NoError(t, err)
					text += s
				}
				if packed && seg.DataCoding == CodingDefault && len(want) > 0 && want[len(want)-1] == '\r' {
					continue // a final CR may gain a second one (see PackGSM7)
				}
				require.Equal(t, want, text, "mode %s packed %v", mode, packed)
			}
		}
	})
}

// FuzzPackGSM7 checks UnpackGSM7 undoes PackGSM7 at every fill.
func FuzzPackGSM7(f *testing.F) {
	f.Add([]byte("hello world"), uint8(1))
	f.Add([]byte("1234567"), uint8(0))
	f.Add([]byte("abc\r"), uint8(0))
	f.Fuzz(func(t *testing.T, septets []byte, fill uint8) {
		fill %= 7
		for i := range septets {
			septets[i] &= 0x7F
		}
		got := UnpackGSM7(PackGSM7(septets, int(fill)), int(fill))
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
