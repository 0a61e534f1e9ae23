package canonjson

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"sync"
	"time"
)

// FingerprintVersion prefixes the hashed form, so that a future change to
// what the fingerprint covers cannot collide with today's fingerprints.
const FingerprintVersion = "herald.intent.v1"

// Request is what a request fingerprint covers: a normalized intent
// without request_id, trace_id and occurred_at (a retry may carry a new
// request id and a defaulted occurred_at). Fingerprint sorts the lists
// itself, so their order does not matter.
type Request struct {
	NotificationType string
	Producer         string
	IdempotencyKey   string
	// Channels are the delivery channels the intent lists.
	Channels []string
	UserIDs  []string
	SMS      []string
	Email    []string
	Webhook  []string
	// Content is the intent's content as canonical JSON (valid and compact).
	Content   []byte
	SendAt    time.Time
	ExpiresAt time.Time
	Priority  string
	// MaxAttempts is the intent's attempt budget; 0 means the channel's.
	MaxAttempts int
}

// Fingerprint returns the hex SHA-256 of the canonical form of r. It
// leaves r and its lists unchanged.
//
// The canonical form holds r's fields with every list sorted and times in
// UTC RFC 3339 with nanoseconds ("" for the zero time). It is written out
// exactly as encoding/json's Marshal wrote this struct, which earlier
// versions hashed, so that stored fingerprints stay valid:
//
//	struct {
//		Version          string          `json:"v"`
//		NotificationType string          `json:"notification_type"`
//		Producer         string          `json:"producer"`
//		IdempotencyKey   string          `json:"idempotency_key"`
//		Channels         []string        `json:"channels"`
//		UserIDs          []string        `json:"user_ids"`
//		SMS              []string        `json:"sms"`
//		Email            []string        `json:"email"`
//		Webhook          []string        `json:"webhook"`
//		Content          json.RawMessage `json:"content"`
//		SendAt           string          `json:"send_at"`
//		ExpiresAt        string          `json:"expires_at"`
//		Priority         string          `json:"priority"`
//		MaxAttempts      int             `json:"max_attempts"`
//	}
//
// That is: strings with <, >, &, U+2028 and U+2029 escaped and invalid
// UTF-8 as \ufffd (marshalString), a nil list as null, and the content
// with <, >, &, U+2028 and U+2029 escaped (marshalRawJSON). Package
// canonjsonref keeps the encoding/json version, and this package's tests
// check that the two agree.
func Fingerprint(r *Request) string {
	bp := fingerprintBufs.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, `{"v":"`+FingerprintVersion+`","notification_type":`...)
	b = marshalString(b, r.NotificationType)
	b = append(b, `,"producer":`...)
	b = marshalString(b, r.Producer)
	b = append(b, `,"idempotency_key":`...)
	b = marshalString(b, r.IdempotencyKey)
	b = append(b, `,"channels":`...)
	b = marshalSortedList(b, r.Channels)
	b = append(b, `,"user_ids":`...)
	b = marshalSortedList(b, r.UserIDs)
	b = append(b, `,"sms":`...)
	b = marshalSortedList(b, r.SMS)
	b = append(b, `,"email":`...)
	b = marshalSortedList(b, r.Email)
	b = append(b, `,"webhook":`...)
	b = marshalSortedList(b, r.Webhook)
	b = append(b, `,"content":`...)
	b = marshalRawJSON(b, r.Content)
	b = append(b, `,"send_at":`...)
	b = marshalTime(b, r.SendAt)
	b = append(b, `,"expires_at":`...)
	b = marshalTime(b, r.ExpiresAt)
	b = append(b, `,"priority":`...)
	b = marshalString(b, r.Priority)
	b = append(b, `,"max_attempts":`...)
	b = strconv.AppendInt(b, int64(r.MaxAttempts), 10)
	b = append(b, '}')
	sum := sha256.Sum256(b)
	if cap(b) <= maxPooledBuf {
		*bp = b
		fingerprintBufs.Put(bp)
	}
	var digest [2 * sha256.Size]byte
	hex.Encode(digest[:], sum[:])
	return string(digest[:])
}

// fingerprintBufs holds the buffers Fingerprint writes the canonical form
// into; maxPooledBuf bounds what goes back, so that one huge intent does
// not pin its buffer.
var fingerprintBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledBuf = 64 << 10

// fingerprintTime formats t in UTC RFC 3339 with nanoseconds; "" for zero.
func fingerprintTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// marshalTime appends fingerprintTime(t) as a JSON string. RFC 3339 needs
// no escaping.
func marshalTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	if !t.IsZero() {
		dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	}
	return append(dst, '"')
}

// marshalSortedList appends list, sorted, as encoding/json marshals a
// []string: null if list is nil. list itself is left alone.
func marshalSortedList(dst []byte, list []string) []byte {
	if list == nil {
		return append(dst, "null"...)
	}
	if !slices.IsSorted(list) {
		list = slices.Clone(list)
		slices.Sort(list)
	}
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = marshalString(dst, s)
	}
	return append(dst, ']')
}

// rawSpecial marks the bytes marshalRawJSON stops at: <, > and &, and
// 0xE2, which starts U+2028 and U+2029 in UTF-8.
var rawSpecial = [256]bool{'<': true, '>': true, '&': true, 0xE2: true}

// marshalRawJSON appends the compact, valid JSON raw as encoding/json's
// Marshal writes a json.RawMessage: <, > and & as \u003c, \u003e, \u0026
// and U+2028 and U+2029 as \u2028 and \u2029, wherever they are. (Marshal
// also compacts, which changes nothing in compact JSON: Request.Content
// is that.)
func marshalRawJSON(dst []byte, raw []byte) []byte {
	const hexDigits = "0123456789abcdef"
	start := 0
	for i := 0; i < len(raw); i++ {
		if !rawSpecial[raw[i]] {
			continue // one lookup for the usual byte, not four comparisons
		}
		switch c := raw[i]; {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			start = i + 3
			i += 2
		}
	}
	return append(dst, raw[start:]...)
}
