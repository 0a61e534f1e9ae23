package smpp

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/gsm7"
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

// FuzzSplitAgreesWithEncoding checks Split against gsm7.Encoding, the
// reference for how herald counts segments: the same encoding, the same
// number of parts, parts within capacity that decode on their own (no
// escape or surrogate pair cut), and the parts together giving the body
// back; and that Message's submits, in every long-message mode, encode
// and give the body back.
func FuzzSplitAgreesWithEncoding(f *testing.F) {
	for _, s := range []string{"", "hello", "€€€", string(bytes.Repeat([]byte("a"), 161)),
		string(bytes.Repeat([]byte("a"), 152)) + "€b", "😀😀😀 emoji", string(bytes.Repeat([]byte("ж"), 200)),
		string(bytes.Repeat([]byte("x"), 66)) + "😀" + "tail", "bad \xff utf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		enc, segments := gsm7.Encoding(body)
		seg := Split(body)
		if enc == gsm7.EncodingGSM7 {
			require.Equal(t, uint8(CodingDefault), seg.DataCoding)
		} else {
			require.Equal(t, uint8(CodingUCS2), seg.DataCoding)
		}
		require.Len(t, seg.Parts, segments, "parts must agree with the segment count")
		want := string([]rune(body)) // invalid UTF-8 reads as U+FFFD, as gsm7.Encoding counts it
		var got string
		for _, p := range seg.Parts {
			if seg.DataCoding == CodingDefault {
				if len(seg.Parts) > 1 {
					require.LessOrEqual(t, len(p), gsm7.Multi)
				}
				got += gsm7.Decode(p)
			} else {
				if len(seg.Parts) > 1 {
					require.LessOrEqual(t, len(p), 2*gsm7.UCS2Multi)
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
					continue // a final CR may gain a second one (see gsm7.Pack)
				}
				require.Equal(t, want, text, "mode %s packed %v", mode, packed)
			}
		}
	})
}
