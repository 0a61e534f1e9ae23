package content

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
)

// fold returns s as the blocklist reads it, so that the tricks that keep a
// word readable to a person but hide it from a byte-wise match do not
// work:
//
//   - Unicode NFKC: fullwidth and other compatibility forms become their
//     plain letters ("ｓｐａｍ" is "spam"), and every space character,
//     the no-break space among them, becomes a space;
//   - default-ignorable code points are removed (zero-width space and
//     joiners, soft hyphen, variation selectors, bidirectional controls:
//     the Unicode property Default_Ignorable_Code_Point);
//   - combining marks are removed after canonical decomposition ("s̈pám"
//     is "spam");
//   - every character outside ASCII is replaced by its prototype in
//     Unicode's confusables table (Unicode TS #39, the skeleton's mapping:
//     Cyrillic "аррӏе" is "apple"); ASCII is kept as written, so that a
//     rule's own spelling ("m", "1") holds;
//   - a run of white space is one space.
//
// The case is kept (regex rules match case-sensitively unless they say
// otherwise); word rules match fold's result lower-cased. Text that is
// plain ASCII with single spaces is returned as it is, without a copy.
func fold(s string) string {
	if plain(s) {
		return s
	}
	s = norm.NFKC.String(s)
	s = norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case ignorable(r):
			continue
		case unicode.IsSpace(r):
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		if r < utf8.RuneSelf {
			b.WriteRune(r)
			continue
		}
		b.WriteString(prototype(r))
	}
	return norm.NFC.String(b.String())
}

// plain reports whether s needs no folding: ASCII, with no control
// characters and no white space but single spaces.
func plain(s string) bool {
	prevSpace := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf || c < ' ' || c == 0x7f:
			return false
		case c == ' ':
			if prevSpace {
				return false
			}
			prevSpace = true
		default:
			prevSpace = false
		}
	}
	return true
}

// ignorable reports whether r is dropped before matching: a combining
// (nonspacing) mark, or a default-ignorable code point. The property
// Default_Ignorable_Code_Point is derived as Unicode's
// DerivedCoreProperties.txt derives it: Other_Default_Ignorable_Code_Point,
// format characters (Cf) and variation selectors, less white space, the
// interlinear annotation characters U+FFF9..U+FFFB, the Egyptian
// hieroglyph format controls U+13430..U+1343F and the prepended
// concatenation marks.
func ignorable(r rune) bool {
	if r < 0xAD {
		return false
	}
	switch {
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r):
		return true
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		return true
	case !unicode.Is(unicode.Cf, r), unicode.IsSpace(r):
		return false
	case r >= 0xFFF9 && r <= 0xFFFB, r >= 0x13430 && r <= 0x1343F:
		return false
	}
	return !unicode.Is(unicode.Prepended_Concatenation_Mark, r)
}

// prototypes caches prototype's answers, up to maxPrototypes runes (the
// runes of real texts are few; a text made to fill the cache only stops
// it from growing).
var prototypes struct {
	sync.RWMutex
	m map[rune]string
}

const maxPrototypes = 8192

// extraPrototypes are prototypes the confusables table (Unicode 13's, as
// github.com/mtibben/confusables carries it) lacks or gives otherwise than
// the letter most fonts draw: the Cyrillic palochka, which it maps to "i",
// reads as "l".
var extraPrototypes = map[rune]string{
	0x04CF: "l", // ӏ CYRILLIC SMALL LETTER PALOCHKA
}

// prototype returns what r reads as: its prototype in the confusables
// table (itself if it has none), with combining marks and ignorable code
// points removed.
func prototype(r rune) string {
	if p, ok := extraPrototypes[r]; ok {
		return p
	}
	prototypes.RLock()
	p, ok := prototypes.m[r]
	prototypes.RUnlock()
	if ok {
		return p
	}
	sk := confusables.Skeleton(string(r))
	var b strings.Builder
	for _, x := range sk {
		if !ignorable(x) {
			b.WriteRune(x)
		}
	}
	p = b.String()
	prototypes.Lock()
	if prototypes.m == nil {
		prototypes.m = map[rune]string{}
	}
	if len(prototypes.m) < maxPrototypes {
		prototypes.m[r] = p
	}
	prototypes.Unlock()
	return p
}
