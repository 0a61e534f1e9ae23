package smpp

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/gsm7"
)

// EncodeUCS2 returns s in UTF-16 big-endian, as SMPP's data_coding 8
// carries it; characters outside the BMP become surrogate pairs.
func EncodeUCS2(s string) []byte {
	u := utf16.Encode([]rune(s))
	out := make([]byte, 0, 2*len(u))
	for _, c := range u {
		out = append(out, byte(c>>8), byte(c))
	}
	return out
}

// DecodeUCS2 returns the text of UTF-16 big-endian b; an odd last octet is
// dropped and unpaired surrogates read as U+FFFD.
func DecodeUCS2(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	return string(utf16.Decode(u))
}

// decodeLatin1 returns the text of ISO-8859-1 b.
func decodeLatin1(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// DecodeText returns the text of user data (without a user data header)
// of the given data_coding: GSM-7 (packed when packed is set, after fill
// bits) for 0, ISO-8859-1 for 3, UCS-2 for 8 (and for the same alphabets
// with a message class, a flash SMS's 0x10 and 0x18: see Alphabet), and for
// any other coding the octets as they are if they are valid UTF-8, else as
// ISO-8859-1.
func DecodeText(dataCoding uint8, b []byte, packed bool, fill int) string {
	switch Alphabet(dataCoding) {
	case CodingDefault:
		if packed {
			return gsm7.Decode(gsm7.Unpack(b, fill))
		}
		return gsm7.Decode(b)
	case CodingLatin1:
		return decodeLatin1(b)
	case CodingUCS2:
		return DecodeUCS2(b)
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return decodeLatin1(b)
}
