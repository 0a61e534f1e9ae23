package gsm7

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncoding_CountsSegmentsAtBoundaries(t *testing.T) {
	t.Parallel()

	a := func(n int) string { return strings.Repeat("a", n) }
	zh := func(n int) string { return strings.Repeat("ж", n) } // Cyrillic: UCS-2, one code unit
	emoji := func(n int) string { return strings.Repeat("😀", n) }

	tests := []struct {
		name         string
		body         string
		wantEncoding string
		wantSegments int
	}{
		{"EmptyBodyIsOneGSM7Segment", "", EncodingGSM7, 1},
		{"PlainASCII", "Your code is 123456", EncodingGSM7, 1},
		{"GSM7Exactly160FitsOne", a(160), EncodingGSM7, 1},
		{"GSM7At161NeedsTwo", a(161), EncodingGSM7, 2},
		{"GSM7TwoFullParts306", a(306), EncodingGSM7, 2},
		{"GSM7At307NeedsThree", a(307), EncodingGSM7, 3},
		{"GSM7ThreeFullParts459", a(459), EncodingGSM7, 3},
		{"GSM7At460NeedsFour", a(460), EncodingGSM7, 4},
		{"BasicTableAccentsAndGreekAreGSM7", "Ça coute 5€ Ñandu £ ¥ à è é ù ì ò Ø å Æ ß Δ Σ ¡¿§¤", EncodingGSM7, 1},
		{"LetterOutsideTheTableMakesUCS2", "Ça coûte", EncodingUCS2, 1},
		{"ExtensionCharCostsTwoSeptets", a(159) + "€", EncodingGSM7, 2},
		{"ExtensionCharWithin160", a(158) + "€", EncodingGSM7, 1},
		{"EightyEurosFillOneSMS", strings.Repeat("€", 80), EncodingGSM7, 1},
		{"EightyOneEurosNeedTwo", strings.Repeat("€", 81), EncodingGSM7, 2},
		{"BracesAreExtensionChars", strings.Repeat("{", 80) + "}", EncodingGSM7, 2},
		{"EveryExtensionCharIsGSM7", "\f^{}\\[~]|€", EncodingGSM7, 1},
		{"EscapeSequenceIsNotSplitAcrossParts", a(152) + "{" + a(152), EncodingGSM7, 3},
		{"EscapeSequenceEndingAPartFits", a(151) + "{" + a(153), EncodingGSM7, 2},
		{"NewlineAndCarriageReturnAreGSM7", "a\r\nb", EncodingGSM7, 1},
		{"TabIsNotGSM7", "a\tb", EncodingUCS2, 1},
		{"EscapeCharacterItselfIsNotGSM7", "a\x1bb", EncodingUCS2, 1},
		{"UCS2Exactly70FitsOne", zh(70), EncodingUCS2, 1},
		{"UCS2At71NeedsTwo", zh(71), EncodingUCS2, 2},
		{"UCS2TwoFullParts134", zh(134), EncodingUCS2, 2},
		{"UCS2At135NeedsThree", zh(135), EncodingUCS2, 3},
		{"OneNonGSMCharMakesWholeBodyUCS2", a(69) + "ж", EncodingUCS2, 1},
		{"OneNonGSMCharIn71MakesTwoUCS2Segments", a(70) + "ж", EncodingUCS2, 2},
		{"EmojiIsASurrogatePairOfTwoUnits", emoji(35), EncodingUCS2, 1},
		{"ThirtySixEmojiNeedTwo", emoji(36), EncodingUCS2, 2},
		{"SurrogatePairIsNotSplitAcrossParts", zh(66) + "😀" + zh(66), EncodingUCS2, 3},
		{"SurrogatePairEndingAPartFits", zh(65) + "😀" + zh(67), EncodingUCS2, 2},
		{"InvalidUTF8CountsAsOneUnit", "\xff", EncodingUCS2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			enc, seg := Encoding(tt.body)
			require.Equal(t, tt.wantEncoding, enc)
			require.Equal(t, tt.wantSegments, seg)
		})
	}
}

func TestGSM7Tables_HoldWholeAlphabet(t *testing.T) {
	t.Parallel()

	// 128 codes minus the escape; the extension table adds 10 characters.
	require.Len(t, basic, 128)
	require.Len(t, code, 127, "no character may appear twice")
	require.Len(t, ext, 10)
	require.Len(t, cost, 137, "no character may appear twice")
	for r := 0x20; r < 0x7f; r++ {
		if strings.ContainsRune("`", rune(r)) {
			require.Zero(t, cost[rune(r)], "%q is not in GSM 03.38", rune(r))
			continue
		}
		require.NotZero(t, cost[rune(r)], "printable ASCII %q is GSM-7", rune(r))
	}
}
