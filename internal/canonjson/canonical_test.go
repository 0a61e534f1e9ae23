package canonjson_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/canonjson"
)

func TestCanonicalJSON_KnownForms(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{"SortsKeysAtEveryLevel", `{"b":{"d":1,"c":2},"a":[{"y":1,"x":2}]}`, `{"a":[{"x":2,"y":1}],"b":{"c":2,"d":1}}`, ""},
		{"DropsWhitespace", " [ 1 ,\n\t2 ] ", `[1,2]`, ""},
		{"KeepsNumbersAsWritten", `[1.0,1e2,-0,12345678901234567890123]`, `[1.0,1e2,-0,12345678901234567890123]`, ""},
		{"MinimalStringEscapes", `"\u00e9\/\u003c\t\u0001"`, "\"é/<\\t\\u0001\"", ""},
		{"RefusesLoneSurrogate", `"\ud800"`, "", "content string at the top level is not valid Unicode text"},
		{"RefusesLowSurrogateFirst", `{"a":["x\udc00\ud83d"]}`, "", "content string at a[0] is not valid Unicode"},
		{"RefusesHighSurrogateWithoutLow", `{"a":"\ud83d\u0041"}`, "", "content string at a is not valid Unicode"},
		{"RefusesLoneSurrogateInKey", `{"o":{"\ud800":1}}`, "", "content key at o is not valid Unicode"},
		{"RefusesInvalidUTF8", "{\"a\":\"caf\xe9\"}", "", "content string at a is not valid Unicode"},
		{"KeepsSurrogatePair", `"\ud83d\ude00"`, "\"\U0001F600\"", ""},
		{"KeepsEscapedReplacementCharacter", `["\ufffd","\\ud800"]`, "[\"\uFFFD\",\"\\\\ud800\"]", ""},
		{"Scalars", `true`, `true`, ""},
		{"EmptyContainers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`, ""},
		{"RefusesInvalidJSON", `{"a":}`, "", "not valid JSON"},
		{"RefusesDuplicateKeys", `{"a":{"k":1,"k":1}}`, "", `key "k" twice`},
		{"RefusesNULInString", `["\u0000"]`, "", "U+0000"},
		{"RefusesNULInKey", `{"\u0000":1}`, "", "U+0000"},
		{"RefusesHugeExponent", `[1e1000000]`, "", "out of range"},
		{"AcceptsModestExponent", `[1e300, 1E-999]`, `[1e300,1E-999]`, ""},
		{"RefusesDeepNesting", strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65), "", "deeper than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := canonjson.Canonical([]byte(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			again, err := canonjson.Canonical(got)
			require.NoError(t, err)
			require.Equal(t, string(got), string(again), "canonical form is a fixed point")
		})
	}
}
