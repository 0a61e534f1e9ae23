package smpp

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// gsm7Basic is the GSM 03.38 default alphabet in code order, 0x00 to
// 0x7F; 0x1B, the escape to the extension table, is held by a NUL here and
// never matched. intake keeps the same alphabet for counting segments; a
// test fails if the two disagree on any character.
var gsm7Basic = []rune("@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x00ÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")

// gsm7Escape is the septet announcing an extension-table character.
const gsm7Escape = 0x1B

// gsm7Ext maps the extension-table characters to their code after the
// escape.
var gsm7Ext = map[rune]byte{'\f': 0x0A, '^': 0x14, '{': 0x28, '}': 0x29, '\\': 0x2F, '[': 0x3C, '~': 0x3D, ']': 0x3E, '|': 0x40, '€': 0x65}

var (
	gsm7Code   = map[rune]byte{}
	gsm7ExtRev = map[byte]rune{}
)

func init() {
	if len(gsm7Basic) != 128 {
		panic("smpp: the GSM 03.38 table must have 128 entries")
	}
	for i, r := range gsm7Basic {
		if i != gsm7Escape {
			gsm7Code[r] = byte(i)
		}
	}
	for r, c := range gsm7Ext {
		gsm7ExtRev[c] = r
	}
}

// gsm7Septets returns r's septets: one for the basic alphabet, two (the
// escape and the code) for the extension table, none if r is not GSM-7.
func gsm7Septets(r rune) []byte {
	if c, ok := gsm7Code[r]; ok {
		return []byte{c}
	}
	if c, ok := gsm7Ext[r]; ok {
		return []byte{gsm7Escape, c}
	}
	return nil
}

// IsGSM7 reports whether every character of s is in the GSM 03.38 default
// alphabet or its extension table.
func IsGSM7(s string) bool {
	for _, r := range s {
		if gsm7Septets(r) == nil {
			return false
		}
	}
	return true
}

// DecodeGSM7 returns the text of unpacked septets (one per octet, the top
// bit ignored). An escape followed by a code the extension table does not
// have reads as that code's basic character, as 3GPP TS 23.038 asks; a
// trailing escape is dropped.
func DecodeGSM7(septets []byte) string {
	var sb strings.Builder
	for i := 0; i < len(septets); i++ {
		c := septets[i] & 0x7F
		if c == gsm7Escape {
			if i+1 >= len(septets) {
				break
			}
			i++
			n := septets[i] & 0x7F
			if r, ok := gsm7ExtRev[n]; ok {
				sb.WriteRune(r)
				continue
			}
			c = n
			if c == gsm7Escape {
				sb.WriteRune(' ')
				continue
			}
		}
		sb.WriteRune(gsm7Basic[c])
	}
	return sb.String()
}

// PackGSM7 packs septets seven bits each, least significant bit first, as
// GSM 03.38 does on the air, after fill zero bits (used after a user data
// header so the first septet starts on a septet boundary). When seven bits
// are left over in the last octet they hold a carriage return, as 3GPP
// TS 23.038 section 6.1.2.3.1 says, so they are not read as an '@' (and a
// wanted final CR that would end on an octet boundary gets a second one,
// which a receiver shows as one line break).
func PackGSM7(septets []byte, fill int) []byte {
	bits := fill + 7*len(septets)
	out := make([]byte, (bits+7)/8)
	pos := fill
	put := func(s byte) {
		for k := 0; k < 7; k++ {
			if s&(1<<k) != 0 {
				out[pos/8] |= 1 << (pos % 8)
			}
			pos++
		}
	}
	for _, s := range septets {
		put(s & 0x7F)
	}
	switch {
	case len(out)*8-pos == 7:
		put('\r')
	case len(out)*8 == pos && len(septets) > 0 && septets[len(septets)-1]&0x7F == '\r':
		// A wanted CR ending on an octet boundary would be read as
		// padding: another CR follows it, as the specification says.
		out = append(out, 0)
		put('\r')
	}
	return out
}

// UnpackGSM7 reverses PackGSM7: the septets in packed after fill bits. A
// carriage return filling the last seven bits is taken as padding and
// dropped.
func UnpackGSM7(packed []byte, fill int) []byte {
	bits := len(packed)*8 - fill
	if bits < 7 {
		return nil
	}
	n := bits / 7
	out := make([]byte, n)
	pos := fill
	for i := range out {
		var s byte
		for k := 0; k < 7; k++ {
			if packed[pos/8]&(1<<(pos%8)) != 0 {
				s |= 1 << k
			}
			pos++
		}
		out[i] = s
	}
	if bits%7 == 0 && out[n-1] == '\r' {
		out = out[:n-1]
	}
	return out
}

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
// bits) for 0, ISO-8859-1 for 3, UCS-2 for 8, and for any other coding the
// octets as they are if they are valid UTF-8, else as ISO-8859-1.
func DecodeText(dataCoding uint8, b []byte, packed bool, fill int) string {
	switch dataCoding {
	case CodingDefault:
		if packed {
			return DecodeGSM7(UnpackGSM7(b, fill))
		}
		return DecodeGSM7(b)
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
