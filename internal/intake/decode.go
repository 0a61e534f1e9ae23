package intake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/template"
)

// DecodeRaw decodes one raw intake entry into an Intent, for Validate. It
// refuses, with a *heraldtype.ValidationError listing every problem it finds:
//   - an entry over lim.MaxEntryBytes: too_large;
//   - an entry that is not JSON or not UTF-8: not_json;
//   - JSON that is not an object, or holds an unknown or repeated field, or
//     a field of the wrong type: wrong_shape, naming the field;
//   - a time that is not RFC 3339 (an offset outside -23:59..+23:59
//     included), a time at the zero instant 0001-01-01T00:00:00Z (which the
//     Go Intent cannot tell from an absent time), a string holding an
//     unpaired surrogate escape such as "\ud800" (which decoding would turn
//     into U+FFFD), or an integer out of range: invalid_field, but
//     schedule_out_of_range for an expires_at at the zero instant, which is
//     long past;
//   - a max_attempts of 0 written out: invalid_field (a budget is 1..100;
//     absent or null means the channel's default).
//
// Field names match exactly (not case-insensitively, unlike
// encoding/json); a null field, and an empty time string, mean the field is
// absent. content.webhook is kept as raw JSON; Validate refuses what in it
// is not text.
func DecodeRaw(body []byte, lim Limits) (*Intent, error) {
	lim = lim.WithDefaults()
	if len(body) > lim.MaxEntryBytes {
		return nil, tooLarge(len(body), lim.MaxEntryBytes)
	}
	if !utf8.Valid(body) {
		return nil, &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{Code: heraldtype.CodeNotJSON, Message: "entry is not valid UTF-8"}}}
	}
	if err := json.Unmarshal(body, new(json.RawMessage)); err != nil {
		return nil, &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{Code: heraldtype.CodeNotJSON, Message: "entry is not JSON: " + err.Error()}}}
	}
	var d rawDecoder
	in := &Intent{}
	d.object("", body, map[string]func(string, json.RawMessage){
		"notification_type": d.str(&in.NotificationType),
		"producer":          d.str(&in.Producer),
		"idempotency_key":   d.str(&in.IdempotencyKey),
		"channels":          d.strs(&in.Channels),
		"occurred_at":       d.time(&in.OccurredAt, heraldtype.CodeInvalidField),
		"send_at":           d.time(&in.SendAt, heraldtype.CodeInvalidField),
		"expires_at":        d.time(&in.ExpiresAt, heraldtype.CodeScheduleOutOfRange),
		"priority":          d.str((*string)(&in.Priority)),
		"max_attempts": func(path string, raw json.RawMessage) {
			n := len(d.errs)
			d.int(&in.MaxAttempts)(path, raw)
			if !isNull(raw) && in.MaxAttempts == 0 && len(d.errs) == n {
				// 0 is the Go Intent's "absent"; written out, it is a
				// budget of no attempts, which no channel has.
				d.errs.add(path, heraldtype.CodeInvalidField, "max_attempts 0 is outside 1..%d; leave it out for the channel's default", maxMaxAttempts)
			}
		},
		"request_id":   d.str(&in.RequestID),
		"trace_id":     d.str(&in.TraceID),
		"callback_url": d.str(&in.CallbackURL),
		"from_sender":  d.str(&in.FromSender),
		"message_type": d.str((*string)(&in.MessageType)),
		"template": func(path string, raw json.RawMessage) {
			ref := &heraldtype.TemplateRef{}
			if d.object(path, raw, map[string]func(string, json.RawMessage){
				"name":    d.str(&ref.Name),
				"version": d.int(&ref.Version),
				"locale":  d.str(&ref.Locale),
			}) {
				in.Template = ref
			}
		},
		"data": func(path string, raw json.RawMessage) {
			if isNull(raw) {
				return
			}
			if jsonKind(raw) != "object" {
				d.errs.add(path, heraldtype.CodeWrongShape, "must be a JSON object, not %s", jsonKind(raw))
				return
			}
			m, err := template.DecodeData(raw)
			if err != nil {
				d.errs.add(path, heraldtype.CodeWrongShape, "%v", err)
				return
			}
			in.Data = m
		},
		"campaign": d.str(&in.Campaign),
		// Metadata: an object of strings.
		"metadata": d.metadata(&in.Metadata),
		"audience": func(path string, raw json.RawMessage) {
			d.object(path, raw, map[string]func(string, json.RawMessage){
				"user_ids": d.strs(&in.Audience.UserIDs),
				"sms":      d.strs(&in.Audience.SMS),
				"email":    d.strs(&in.Audience.Email),
				"webhook":  d.strs(&in.Audience.Webhook),
			})
		},
		"content": func(path string, raw json.RawMessage) {
			d.object(path, raw, map[string]func(string, json.RawMessage){
				"sms": func(path string, raw json.RawMessage) {
					sms := &SMSContent{}
					if d.object(path, raw, map[string]func(string, json.RawMessage){
						"body": d.str(&sms.Body),
					}) {
						in.Content.SMS = sms
					}
				},
				"email": func(path string, raw json.RawMessage) {
					email := &EmailContent{}
					if d.object(path, raw, map[string]func(string, json.RawMessage){
						"subject": d.str(&email.Subject),
						"text":    d.str(&email.Text),
						"html":    d.str(&email.HTML),
					}) {
						in.Content.Email = email
					}
				},
				"webhook": func(_ string, raw json.RawMessage) {
					if !isNull(raw) {
						in.Content.Webhook = raw
					}
				},
			})
		},
	})
	if err := d.errs.err(); err != nil {
		return nil, err
	}
	return in, nil
}

// tooLarge is DecodeRaw's refusal of an entry of size bytes, over limit.
func tooLarge(size, limit int) error {
	return &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{Code: heraldtype.CodeTooLarge,
		Message: fmt.Sprintf("entry is %d bytes; the limit is %d", size, limit)}}}
}

// rawDecoder decodes an intake entry field by field, collecting errors.
type rawDecoder struct {
	errs errorList
}

// object decodes the JSON object raw found at path, handing each member to
// its field's function. It reports a non-object, unknown fields and repeated
// fields, and returns whether raw was a non-null object.
func (d *rawDecoder) object(path string, raw json.RawMessage, fields map[string]func(string, json.RawMessage)) bool {
	if isNull(raw) && path != "" {
		return false
	}
	if kind := jsonKind(raw); kind != "object" {
		if path == "" {
			d.errs.add("", heraldtype.CodeWrongShape, "entry must be a JSON object, not %s", kind)
		} else {
			d.errs.add(path, heraldtype.CodeWrongShape, "must be an object, not %s", kind)
		}
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		d.errs.add(path, heraldtype.CodeNotJSON, "%v", err)
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			d.errs.add(path, heraldtype.CodeNotJSON, "%v", err)
			return false
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			d.errs.add(path, heraldtype.CodeNotJSON, "%v", err)
			return false
		}
		field := joinPath(path, key)
		switch f, ok := fields[key]; {
		case !ok:
			d.errs.add(field, heraldtype.CodeWrongShape, "unknown field")
		case seen[key]:
			d.errs.add(field, heraldtype.CodeWrongShape, "field appears twice")
		default:
			seen[key] = true
			f(field, val)
		}
	}
	return true
}

// str returns a field function that decodes a string into dst.
func (d *rawDecoder) str(dst *string) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if s, ok := d.decodeString(path, raw); ok {
			*dst = s
		}
	}
}

func (d *rawDecoder) decodeString(path string, raw json.RawMessage) (string, bool) {
	if isNull(raw) {
		return "", false
	}
	if kind := jsonKind(raw); kind != "string" {
		d.errs.add(path, heraldtype.CodeWrongShape, "must be a string, not %s", kind)
		return "", false
	}
	// Unquote decodes as encoding/json does, and says whether it put a
	// U+FFFD in place of something that is not text.
	b, replaced, err := canonjson.Unquote(raw)
	switch {
	case err != nil:
		d.errs.add(path, heraldtype.CodeWrongShape, "must be a string: %v", err)
		return "", false
	case replaced:
		// The entry is valid UTF-8, so this is an escape.
		d.errs.add(path, heraldtype.CodeInvalidField, "holds an unpaired surrogate escape (\\ud800-\\udfff), which is not a character")
		return "", false
	}
	return string(b), true
}

// strs returns a field function that decodes an array of strings into dst.
func (d *rawDecoder) strs(dst *[]string) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if isNull(raw) {
			return
		}
		if kind := jsonKind(raw); kind != "array" {
			d.errs.add(path, heraldtype.CodeWrongShape, "must be an array of strings, not %s", kind)
			return
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			d.errs.add(path, heraldtype.CodeWrongShape, "must be an array of strings: %v", err)
			return
		}
		out := make([]string, 0, len(elems))
		for i, e := range elems {
			elemPath := fmt.Sprintf("%s[%d]", path, i)
			if isNull(e) {
				d.errs.add(elemPath, heraldtype.CodeWrongShape, "must be a string, not null")
				continue
			}
			if s, ok := d.decodeString(elemPath, e); ok {
				out = append(out, s)
			}
		}
		*dst = out
	}
}

// time returns a field function that decodes an RFC 3339 time into dst. A
// time at the zero instant is refused with zeroCode: in an Intent it would
// read as no time at all.
func (d *rawDecoder) time(dst *time.Time, zeroCode heraldtype.Code) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		s, ok := d.decodeString(path, raw)
		if !ok || s == "" {
			return
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			d.errs.add(path, heraldtype.CodeInvalidField, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
			return
		}
		if off, ok := rfc3339Offset(s); !ok {
			d.errs.add(path, heraldtype.CodeInvalidField, "has the time zone offset %s; RFC 3339 allows -23:59 to +23:59", off)
			return
		}
		if t.IsZero() {
			d.errs.add(path, zeroCode, "is the zero time 0001-01-01T00:00:00Z, which herald reads as no %s; give a real time or leave the field out", path)
			return
		}
		*dst = t
	}
}

// rfc3339Offset returns the numeric offset ending s, a time time.Parse
// read as RFC 3339, and whether it is one RFC 3339 allows: hours 00-23 and
// minutes 00-59. time.Parse accepts up to +24:00 and minutes up to 60. A
// "Z" offset is fine.
func rfc3339Offset(s string) (string, bool) {
	if len(s) < 6 || s[len(s)-1] == 'Z' {
		return "Z", true
	}
	off := s[len(s)-6:] // ±hh:mm, as time.Parse checked
	return off, off[1:3] <= "23" && off[4:6] <= "59"
}

// int returns a field function that decodes an integer into dst.
func (d *rawDecoder) int(dst *int) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if isNull(raw) {
			return
		}
		if kind := jsonKind(raw); kind != "number" {
			d.errs.add(path, heraldtype.CodeWrongShape, "must be an integer, not %s", kind)
			return
		}
		n, err := strconv.ParseInt(string(raw), 10, 32)
		switch {
		case errors.Is(err, strconv.ErrRange):
			d.errs.add(path, heraldtype.CodeInvalidField, "integer out of range")
		case err != nil:
			d.errs.add(path, heraldtype.CodeWrongShape, "must be an integer, not %s", quoteShort(string(raw)))
		default:
			*dst = int(n)
		}
	}
}

// jsonKind names the type of the valid JSON value raw.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

func isNull(raw []byte) bool { return jsonKind(raw) == "null" }

// joinPath appends key to path. The key comes from the entry, so it is
// sanitized and cut to 64 characters: the path ends up in failure_message.
func joinPath(path, key string) string {
	key = canonjson.SanitizeText(key)
	if utf8.RuneCountInString(key) > 64 {
		key = cutRunes(key, 63) + "…"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// maxRawFieldsBytes caps what RawFields echoes. A larger entry, already
// refused as too_large, is not copied whole into malformed_intents.
const maxRawFieldsBytes = DefaultMaxEntryBytes

// RawFieldsExcerpt is how much of an oversized entry RawFields keeps, in
// bytes: 4 KiB. The intake worker loads no more of an entry it must refuse
// as too_large.
const RawFieldsExcerpt = 4 << 10

// RawFields returns JSON for malformed_intents.raw_fields that PostgreSQL's
// jsonb always accepts: the entry itself if it is a JSON object, else
// {"body": "<text>"}. Either way it is valid UTF-8 (invalid bytes become
// U+FFFD), holds no U+0000 (it becomes U+FFFD) and no number jsonb's
// numeric cannot hold (such a number becomes a string), and nests at most
// 64 levels (deeper values become their JSON text, as a string). An entry
// larger than 256 KiB is not echoed whole: the result is {"body": "<first
// 4 KiB>", "truncated": true, "bytes": <size>}.
func RawFields(body []byte) []byte {
	if len(body) > maxRawFieldsBytes {
		// Cut at a rune boundary (at most 3 bytes back) so that the excerpt
		// does not end in a U+FFFD of its own making.
		n := RawFieldsExcerpt
		for i := 0; i < 3 && !utf8.RuneStart(body[n]); i++ {
			n--
		}
		excerpt := body[:n]
		out := []byte(`{"body":`)
		out = canonjson.AppendString(out, canonjson.SanitizeText(string(excerpt)))
		return fmt.Appendf(out, `,"truncated":true,"bytes":%d}`, len(body))
	}
	if jsonKind(body) == "object" && json.Valid(body) {
		if out, err := canonjson.Repair(body); err == nil {
			return out
		}
	}
	out := []byte(`{"body":`)
	out = canonjson.AppendString(out, canonjson.SanitizeText(string(body)))
	return append(out, '}')
}

// Lengths PartialFields cuts its results to, in characters.
const (
	partialNameLen = maxNameLen
	partialKeyLen  = maxIdempotencyKeyLen
)

// PartialFields digs notification_type, producer and idempotency_key out of
// a raw entry that may be malformed, for the malformed_intents columns of
// the same names. It reads the top-level object up to the first syntax
// error; a field absent, not a string, or past the error is "". Results are
// trimmed, valid UTF-8 without U+0000, and cut to 128, 128 and 255
// characters.
func PartialFields(body []byte) (notificationType, producer, idempotencyKey string) {
	if jsonKind(body) != "object" {
		return "", "", ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		return "", "", ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			break
		}
		var s string
		if jsonKind(val) != "string" || json.Unmarshal(val, &s) != nil {
			continue
		}
		switch key {
		case "notification_type":
			notificationType = cmp.Or(notificationType, cutRunes(s, partialNameLen))
		case "producer":
			producer = cmp.Or(producer, cutRunes(s, partialNameLen))
		case "idempotency_key":
			idempotencyKey = cmp.Or(idempotencyKey, cutRunes(s, partialKeyLen))
		}
	}
	return notificationType, producer, idempotencyKey
}

// cutRunes returns s sanitized and trimmed, cut to at most n runes.
func cutRunes(s string, n int) string {
	s = strings.TrimSpace(canonjson.SanitizeText(s))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j])
		}
		i++
	}
	return s
}
