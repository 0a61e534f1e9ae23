package gsm7

import "unicode/utf16"

// SMS encodings, as stored in routes.sms_encoding.
const (
	// EncodingGSM7 is the GSM 03.38 7-bit default alphabet.
	EncodingGSM7 = "gsm7"
	// EncodingUCS2 is UCS-2 (in practice UTF-16), for any other body.
	EncodingUCS2 = "ucs2"
)

// Segment capacities: a single SMS carries 160 GSM-7 septets or 70 UCS-2
// code units; each part of a concatenated SMS loses 7 septets (3 code
// units) to the user data header.
const (
	Single     = 160
	Multi      = 153
	UCS2Single = 70
	UCS2Multi  = 67
)

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
	if Is(body) {
		return EncodingGSM7, countSegments(body, Single, Multi, Cost)
	}
	return EncodingUCS2, countSegments(body, UCS2Single, UCS2Multi, UCS2Cost)
}

// UCS2Cost returns the UTF-16 code units r takes: two outside the BMP,
// one for invalid UTF-8 (which decodes to U+FFFD).
func UCS2Cost(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
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
