package dispatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// contentByUnmarshal is what contentFor did before it scanned: decode the
// whole payload into a map. The scan must agree with it on every payload
// herald stores (valid objects without repeated keys) and on the broken
// ones it must refuse.
func contentByUnmarshal(payload, ch string) json.RawMessage {
	var byChannel map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &byChannel); err != nil {
		return nil
	}
	if v := byChannel[ch]; string(v) != "null" {
		return v
	}
	return nil
}

func TestContentFor_PicksChannelEntryOrNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, payload, ch, want string
	}{
		{"Webhook", `{"email":{"subject":"s","text":"t"},"webhook":{"order":9,"items":[1,2]}}`, "webhook", `{"order":9,"items":[1,2]}`},
		{"Email", `{"email":{"subject":"s","text":"t"},"sms":{"body":"b"}}`, "email", `{"subject":"s","text":"t"}`},
		{"NestedKeyOfTheSameNameIsNotTheChannel", `{"email":{"sms":{"body":"x"}}}`, "sms", ``},
		{"ScalarContent", `{"webhook":"just a string"}`, "webhook", `"just a string"`},
		{"EscapedStrings", `{"webhook":{"a":"\"q\" \\ \u00e9 \ud83d\ude00"}}`, "webhook", `{"a":"\"q\" \\ \u00e9 \ud83d\ude00"}`},
		{"Missing", `{"email":{"subject":"s"}}`, "webhook", ``},
		{"Null", `{"webhook":null}`, "webhook", ``},
		{"Empty", `{}`, "sms", ``},
		{"NotAnObject", `[{"webhook":1}]`, "webhook", ``},
		{"NotJSON", `{"webhook":{"a":1}`, "webhook", ``},
		{"TrailingGarbage", `{"webhook":1} x`, "webhook", ``},
		{"EmptyString", ``, "webhook", ``},
		{"ChannelNameWithPathCharacters", `{"a.b":{"x":1},"a":{"b":2}}`, "a.b", `{"x":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := contentFor(tt.payload, tt.ch)
			if tt.want == "" {
				require.Nil(t, got)
			} else {
				require.Equal(t, tt.want, string(got))
			}
			require.Equal(t, string(contentByUnmarshal(tt.payload, tt.ch)), string(got), "agrees with decoding the payload")
		})
	}
}

func FuzzContentForAgreesWithDecoding(f *testing.F) {
	f.Add(`{"webhook":{"order":9}}`, "webhook")
	f.Add(`{"email":{"subject":"s"},"sms":{"body":"b"}}`, "sms")
	f.Add(`{"webhook":[1,2,{"a":null}]}`, "webhook")
	f.Add(`{"a.b":1}`, "a.b")
	f.Fuzz(func(t *testing.T, payload, ch string) {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(payload), &m) == nil && hasRepeatedKey(payload) {
			t.Skip("repeated keys: decoding keeps the last, the scan the first; herald never stores them")
		}
		want := contentByUnmarshal(payload, ch)
		got := contentFor(payload, ch)
		if want == nil {
			require.Nil(t, got)
			return
		}
		// Equal as JSON values (decoding re-escapes nothing, but compare
		// canonically to be safe).
		require.JSONEq(t, string(want), string(got))
	})
}

// hasRepeatedKey reports whether the top-level object has a key twice.
func hasRepeatedKey(payload string) bool {
	dec := json.NewDecoder(strings.NewReader(payload))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := tok.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}

func BenchmarkContentFor(b *testing.B) {
	payload := `{"webhook":{"event":"order.shipped","order":"9f8c1a2b","items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"` +
		"................................................................................................................................................................." + `"}}`
	b.Run("Scan", func(b *testing.B) {
		for b.Loop() {
			_ = contentFor(payload, "webhook")
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		for b.Loop() {
			_ = contentByUnmarshal(payload, "webhook")
		}
	})
}
