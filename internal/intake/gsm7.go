package intake

import "unicode/utf16"

// SMS encodings, as stored in routes.sms_encoding.
const (
	// EncodingGSM7 is the GSM 03.38 7-bit default alphabet.
	EncodingGSM7 = "gsm7"
	// EncodingUCS2 is UCS-2 (in practice UTF-16), for any other body.
	EncodingUCS2 = "ucs2"
)

// Segment sizes: a single SMS carries 160 GSM-7 septets or 70 UCS-2 code
// units; each part of a concatenated SMS loses 7 septets (3 code units) to
// the user data header.
const (
	gsm7Single = 160
	gsm7Multi  = 153
	ucs2Single = 70
	ucs2Multi  = 67
)

// gsm7Basic is the GSM 03.38 default alphabet (3GPP TS 23.038 §6.2.1) in
// code order, without 0x1B, the escape to the extension table, which is not
// a character.
const gsm7Basic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ" + "ÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

// gsm7Extension is the default alphabet extension table: each character
// costs two septets (escape plus code).
const gsm7Extension = "\f^{}\\[~]|€"

// gsm7Cost maps every GSM-7 character to its septet count.
var gsm7Cost = func() map[rune]int {
	m := make(map[rune]int, 138)
	for _, r := range gsm7Basic {
		m[r] = 1
	}
	for _, r := range gsm7Extension {
		m[r] = 2
	}
	return m
}()

// Encoding returns how an SMS body is sent and how many segments it needs.
// A body made only of GSM 03.38 characters is "gsm7": basic characters cost
// one septet, extension-table characters (€ { } [ ] ~ | \ ^ and form feed)
// two; up to 160 septets fit one SMS, longer bodies are split into
// 153-septet parts. Any other body is "ucs2", counted in UTF-16 code units
// (a character outside the BMP, such as most emoji, costs two): 70 in one
// SMS, 67 per part. Parts are filled greedily and never split an escape
// sequence or a surrogate pair, as handsets and gateways do, so a
// multi-part body can need one segment more than its length divided by
// 153 (or 67). An empty body is one gsm7 segment.
func Encoding(body string) (encoding string, segments int) {
	gsm := true
	for _, r := range body {
		if gsm7Cost[r] == 0 {
			gsm = false
			break
		}
	}
	if gsm {
		return EncodingGSM7, countSegments(body, gsm7Single, gsm7Multi, func(r rune) int { return gsm7Cost[r] })
	}
	return EncodingUCS2, countSegments(body, ucs2Single, ucs2Multi, func(r rune) int {
		if n := utf16.RuneLen(r); n > 0 {
			return n
		}
		return 1 // invalid UTF-8 decodes to U+FFFD, one code unit
	})
}

// countSegments returns how many segments body needs, given each rune's
// cost, the capacity of a single SMS and that of one part of a
// concatenated SMS.
func countSegments(body string, single, multi int, cost func(rune) int) int {
	total := 0
	for _, r := range body {
		total += cost(r)
	}
	if total <= single {
		return 1
	}
	segments, used := 1, 0
	for _, r := range body {
		c := cost(r)
		if used+c > multi {
			segments++
			used = 0
		}
		used += c
	}
	return segments
}
