package content

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBlocklist_MatchesWordsAndRegexes(t *testing.T) {
	t.Parallel()
	b := Compile([]Rule{
		{ID: 1, Kind: KindWord, Pattern: "casino", Mode: ModeRefuse},
		{ID: 2, Kind: KindWord, Pattern: "Free Money", Mode: ModeReview},
		{ID: 3, Kind: KindRegex, Pattern: `(?i)bit\.ly/\w+`, Mode: ModeRefuse},
		{ID: 4, Kind: KindWord, Pattern: "olá", Mode: ModeReview},
		{ID: 5, Kind: KindRegex, Pattern: `(`, Mode: ModeRefuse}, // does not compile
		{ID: 6, Kind: KindRegex, Pattern: `\d{16}`, Mode: ModeReview},
	})
	require.Len(t, b.Invalid, 1)
	require.Contains(t, b.Invalid[0].Error(), "rule 5")
	tests := []struct {
		text string
		want int64 // 0: no match
	}{
		{"Visit our CASINO tonight", 1},
		{"casino", 1},
		{"casinos are fun", 0},  // not the word
		{"the macasino bar", 0}, // not at a boundary
		{"win free money now", 2},
		{"free  money", 2},        // a run of white space is one space
		{"FREE MONEY, casino", 1}, // refuse beats review
		{"see BIT.LY/abc", 3},
		{"Olá, tudo bem?", 4},
		{"card 4111111111111111", 6},
		{"card 4111111111111111 casino", 1},
		{"nothing to see", 0},
		{"", 0},
	}
	for _, tt := range tests {
		r := b.Match(tt.text)
		if tt.want == 0 {
			require.Nil(t, r, tt.text)
			continue
		}
		require.NotNil(t, r, tt.text)
		require.Equal(t, tt.want, r.ID, tt.text)
	}
	require.Nil(t, Compile(nil).Match("casino"), "no rules: nothing matches")
	require.Equal(t, `rule 1 (word "casino", every producer, refuse)`, (&Rule{ID: 1, Kind: KindWord, Pattern: "casino", Mode: ModeRefuse}).String())
}

// referenceMatch is the blocklist's meaning, written the slow obvious way:
// each word as a regexp with \b-like boundaries on the lower-cased text.
func referenceMatch(rules []Rule, text string) (refuse, review bool) {
	lower := strings.ToLower(text)
	for _, r := range rules {
		w := strings.ToLower(r.Pattern)
		hit := false
		for i := 0; ; {
			j := strings.Index(lower[i:], w)
			if j < 0 {
				break
			}
			s, e := i+j, i+j+len(w)
			if boundaryBefore(lower, s) && boundaryAfter(lower, e) {
				hit = true
				break
			}
			i = s + 1
		}
		if hit && r.Mode == ModeRefuse {
			refuse = true
		}
		if hit && r.Mode == ModeReview {
			review = true
		}
	}
	return refuse, review
}

func TestBlocklist_AgreesWithReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcab é-")
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return strings.Trim(b.String(), " -")
	}
	for round := range 200 {
		var rules []Rule
		for i := range 1 + rng.IntN(8) {
			w := word(1 + rng.IntN(4))
			if w == "" {
				continue
			}
			mode := ModeRefuse
			if rng.IntN(2) == 0 {
				mode = ModeReview
			}
			rules = append(rules, Rule{ID: int64(i + 1), Kind: KindWord, Pattern: w, Mode: mode})
		}
		b := Compile(rules)
		for range 20 {
			text := word(rng.IntN(30))
			wantRefuse, wantReview := referenceMatch(rules, text)
			got := b.Match(text)
			switch {
			case wantRefuse:
				require.NotNil(t, got, "round %d %q %v", round, text, rules)
				require.Equal(t, ModeRefuse, got.Mode, "round %d %q %v", round, text, rules)
			case wantReview:
				require.NotNil(t, got, "round %d %q %v", round, text, rules)
				require.Equal(t, ModeReview, got.Mode, "round %d %q %v", round, text, rules)
			default:
				require.Nil(t, got, "round %d %q %v", round, text, rules)
			}
		}
	}
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRules returns n word rules and a few dozen regexes, none of which
// the bench intent's text matches (the common case: every rule is tried).
func benchRules(n int) []Rule {
	rng := rand.New(rand.NewPCG(3, 4))
	rules := make([]Rule, 0, n+40)
	for i := range n {
		var b strings.Builder
		for range 5 + rng.IntN(8) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		rules = append(rules, Rule{ID: int64(i + 1), Kind: KindWord, Pattern: "zq" + b.String(), Mode: ModeRefuse})
	}
	for i := range 40 {
		rules = append(rules, Rule{ID: int64(n + i + 1), Kind: KindRegex, Pattern: fmt.Sprintf(`(?i)promo%d\d{3}x`, i), Mode: ModeReview})
	}
	return rules
}

// benchTexts are one intent's texts: an SMS, and an e-mail's subject, text
// and HTML, about 1.5 KB in all.
var benchTexts = []string{
	"Hi Ana, your order 9 has shipped and arrives Thursday. Track it at https://example.com/t/9",
	"Your order 9 has shipped",
	strings.Repeat("Thank you for shopping with us. Your parcel is on its way and will arrive soon. ", 6),
	"<p>" + strings.Repeat("Thank you for shopping with us. Your <b>parcel</b> is on its way. ", 8) + "</p>",
}

// BenchmarkBlocklistPerIntent reports, besides ns/op, cpu-ns/op: the
// process's CPU time per op (getrusage), which a machine shared with
// other work does not inflate as it does wall-clock time.
func BenchmarkBlocklistPerIntent(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		bl := Compile(benchRules(n))
		b.Run(fmt.Sprintf("Words%dRegexes40", n), func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				for _, s := range benchTexts {
					if bl.Match(s) != nil {
						b.Fatal("matched")
					}
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
