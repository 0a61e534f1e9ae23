// Package canonjsonref keeps the implementations of package canonjson's
// Canonical, Repair and Fingerprint as they were before its hand-written
// scanner replaced them (commit 5e1912a): encoding/json versions, verbatim
// but for their names. They are the reference canonjson must match byte
// for byte: stored fingerprints must stay valid, and the error messages are
// part of what malformed_intents records. Only tests import this package.
// Do not "fix" it.
package canonjsonref

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/canonjson"
)

// fingerprintForm is what the fingerprint hashes: the normalized intent
// except request_id, trace_id and occurred_at (a retry may carry a new
// request id and a defaulted occurred_at), with every list sorted so that
// order does not matter and times in UTC RFC 3339 with nanoseconds.
type fingerprintForm struct {
	Version          string          `json:"v"`
	NotificationType string          `json:"notification_type"`
	Producer         string          `json:"producer"`
	IdempotencyKey   string          `json:"idempotency_key"`
	Channels         []string        `json:"channels"`
	UserIDs          []string        `json:"user_ids"`
	SMS              []string        `json:"sms"`
	Email            []string        `json:"email"`
	Webhook          []string        `json:"webhook"`
	Content          json.RawMessage `json:"content"`
	SendAt           string          `json:"send_at"`
	ExpiresAt        string          `json:"expires_at"`
	Priority         string          `json:"priority"`
	MaxAttempts      int             `json:"max_attempts"`
}

// Fingerprint returns the hex SHA-256 of the canonical form of the
// request r, as canonjson.Fingerprint must.
func Fingerprint(r *canonjson.Request) string {
	sorted := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		return s
	}
	form := fingerprintForm{
		Version:          canonjson.FingerprintVersion,
		NotificationType: r.NotificationType,
		Producer:         r.Producer,
		IdempotencyKey:   r.IdempotencyKey,
		Channels:         sorted(r.Channels),
		UserIDs:          sorted(r.UserIDs),
		SMS:              sorted(r.SMS),
		Email:            sorted(r.Email),
		Webhook:          sorted(r.Webhook),
		Content:          r.Content,
		SendAt:           fingerprintTime(r.SendAt),
		ExpiresAt:        fingerprintTime(r.ExpiresAt),
		Priority:         r.Priority,
		MaxAttempts:      r.MaxAttempts,
	}
	b, err := json.Marshal(form)
	if err != nil {
		// Every field is a string, a list of strings, an int or canonical
		// JSON produced by this package, so Marshal cannot fail.
		panic(fmt.Sprintf("canonjsonref: marshal fingerprint form: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fingerprintTime formats t in UTC RFC 3339 with nanoseconds; "" for zero.
func fingerprintTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Canonical returns raw re-encoded canonically: no insignificant
// whitespace, object keys sorted, strings minimally escaped, numbers as
// written. It refuses invalid JSON, duplicate keys, U+0000 in strings,
// nesting deeper than canonjson.MaxDepth and numbers PostgreSQL's numeric
// cannot hold, so that the result is always castable to jsonb.
//
// It also refuses strings (and keys) that are not text:
// invalid UTF-8 or an unpaired surrogate escape, which encoding/json
// silently decodes as U+FFFD. That check reads each string's literal in raw
// (validText), where encoding/json's tokens no longer show it.
func Canonical(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("content is not valid JSON")
	}
	w := jsonWalker{strict: true, raw: raw}
	return w.walk(raw)
}

// Repair re-encodes the valid JSON raw as the non-strict walker did, as
// canonjson.Repair must.
func Repair(raw []byte) ([]byte, error) {
	w := jsonWalker{}
	return w.walk(raw)
}

// notText is the error for a string or key that is not text.
func notText(what, path string) error {
	return errWalk{fmt.Sprintf(`content %s at %s is not valid Unicode text: it holds invalid UTF-8 or an unpaired surrogate escape (\ud800-\udfff)`, what, pathOrRoot(path))}
}

// validText reports whether the JSON string literal lit (valid JSON,
// quotes included) decodes without a replacement character of the
// decoder's making: it is valid UTF-8 and every \u escape of a UTF-16
// surrogate is a high one followed at once by an escaped low one.
func validText(lit []byte) bool {
	if !utf8.Valid(lit) {
		return false
	}
	unit := func(i int) uint64 { // the code unit of the escape at lit[i:]
		if i+6 > len(lit) || lit[i] != '\\' || lit[i+1] != 'u' {
			return 0
		}
		u, _ := strconv.ParseUint(string(lit[i+2:i+6]), 16, 16)
		return u
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		if lit[i+1] != 'u' {
			i++ // past the escaped character, which may be a backslash
			continue
		}
		switch u := unit(i); {
		case u >= 0xDC00 && u <= 0xDFFF:
			return false // a low surrogate with no high one before it
		case u >= 0xD800 && u <= 0xDBFF:
			if low := unit(i + 6); low < 0xDC00 || low > 0xDFFF {
				return false
			}
			i += 11 // past both escapes
		default:
			i += 5
		}
	}
	return true
}

// literal returns the string literal the token dec just returned ends, which
// started at or after offset start of raw.
func (w *jsonWalker) literal(dec *json.Decoder, start int64) []byte {
	lit := w.raw[start:dec.InputOffset()]
	return lit[bytes.IndexByte(lit, '"'):]
}

// jsonWalker re-encodes a valid JSON value token by token. In strict mode
// it refuses what PostgreSQL's jsonb cannot take; otherwise it repairs it:
// U+0000 becomes U+FFFD, extreme numbers and too-deep values become
// strings, duplicate keys are kept.
type jsonWalker struct {
	strict bool
	raw    []byte // the input, for validText; set in strict mode
	out    []byte
}

// errWalk marks an error the walker found in the content, not in the
// decoder.
type errWalk struct{ msg string }

func (e errWalk) Error() string { return e.msg }

// walk re-encodes the single JSON value in raw, which must be valid JSON.
func (w *jsonWalker) walk(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := w.value(dec, 0, ""); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("content holds more than one JSON value")
	}
	return w.out, nil
}

// value re-encodes the next value of dec, found at depth at path.
func (w *jsonWalker) value(dec *json.Decoder, depth int, path string) error {
	if depth >= canonjson.MaxDepth {
		if w.strict {
			return errWalk{fmt.Sprintf("content nests deeper than %d levels", canonjson.MaxDepth)}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		w.out = appendJSONString(w.out, sanitizeText(string(raw)))
		return nil
	}
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return w.array(dec, depth, path)
		}
		return w.object(dec, depth, path)
	case string:
		if w.strict && !validText(w.literal(dec, start)) {
			return notText("string", path)
		}
		if strings.IndexByte(t, 0) >= 0 {
			if w.strict {
				return errWalk{fmt.Sprintf("content string at %s contains U+0000", pathOrRoot(path))}
			}
			t = sanitizeText(t)
		}
		w.out = appendJSONString(w.out, t)
	case json.Number:
		if !JSONBSafeNumber(string(t)) {
			if w.strict {
				return errWalk{fmt.Sprintf("content number at %s is out of range", pathOrRoot(path))}
			}
			w.out = appendJSONString(w.out, string(t))
			return nil
		}
		w.out = append(w.out, t...)
	case bool:
		w.out = fmt.Append(w.out, t)
	case nil:
		w.out = append(w.out, "null"...)
	}
	return nil
}

func (w *jsonWalker) array(dec *json.Decoder, depth int, path string) error {
	w.out = append(w.out, '[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		if err := w.value(dec, depth+1, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ']'
	w.out = append(w.out, ']')
	return err
}

func (w *jsonWalker) object(dec *json.Decoder, depth int, path string) error {
	type member struct {
		key string
		val []byte
	}
	var members []member
	outer := w.out
	for dec.More() {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if w.strict && !validText(w.literal(dec, start)) {
			return notText("key", path)
		}
		if strings.IndexByte(key, 0) >= 0 {
			if w.strict {
				return errWalk{fmt.Sprintf("content key at %s contains U+0000", pathOrRoot(path))}
			}
			key = sanitizeText(key)
		}
		w.out = nil
		if err := w.value(dec, depth+1, path+"."+key); err != nil {
			return err
		}
		members = append(members, member{key, w.out})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return err
	}
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	w.out = append(outer, '{')
	for i, m := range members {
		if i > 0 {
			if m.key == members[i-1].key && w.strict {
				return errWalk{fmt.Sprintf("content object at %s has key %q twice", pathOrRoot(path), m.key)}
			}
			w.out = append(w.out, ',')
		}
		w.out = appendJSONString(w.out, m.key)
		w.out = append(w.out, ':')
		w.out = append(w.out, m.val...)
	}
	w.out = append(w.out, '}')
	return nil
}

func pathOrRoot(path string) string {
	if path == "" {
		return "the top level"
	}
	return strings.TrimPrefix(path, ".")
}

// JSONBSafeNumber reports whether the JSON number literal lit is one
// PostgreSQL's numeric stores without overflow: a mantissa of at most 1000
// characters and an exponent of at most 999 in magnitude (numeric allows
// 131072 digits before the point and 16383 after).
func JSONBSafeNumber(lit string) bool {
	mant, exp, hasExp := strings.Cut(strings.ToLower(lit), "e")
	if len(mant) > 1000 {
		return false
	}
	if !hasExp {
		return true
	}
	exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	return len(exp) < 4
}

// sanitizeText returns s as valid UTF-8 without U+0000: invalid bytes and
// NULs become U+FFFD.
func sanitizeText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, everything else (including <, > and &) as is,
// invalid UTF-8 replaced by U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '"':
			dst = append(dst, `\"`...)
		case r == '\\':
			dst = append(dst, `\\`...)
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
