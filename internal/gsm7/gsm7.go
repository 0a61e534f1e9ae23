// Package gsm7 is herald's one copy of the GSM 03.38 default alphabet
// (3GPP TS 23.038): which characters an SMS can carry as 7-bit septets, what
// each costs, how a body is counted in segments (Encoding, which intake
// stores with each route) and how septets are coded and packed on the air
// (which internal/smpp sends). Keeping the table once means the count a
// producer is charged and the parts an SMSC receives cannot disagree.
package gsm7

import "strings"

// basic is the GSM 03.38 default alphabet in code order, 0x00 to 0x7F;
// 0x1B, the escape to the extension table, is held by a NUL here and never
// matched.
var basic = []rune("@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x00ÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")

// Escape is the septet announcing an extension-table character.
const Escape = 0x1B

// ext maps the extension-table characters to their code after the escape;
// each costs two septets.
var ext = map[rune]byte{'\f': 0x0A, '^': 0x14, '{': 0x28, '}': 0x29, '\\': 0x2F, '[': 0x3C, '~': 0x3D, ']': 0x3E, '|': 0x40, '€': 0x65}

var (
	code   = map[rune]byte{}
	extRev = map[byte]rune{}
	// cost maps every GSM-7 character to its septet count.
	cost = map[rune]int{}
)

func init() {
	if len(basic) != 128 {
		panic("gsm7: the GSM 03.38 table must have 128 entries")
	}
	for i, r := range basic {
		if i != Escape {
			code[r] = byte(i)
			cost[r] = 1
		}
	}
	for r, c := range ext {
		extRev[c] = r
		cost[r] = 2
	}
}

// Cost returns the septets r takes: 1 for the basic alphabet, 2 for the
// extension table, 0 when r is not GSM-7.
func Cost(r rune) int { return cost[r] }

// Septets returns r's septets: one for the basic alphabet, two (the escape
// and the code) for the extension table, none if r is not GSM-7.
func Septets(r rune) []byte {
	if c, ok := code[r]; ok {
		return []byte{c}
	}
	if c, ok := ext[r]; ok {
		return []byte{Escape, c}
	}
	return nil
}

// Is reports whether every character of s is in the GSM 03.38 default
// alphabet or its extension table.
func Is(s string) bool {
	for _, r := range s {
		if cost[r] == 0 {
			return false
		}
	}
	return true
}

// Decode returns the text of unpacked septets (one per octet, the top bit
// ignored). An escape followed by a code the extension table does not have
// reads as that code's basic character, as 3GPP TS 23.038 asks; a trailing
// escape is dropped.
func Decode(septets []byte) string {
	var sb strings.Builder
	for i := 0; i < len(septets); i++ {
		c := septets[i] & 0x7F
		if c == Escape {
			if i+1 >= len(septets) {
				break
			}
			i++
			n := septets[i] & 0x7F
			if r, ok := extRev[n]; ok {
				sb.WriteRune(r)
				continue
			}
			c = n
			if c == Escape {
				sb.WriteRune(' ')
				continue
			}
		}
		sb.WriteRune(basic[c])
	}
	return sb.String()
}

// Pack packs septets seven bits each, least significant bit first, as
// GSM 03.38 does on the air, after fill zero bits (used after a user data
// header so the first septet starts on a septet boundary). When seven bits
// are left over in the last octet they hold a carriage return, as 3GPP
// TS 23.038 section 6.1.2.3.1 says, so they are not read as an '@' (and a
// wanted final CR that would end on an octet boundary gets a second one,
// which a receiver shows as one line break).
func Pack(septets []byte, fill int) []byte {
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

// Unpack reverses Pack: the septets in packed after fill bits. A carriage
// return filling the last seven bits is taken as padding and dropped.
func Unpack(packed []byte, fill int) []byte {
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
