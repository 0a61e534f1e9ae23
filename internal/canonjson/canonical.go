// Package canonjson writes JSON in one canonical form: no insignificant
// whitespace, object keys sorted, strings minimally escaped, numbers as
// written. herald stores webhook content that way (Canonical), so that
// the same content is the same bytes and PostgreSQL's jsonb always takes
// it; keeps what it can of a refused intake entry the same way (Repair);
// and hashes an accepted request's canonical form into its idempotency
// fingerprint (Fingerprint).
//
// The hand-written scanner here replaced encoding/json for speed. The
// encoding/json versions it replaced are kept in package canonjsonref, and
// the tests and fuzz targets of this package check that the two agree
// byte for byte: stored fingerprints must stay valid, and the error
// messages are part of what malformed_intents records.
package canonjson

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds how deeply content may nest: Canonical refuses deeper
// content, Repair turns a deeper value into a string of its JSON text.
// PostgreSQL's JSON parser recurses, and no webhook payload needs more.
const MaxDepth = 64

// maxSyntaxDepth is the nesting encoding/json's Valid accepts; deeper
// input is not valid JSON to it, and so not to Canonical either.
const maxSyntaxDepth = 10000

// errSyntax is what the walker returns for input that is not valid JSON.
var errSyntax = errors.New("content is not valid JSON")

// Canonical returns raw re-encoded canonically: no insignificant
// whitespace, object keys sorted, strings minimally escaped, numbers as
// written. It refuses invalid JSON, duplicate keys, U+0000 in strings,
// strings that are not text (invalid UTF-8 or an unpaired surrogate escape
// such as "\ud800", which decoding would turn into U+FFFD behind the
// producer's back), nesting deeper than MaxDepth and numbers
// PostgreSQL's numeric cannot hold, so that the result is always castable
// to jsonb and says what the producer sent.
//
// Invalid JSON is reported as such even when a problem of the content
// comes first: the content is checked as a whole before its values.
func Canonical(raw []byte) ([]byte, error) {
	w := jsonWalker{strict: true}
	out, err := w.walk(raw)
	if err != nil {
		var ew errWalk
		if errors.As(err, &ew) && !validJSON(raw) {
			// The walk stopped at a content problem before it read the
			// rest; invalid JSON further on takes precedence.
			return nil, errSyntax
		}
		return nil, err
	}
	return out, nil
}

// validJSON reports whether raw is one valid JSON value, as encoding/json's
// Valid does.
func validJSON(raw []byte) bool {
	w := jsonWalker{data: raw}
	w.skipWS()
	if err := w.skip(0); err != nil {
		return false
	}
	w.skipWS()
	return w.pos == len(raw)
}

// Repair returns the valid JSON raw re-encoded canonically, made fit for
// jsonb rather than refused: invalid UTF-8 and unpaired surrogate escapes
// become U+FFFD (as encoding/json decodes them), U+0000 becomes U+FFFD,
// numbers PostgreSQL's numeric cannot hold become strings, a value nested
// deeper than MaxDepth becomes a string of its JSON text, and duplicate
// keys are kept, in order. It refuses only raw that is not valid JSON.
func Repair(raw []byte) ([]byte, error) {
	w := jsonWalker{}
	return w.walk(raw)
}

// Unquote decodes the JSON string literal lit starts with, as
// encoding/json decodes it: each invalid UTF-8 byte and each unpaired
// surrogate escape become U+FFFD, and replaced says so. s may share
// memory with lit. It refuses a literal that is not valid JSON.
func Unquote(lit []byte) (s []byte, replaced bool, err error) {
	w := jsonWalker{data: lit}
	s, _, err = w.str()
	return s, w.replaced, err
}

// jsonWalker re-encodes a JSON value canonically, scanning its bytes. In
// strict mode it refuses what PostgreSQL's jsonb cannot take, and strings
// that are not text; otherwise it repairs them: invalid UTF-8 and unpaired
// surrogate escapes become U+FFFD (as encoding/json decodes them), U+0000
// becomes U+FFFD, extreme numbers and too-deep values become strings (a
// too-deep value its JSON text), duplicate keys are kept.
// Input that is not valid JSON (what encoding/json's Valid refuses) is
// refused with errSyntax.
type jsonWalker struct {
	strict bool
	data   []byte // the input
	pos    int    // next byte of data to read
	out    []byte
	// replaced is set by str when the string it read held invalid UTF-8 or
	// an unpaired surrogate escape, which it decoded as U+FFFD.
	replaced bool
	*walkState
}

// walkState is the walker's scratch space, pooled between walks.
type walkState struct {
	// members holds the members of every object being walked, innermost
	// last.
	members []member
	// path holds one element per container being walked, for error
	// messages: the index of the member or the array element being walked.
	path []pathElem
	// scratch holds an object's members while they are put in order.
	scratch []byte
}

var walkStates = sync.Pool{New: func() any { return new(walkState) }}

// member is an object member written to the walker's out: its decoded key
// is out[keyStart:keyEnd] or, if that is escaped there, key.
type member struct {
	start, end       int // the member in out: "key":value
	keyStart, keyEnd int
	key              []byte
}

// pathElem is the member (index into members) or, for an array (member
// < 0), the element being walked.
type pathElem struct {
	member int
	index  int
}

// notTextMessage ends the error for a content string or key that is not
// text.
const notTextMessage = "is not valid Unicode text: it holds invalid UTF-8 or an unpaired surrogate escape (\\ud800-\\udfff)"

// errWalk marks an error the walker found in the content, as opposed to
// a syntax error.
type errWalk struct{ msg string }

func (e errWalk) Error() string { return e.msg }

// walk re-encodes the single JSON value in raw.
func (w *jsonWalker) walk(raw []byte) ([]byte, error) {
	w.data, w.pos = raw, 0
	w.out = make([]byte, 0, len(raw))
	w.walkState = walkStates.Get().(*walkState)
	defer func() {
		st := w.walkState
		w.walkState = nil
		if cap(st.scratch) > maxPooledBuf {
			st.scratch = nil
		}
		clear(st.members[:cap(st.members)]) // drop escaped keys
		st.members, st.path, st.scratch = st.members[:0], st.path[:0], st.scratch[:0]
		walkStates.Put(st)
	}()
	w.skipWS()
	if err := w.value(0); err != nil {
		return nil, err
	}
	w.skipWS()
	if w.pos != len(w.data) {
		return nil, errSyntax
	}
	return w.out, nil
}

func (w *jsonWalker) skipWS() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte, 0 at the end.
func (w *jsonWalker) next() byte {
	w.skipWS()
	if w.pos == len(w.data) {
		return 0
	}
	return w.data[w.pos]
}

// value re-encodes the value at w.pos, found inside depth containers.
func (w *jsonWalker) value(depth int) error {
	if depth >= MaxDepth {
		if w.strict {
			return errWalk{fmt.Sprintf("content nests deeper than %d levels", MaxDepth)}
		}
		start := w.pos
		if err := w.skip(depth); err != nil {
			return err
		}
		w.out = AppendString(w.out, SanitizeText(string(w.data[start:w.pos])))
		return nil
	}
	if w.pos == len(w.data) {
		return errSyntax
	}
	switch c := w.data[w.pos]; c {
	case '{':
		return w.object(depth)
	case '[':
		return w.array(depth)
	case '"':
		return w.stringValue()
	case 't':
		return w.literal("true")
	case 'f':
		return w.literal("false")
	case 'n':
		return w.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return w.number()
		}
		return errSyntax
	}
}

func (w *jsonWalker) literal(lit string) error {
	if err := w.skipLiteral(lit); err != nil {
		return err
	}
	w.out = append(w.out, lit...)
	return nil
}

func (w *jsonWalker) number() error {
	start := w.pos
	if err := w.skipNumber(); err != nil {
		return err
	}
	lit := w.data[start:w.pos]
	if jsonbSafeNumber(lit) {
		w.out = append(w.out, lit...)
		return nil
	}
	if w.strict {
		return errWalk{fmt.Sprintf("content number at %s is out of range", w.pathString(len(w.path)))}
	}
	w.out = append(w.out, '"')
	w.out = append(w.out, lit...) // a number needs no escaping
	w.out = append(w.out, '"')
	return nil
}

// skipNumber moves past the number at w.pos:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (w *jsonWalker) skipNumber() error {
	d := w.data
	i := w.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return errSyntax
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return errSyntax
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return errSyntax
		}
	}
	w.pos = i
	return nil
}

// jsonbSafeNumber reports whether the JSON number literal lit is one
// PostgreSQL's numeric stores without overflow: a mantissa of at most 1000
// characters and an exponent of at most 999 in magnitude (numeric allows
// 131072 digits before the point and 16383 after).
func jsonbSafeNumber(lit []byte) bool {
	mant, exp := lit, []byte(nil)
	if e := bytes.IndexAny(lit, "eE"); e >= 0 {
		mant, exp = lit[:e], lit[e+1:]
	}
	if len(mant) > 1000 {
		return false
	}
	if len(exp) > 0 && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	for len(exp) > 0 && exp[0] == '0' {
		exp = exp[1:]
	}
	return len(exp) < 4
}

// str reads the string at w.pos. If it holds no escape and is valid
// UTF-8, plain is true and s is its contents in w.data; they need no
// escaping either. Otherwise s is the decoded string in new memory, as
// encoding/json decodes it: each invalid UTF-8 byte and each unpaired
// surrogate escape become U+FFFD, and w.replaced says so.
func (w *jsonWalker) str() (s []byte, plain bool, err error) {
	w.replaced = false
	d := w.data
	start := w.pos + 1
	for i := start; i < len(d); {
		c := d[i]
		switch {
		case plainASCII[c]:
			i++
		case c == '"':
			w.pos = i + 1
			return d[start:i], true, nil
		case c == '\\':
			return w.unquote(start, i)
		case c < 0x20:
			return nil, false, errSyntax
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				return w.unquote(start, i)
			}
			i += size
		}
	}
	return nil, false, errSyntax
}

// plainASCII[c] reports whether c is an ASCII byte that stands for itself
// in a JSON string and needs no escaping in canonical JSON.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unquote decodes the string whose contents start at start, of which
// d[start:i] are plain, like encoding/json's unquoteBytes, and checks its
// escapes as encoding/json's scanner does.
func (w *jsonWalker) unquote(start, i int) ([]byte, bool, error) {
	d := w.data
	b := make([]byte, 0, i-start+32)
	b = append(b, d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			w.pos = i + 1
			return b, false, nil
		case c == '\\':
			if i+1 == len(d) {
				return nil, false, errSyntax
			}
			switch e := d[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(d[i:])
				if r < 0 {
					return nil, false, errSyntax
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, hex4(d[i:])); dec != utf8.RuneError {
						// A valid pair; consume.
						i += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					r = utf8.RuneError
					w.replaced = true
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return nil, false, errSyntax
			}
			i += 2
		case c < 0x20:
			return nil, false, errSyntax
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				w.replaced = true
			}
			b = utf8.AppendRune(b, r) // U+FFFD if invalid
			i += size
		}
	}
	return nil, false, errSyntax
}

// hex4 returns the code unit of the \uXXXX escape d starts with, or -1.
func hex4(d []byte) rune {
	if len(d) < 6 || d[0] != '\\' || d[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range d[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

func (w *jsonWalker) stringValue() error {
	start := w.pos
	s, plain, err := w.str()
	switch {
	case err != nil:
		return err
	case plain:
		w.out = append(w.out, w.data[start:w.pos]...)
		return nil
	case w.replaced && w.strict:
		return errWalk{fmt.Sprintf("content string at %s %s", w.pathString(len(w.path)), notTextMessage)}
	case bytes.IndexByte(s, 0) >= 0:
		if w.strict {
			return errWalk{fmt.Sprintf("content string at %s contains U+0000", w.pathString(len(w.path)))}
		}
		s = bytes.ReplaceAll(s, []byte{0}, []byte("\uFFFD"))
	}
	w.out = appendJSONBytes(w.out, s)
	return nil
}

func (w *jsonWalker) array(depth int) error {
	w.pos++ // [
	w.out = append(w.out, '[')
	if w.next() == ']' {
		w.pos++
		w.out = append(w.out, ']')
		return nil
	}
	p := len(w.path)
	w.path = append(w.path, pathElem{member: -1})
	for i := 0; ; i++ {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.path[p].index = i
		if err := w.value(depth + 1); err != nil {
			return err
		}
		switch w.next() {
		case ',':
			w.pos++
			w.skipWS()
		case ']':
			w.pos++
			w.path = w.path[:p]
			w.out = append(w.out, ']')
			return nil
		default:
			return errSyntax
		}
	}
}

func (w *jsonWalker) object(depth int) error {
	w.pos++ // {
	objStart := len(w.out)
	w.out = append(w.out, '{')
	if w.next() == '}' {
		w.pos++
		w.out = append(w.out, '}')
		return nil
	}
	base := len(w.members)
	p := len(w.path)
	w.path = append(w.path, pathElem{})
	for {
		if w.pos == len(w.data) || w.data[w.pos] != '"' {
			return errSyntax
		}
		if len(w.members) > base {
			w.out = append(w.out, ',')
		}
		m := member{start: len(w.out)}
		keyStart := w.pos
		key, plain, err := w.str()
		switch {
		case err != nil:
			return err
		case plain:
			w.out = append(w.out, w.data[keyStart:w.pos]...)
			m.keyStart, m.keyEnd = m.start+1, len(w.out)-1
		default:
			if w.replaced && w.strict {
				return errWalk{fmt.Sprintf("content key at %s %s", w.pathString(p), notTextMessage)}
			}
			if bytes.IndexByte(key, 0) >= 0 {
				if w.strict {
					return errWalk{fmt.Sprintf("content key at %s contains U+0000", w.pathString(p))}
				}
				key = bytes.ReplaceAll(key, []byte{0}, []byte("\uFFFD"))
			}
			m.key = key
			w.out = appendJSONBytes(w.out, key)
		}
		w.out = append(w.out, ':')
		if w.next() != ':' {
			return errSyntax
		}
		w.pos++
		w.skipWS()
		w.path[p].member = len(w.members)
		w.members = append(w.members, m)
		if err := w.value(depth + 1); err != nil {
			return err
		}
		w.members[len(w.members)-1].end = len(w.out)
		switch w.next() {
		case ',':
			w.pos++
			w.skipWS()
			continue
		case '}':
			w.pos++
		default:
			return errSyntax
		}
		break
	}
	w.path = w.path[:p]
	if err := w.order(objStart, w.members[base:], p); err != nil {
		return err
	}
	w.members = w.members[:base]
	w.out = append(w.out, '}')
	return nil
}

// keyOf returns m's decoded key.
func (w *jsonWalker) keyOf(m *member) []byte {
	if m.key != nil {
		return m.key
	}
	return w.out[m.keyStart:m.keyEnd]
}

// order puts the members ms of the object that starts at out[objStart]
// in order of their keys (byte-wise, stable) and, in strict mode, refuses
// a key given twice. The object is at path depth p.
func (w *jsonWalker) order(objStart int, ms []member, p int) error {
	sorted := true
	for i := 1; i < len(ms); i++ {
		if bytes.Compare(w.keyOf(&ms[i-1]), w.keyOf(&ms[i])) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(w.keyOf(&a), w.keyOf(&b)) })
	if w.strict {
		for i := 1; i < len(ms); i++ {
			if k := w.keyOf(&ms[i]); bytes.Equal(k, w.keyOf(&ms[i-1])) {
				return errWalk{fmt.Sprintf("content object at %s has key %q twice", w.pathString(p), k)}
			}
		}
	}
	// Rewrite the members in order. Their offsets (and keyOf) refer to out
	// as written, so copy it aside first.
	body := objStart + 1
	w.scratch = append(w.scratch[:0], w.out[body:]...)
	w.out = w.out[:body]
	for i := range ms {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, w.scratch[ms[i].start-body:ms[i].end-body]...)
	}
	return nil
}

// pathString names the value that w.path[:n] leads to, for an error
// message: "the top level", or e.g. "items[2].name".
func (w *jsonWalker) pathString(n int) string {
	if n == 0 {
		return "the top level"
	}
	var b []byte
	for i, e := range w.path[:n] {
		if e.member < 0 {
			b = fmt.Appendf(b, "[%d]", e.index)
			continue
		}
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, w.keyOf(&w.members[e.member])...)
	}
	return string(b)
}

// skip moves past the value at w.pos, found inside depth containers,
// checking its syntax as encoding/json's Valid does (which refuses nesting
// deeper than maxSyntaxDepth).
func (w *jsonWalker) skip(depth int) error {
	if w.pos == len(w.data) {
		return errSyntax
	}
	switch c := w.data[w.pos]; c {
	case '{', '[':
		if depth+1 > maxSyntaxDepth {
			return errSyntax
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		w.pos++
		if w.next() == end {
			w.pos++
			return nil
		}
		for {
			if c == '{' {
				if w.pos == len(w.data) || w.data[w.pos] != '"' {
					return errSyntax
				}
				if _, _, err := w.str(); err != nil {
					return err
				}
				if w.next() != ':' {
					return errSyntax
				}
				w.pos++
				w.skipWS()
			}
			if err := w.skip(depth + 1); err != nil {
				return err
			}
			switch w.next() {
			case ',':
				w.pos++
				w.skipWS()
			case end:
				w.pos++
				return nil
			default:
				return errSyntax
			}
		}
	case '"':
		_, _, err := w.str()
		return err
	case 't':
		return w.skipLiteral("true")
	case 'f':
		return w.skipLiteral("false")
	case 'n':
		return w.skipLiteral("null")
	default:
		return w.skipNumber()
	}
}

func (w *jsonWalker) skipLiteral(lit string) error {
	if len(w.data)-w.pos < len(lit) || string(w.data[w.pos:w.pos+len(lit)]) != lit {
		return errSyntax
	}
	w.pos += len(lit)
	return nil
}

// SanitizeText returns s as valid UTF-8 without U+0000: invalid bytes and
// NULs become U+FFFD.
func SanitizeText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// AppendString appends s as a JSON string, as canonical JSON writes it:
// quotes, backslashes and control characters escaped, everything else
// (including <, > and &) as is, invalid UTF-8 replaced by U+FFFD.
func AppendString(dst []byte, s string) []byte { return appendQuoted(dst, s, false) }

// appendJSONBytes is AppendString for s in valid UTF-8.
func appendJSONBytes(dst []byte, s []byte) []byte { return appendQuoted(dst, s, false) }

// marshalString appends s as a JSON string exactly as encoding/json's
// Marshal writes a Go string: ", \ and control characters escaped (\b, \f,
// \n, \r, \t by name), <, > and & as \u003c, \u003e, \u0026, U+2028 and
// U+2029 as \u2028 and \u2029, each invalid UTF-8 byte as \ufffd.
func marshalString(dst []byte, s string) []byte { return appendQuoted(dst, s, true) }

// canonicalSafe[b] reports whether canonical JSON writes the ASCII byte b
// as is inside a string.
var canonicalSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// htmlSafe[b] reports whether encoding/json (with HTML escaping, its
// default) writes the ASCII byte b as is inside a string.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// appendQuoted appends s as a JSON string: the one escaper behind
// AppendString and appendJSONBytes (canonical JSON) and marshalString
// (encoding/json's form, when marshal is set). Both escape ", \ and control
// characters (\n, \r, \t by name, the others as \u00XX) and write each
// invalid UTF-8 byte as \ufffd; encoding/json also names \b and \f, and
// escapes <, >, &, U+2028 and U+2029. Runs of bytes written as is are
// copied whole.
func appendQuoted[T string | []byte](dst []byte, s T, marshal bool) []byte {
	const hexDigits = "0123456789abcdef"
	safe := &canonicalSafe
	if marshal {
		safe = &htmlSafe
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch {
			case b == '"' || b == '\\':
				dst = append(dst, '\\', b)
			case b == '\n':
				dst = append(dst, '\\', 'n')
			case b == '\r':
				dst = append(dst, '\\', 'r')
			case b == '\t':
				dst = append(dst, '\\', 't')
			case marshal && b == '\b':
				dst = append(dst, '\\', 'b')
			case marshal && b == '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		// Decoding at most utf8.UTFMax bytes: for a []byte s, a copy that
		// small stays on the stack.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case marshal && (r == '\u2028' || r == '\u2029'):
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
