package content

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule modes and kinds (herald.content_rules.mode and kind).
const (
	// ModeRefuse refuses a matching intent with content_blocked.
	ModeRefuse = "refuse"
	// ModeReview holds a matching intent for an operator.
	ModeReview = "review"
	// KindWord matches a word or phrase, case-insensitively, at word
	// boundaries, in the text as fold reads it (and the word as fold
	// reads it).
	KindWord = "word"
	// KindRegex matches a Go (RE2) regular expression as written, against
	// the text as it is and as fold reads it.
	KindRegex = "regex"
)

// Rule is one row of herald.content_rules.
type Rule struct {
	ID       int64
	Producer string // "" for every producer
	Kind     string // KindWord or KindRegex
	Pattern  string
	Mode     string // ModeRefuse or ModeReview
}

// String names the rule for a person: `rule 12 (word "casino", every
// producer)`.
func (r *Rule) String() string {
	scope := "every producer"
	if r.Producer != "" {
		scope = "producer " + r.Producer
	}
	p := r.Pattern
	if utf8.RuneCountInString(p) > 60 {
		p = string([]rune(p)[:60]) + "…"
	}
	return fmt.Sprintf("rule %d (%s %q, %s, %s)", r.ID, r.Kind, p, scope, r.Mode)
}

// Blocklist is a compiled set of rules: every word rule in one
// Aho-Corasick automaton (one pass over the text, whatever the number of
// words), every regex rule in one alternation (one RE2 pass; the rule that
// matched is found only after a match). A nil *Blocklist matches nothing.
// Safe for concurrent use.
type Blocklist struct {
	words   *automaton
	wordIDs []*Rule // by automaton pattern index
	regexes []*regexp.Regexp
	reRules []*Rule
	// A regex with a literal it cannot match without (its longest literal
	// run, case-folded) runs only when an automaton over those literals
	// finds it in the text: RE2's own scan of a long text costs about a
	// microsecond per 10 bytes per alternation, the automaton a
	// nanosecond a byte whatever their number. The others run always, in
	// one alternation.
	lits     *automaton
	litRegex []int // by lits pattern index: index into regexes
	always   *regexp.Regexp
	alwaysIx []int // indexes into regexes of the ones always run
	// Invalid lists the regex rules that did not compile, each with its
	// error: they are left out, not fatal.
	Invalid []error
}

// Compile compiles rules into a Blocklist; nil if there are none. A regex
// rule that does not compile is left out and listed in Invalid.
func Compile(rules []Rule) *Blocklist {
	if len(rules) == 0 {
		return nil
	}
	b := &Blocklist{}
	var words, lits, alts []string
	for i := range rules {
		r := &rules[i]
		switch r.Kind {
		case KindWord:
			w := strings.ToLower(fold(strings.TrimSpace(r.Pattern)))
			if w == "" {
				continue
			}
			words = append(words, w)
			b.wordIDs = append(b.wordIDs, r)
		case KindRegex:
			re, err := regexp.Compile(r.Pattern)
			if err != nil {
				b.Invalid = append(b.Invalid, fmt.Errorf("%s does not compile: %w", r, err))
				continue
			}
			b.regexes = append(b.regexes, re)
			b.reRules = append(b.reRules, r)
			if lit := requiredLiteral(r.Pattern); len(lit) >= 3 && plainWord(lit) {
				lits = append(lits, lit)
				b.litRegex = append(b.litRegex, len(b.regexes)-1)
			} else {
				alts = append(alts, "(?:"+r.Pattern+")")
				b.alwaysIx = append(b.alwaysIx, len(b.regexes)-1)
			}
		}
	}
	if len(words) > 0 {
		b.words = buildAutomaton(words)
	}
	if len(lits) > 0 {
		b.lits = buildAutomaton(lits)
	}
	if len(alts) > 0 {
		// Each alternative is a whole pattern that compiled on its own,
		// in a group of its own, so flags stay in it.
		b.always = regexp.MustCompile(strings.Join(alts, "|"))
	}
	return b
}

// Match returns the rule of b that text matches, a refuse rule before a
// review rule, or nil. text is folded (see fold) first; the folded text is
// scanned once for the words, and the regexes run on the text as it is
// and, when folding changed it, on the folded text too.
func (b *Blocklist) Match(text string) *Rule {
	if b == nil || text == "" {
		return nil
	}
	var review *Rule
	folded := fold(text)
	var lower string
	if b.words != nil || b.lits != nil {
		lower = strings.ToLower(folded)
	}
	matches := func(re *regexp.Regexp) bool {
		return re.MatchString(text) || folded != text && re.MatchString(folded)
	}
	if b.words != nil {
		b.words.scan(lower, func(pat, end int) bool {
			start := end - b.words.lens[pat]
			if !boundaryBefore(lower, start) || !boundaryAfter(lower, end) {
				return true
			}
			r := b.wordIDs[pat]
			if r.Mode != ModeReview {
				review = r // a refuse rule: stop here
				return false
			}
			if review == nil {
				review = r
			}
			return true
		})
		if review != nil && review.Mode != ModeReview {
			return review
		}
	}
	try := func(i int) *Rule {
		r := b.reRules[i]
		if (review == nil || r.Mode != ModeReview) && matches(b.regexes[i]) {
			if r.Mode != ModeReview {
				return r
			}
			review = r
		}
		return nil
	}
	if b.lits != nil {
		var refused *Rule
		var tried []int // few: a literal found is rare
		b.lits.scan(lower, func(pat, _ int) bool {
			i := b.litRegex[pat]
			if slices.Contains(tried, i) {
				return true
			}
			tried = append(tried, i)
			refused = try(i)
			return refused == nil
		})
		if refused != nil {
			return refused
		}
	}
	if b.always != nil && matches(b.always) {
		for _, i := range b.alwaysIx {
			if r := try(i); r != nil {
				return r
			}
		}
	}
	return review
}

// requiredLiteral returns a literal, lower-cased, that every match of the
// regular expression pattern contains (the longest literal of its
// top-level concatenation), or "" if it has none: then the regex must run
// on every text. Matching the lower-cased text against the lower-cased
// literal is a superset of what the regex matches, case-sensitive or not.
func requiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	lit := func(r *syntax.Regexp) string {
		if r.Op != syntax.OpLiteral {
			return ""
		}
		return strings.ToLower(string(r.Rune))
	}
	best := lit(re)
	if re.Op == syntax.OpConcat {
		for _, sub := range re.Sub {
			for sub.Op == syntax.OpCapture {
				sub = sub.Sub[0]
			}
			if l := lit(sub); len(l) > len(best) {
				best = l
			}
		}
	}
	return best
}

// plainWord reports whether a regex's required literal can stand for it in
// the folded text: printable ASCII, which fold keeps as it is, and single
// spaces, which fold keeps as one space (a run of white space becomes
// one); no other white space.
func plainWord(lit string) bool {
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c < ' ' || c >= 0x7f || c == ' ' && i > 0 && lit[i-1] == ' ' {
			return false
		}
	}
	return true
}

// boundaryBefore reports whether s[i] starts a word: i is 0 or the rune
// before it is neither a letter nor a digit.
func boundaryBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !isWordRune(r)
}

// boundaryAfter reports whether s[:i] ends a word.
func boundaryAfter(s string, i int) bool {
	if i == len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isWordRune(r)
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// automaton is an Aho-Corasick automaton over bytes, compiled to a full
// transition table over the byte classes the patterns use (a byte no
// pattern holds always leads back to the root), so a scan is one table
// lookup per byte.
type automaton struct {
	class  [256]uint16
	nclass int
	delta  []int32   // state*nclass + class → state
	out    [][]int32 // patterns ending at a state, its suffixes' included
	lens   []int     // pattern lengths in bytes
}

// buildAutomaton compiles patterns (non-empty).
func buildAutomaton(patterns []string) *automaton {
	a := &automaton{lens: make([]int, len(patterns))}
	a.nclass = 1 // class 0: bytes in no pattern
	for _, p := range patterns {
		for i := 0; i < len(p); i++ {
			if a.class[p[i]] == 0 {
				a.class[p[i]] = uint16(a.nclass)
				a.nclass++
			}
		}
	}
	// The trie, with children in a map while building.
	type node struct {
		next map[uint16]int32
		own  []int32
	}
	nodes := []node{{next: map[uint16]int32{}}}
	for pi, p := range patterns {
		a.lens[pi] = len(p)
		s := int32(0)
		for i := 0; i < len(p); i++ {
			c := a.class[p[i]]
			n, ok := nodes[s].next[c]
			if !ok {
				n = int32(len(nodes))
				nodes = append(nodes, node{next: map[uint16]int32{}})
				nodes[s].next[c] = n
			}
			s = n
		}
		nodes[s].own = append(nodes[s].own, int32(pi))
	}
	// Breadth first: each state's failure link is already final when its
	// children are reached, so its row of delta can be copied.
	n := len(nodes)
	a.delta = make([]int32, n*a.nclass)
	a.out = make([][]int32, n)
	fail := make([]int32, n)
	queue := make([]int32, 0, n)
	for c := 0; c < a.nclass; c++ {
		if child, ok := nodes[0].next[uint16(c)]; ok {
			a.delta[c] = child
			queue = append(queue, child)
		}
	}
	a.out[0] = nodes[0].own
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.out[s] = append(append([]int32(nil), nodes[s].own...), a.out[fail[s]]...)
		row := a.delta[int(s)*a.nclass : int(s+1)*a.nclass]
		copy(row, a.delta[int(fail[s])*a.nclass:int(fail[s]+1)*a.nclass])
		for c, child := range nodes[s].next {
			fail[child] = a.delta[int(fail[s])*a.nclass+int(c)]
			row[c] = child
			queue = append(queue, child)
		}
	}
	return a
}

// scan calls fn with each (pattern, end offset) found in s until fn
// returns false.
func (a *automaton) scan(s string, fn func(pat, end int) bool) {
	state := int32(0)
	for i := 0; i < len(s); i++ {
		state = a.delta[int(state)*a.nclass+int(a.class[s[i]])]
		for _, p := range a.out[state] {
			if !fn(int(p), i+1) {
				return
			}
		}
	}
}
