package smpp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A flash SMS carries message class 0 in every part's data_coding (GSM
// 03.38's general data coding group, which SMPP 3.4 passes through from
// 0x10 on): 0x10 in the GSM-7 default alphabet, 0x18 in UCS-2; the text
// decodes as its alphabet's.
func TestMessageFlashSetsMessageClassZero(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body string
		want uint8
	}{
		{"Your code is 1234", CodingFlashDefault},
		{"Код 1234", CodingFlashUCS2},
		{strings.Repeat("a", 200), CodingFlashDefault},
	} {
		parts, err := Message(SM{}, tt.body, MessageOpts{Flash: true})
		require.NoError(t, err)
		var text string
		for _, p := range parts {
			require.Equal(t, tt.want, p.DataCoding)
			_, _, s, err := UserData(p, false)
			require.NoError(t, err)
			text += s
		}
		require.Equal(t, tt.body, text)

		normal, err := Message(SM{}, tt.body, MessageOpts{})
		require.NoError(t, err)
		require.Equal(t, Alphabet(tt.want), normal[0].DataCoding, "without Flash, no class")
	}
	require.Equal(t, uint8(0x10), uint8(CodingFlashDefault))
	require.Equal(t, uint8(0x18), uint8(CodingFlashUCS2))
	require.Equal(t, uint8(CodingLatin1), Alphabet(CodingLatin1), "SMPP's own codings are kept")
}
