package content

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The tricks that keep a word readable and hide it from a byte-wise match,
// each against a word rule and a regex rule.
var tricks = []struct{ name, text string }{
	{"ZeroWidthSpace", "buy sp\u200Bam now"},
	{"SoftHyphen", "buy sp\u00ADam now"},
	{"WordJoinerAndVariationSelector", "buy s\u2060pa\uFE0Fm now"},
	{"CyrillicHomoglyphs", "buy \u0455\u0440\u0430m now"}, // ѕра + Latin m
	{"Fullwidth", "buy \uFF53\uFF50\uFF41\uFF4D now"},
	{"CombiningMarks", "buy s\u0308pa\u0301m now"},
	{"MathematicalBold", "buy \U0001D42C\U0001D429\U0001D41A\U0001D426 now"},
	{"UpperCaseAndHomoglyphs", "buy \u0405\u0420\u0410\u041C now"}, // ЅРАМ
}

func TestFold_DefeatsEachTrick(t *testing.T) {
	t.Parallel()
	for _, tt := range tricks {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, []string{"buy spam now", "buy SPAM now"}, fold(tt.text))
		})
	}
	require.Equal(t, "apple", fold("\u0430\u0440\u0440\u04CF\u0435"), "Cyrillic аррӏе")
	require.Equal(t, "free money", fold("free\u00A0money"), "no-break space")
	require.Equal(t, "free money", fold("free \t\u2003 money"), "a run of white space")
	plainText := "plain ASCII, left alone"
	require.Equal(t, plainText, fold(plainText))
}

func TestBlocklist_MatchesThroughEachTrick(t *testing.T) {
	t.Parallel()
	word := Compile([]Rule{{ID: 1, Kind: KindWord, Pattern: "spam", Mode: ModeRefuse}})
	regex := Compile([]Rule{{ID: 2, Kind: KindRegex, Pattern: `(?i)\bspam\b`, Mode: ModeRefuse}})
	literal := Compile([]Rule{{ID: 3, Kind: KindRegex, Pattern: `spam+`, Mode: ModeRefuse}})
	for _, tt := range tricks {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.NotNil(t, word.Match(tt.text), "word rule")
			require.NotNil(t, regex.Match(tt.text), "regex rule")
			if tt.name != "UpperCaseAndHomoglyphs" { // spam+ is case-sensitive
				require.NotNil(t, literal.Match(tt.text), "regex rule with a literal")
			}
		})
	}
	phrase := Compile([]Rule{{ID: 4, Kind: KindWord, Pattern: "free money", Mode: ModeReview}})
	require.NotNil(t, phrase.Match("get free\u00A0money"), "no-break space inside a phrase")
	require.NotNil(t, phrase.Match("get fr\u0435\u0435 m\u043Eney"), "Cyrillic е and о")
	apple := Compile([]Rule{{ID: 5, Kind: KindWord, Pattern: "apple", Mode: ModeRefuse}})
	require.NotNil(t, apple.Match("an \u0430\u0440\u0440\u04CF\u0435 a day"), "аррӏе")
	// A rule written with a trick matches the plain word too.
	tricked := Compile([]Rule{{ID: 6, Kind: KindWord, Pattern: "\uFF53\uFF50\uFF41\uFF4D", Mode: ModeRefuse}})
	require.NotNil(t, tricked.Match("spam"))
	// Folding does not make words out of parts of words.
	require.Nil(t, word.Match("spa\u200Bmming"))
	require.Nil(t, word.Match("nothing here"))
}

func TestIgnorable_IsDefaultIgnorableOrAMark(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x00AD, 0x034F, 0x061C, 0x115F, 0x180E, 0x200B, 0x200C, 0x200D, 0x200E, 0x202E, 0x2060, 0x2064, 0x3164, 0xFE0F, 0xFEFF, 0xFFA0, 0x1D173, 0xE0001, 0xE0100, 0x0301, 0x20DD} {
		require.True(t, ignorable(r), "%U", r)
	}
	for _, r := range []rune{'a', ' ', 0x00A0, 0x0600, 0xFFF9, 0x13430, 0x0410, 0x3000} {
		require.False(t, ignorable(r), "%U", r)
	}
}
