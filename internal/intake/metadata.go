package intake

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// The metadata budget: what one intent's metadata may hold. Metadata is
// stored with every notification that carries it and copied into each of
// its status callbacks, so it is bounded as the rest of the intent is.
const (
	// MaxMetadataKeys is the most keys an intent's metadata may have.
	MaxMetadataKeys = 32
	// MaxMetadataKeyLen is the longest key, in characters of
	// [A-Za-z0-9_.:-].
	MaxMetadataKeyLen = 64
	// MaxMetadataValueBytes is the longest value, in bytes of UTF-8.
	MaxMetadataValueBytes = 512
	// MaxMetadataBytes caps the whole map as canonical JSON (what
	// records.metadata holds): 4 KiB.
	MaxMetadataBytes = 4 << 10
)

// checkMetadata validates an intent's metadata and returns it copied and
// its canonical JSON (keys sorted, no insignificant whitespace); both are
// nil for metadata nil or empty, which stores nothing. Keys are reported in
// sorted order, so that the errors of one map always read the same.
func checkMetadata(errs *errorList, m map[string]string) (map[string]string, []byte) {
	if len(m) == 0 {
		return nil, nil
	}
	if len(m) > MaxMetadataKeys {
		errs.add("metadata", heraldtype.CodeInvalidField, "metadata has %d keys; the limit is %d", len(m), MaxMetadataKeys)
		return nil, nil
	}
	keys := slices.Sorted(maps.Keys(m))
	n := len(*errs)
	for _, k := range keys {
		field := joinPath("metadata", k)
		switch {
		case k == "":
			errs.add("metadata", heraldtype.CodeInvalidField, "metadata has an empty key")
		case len(k) > MaxMetadataKeyLen:
			errs.add(field, heraldtype.CodeInvalidField, "metadata key is longer than %d characters", MaxMetadataKeyLen)
		case strings.IndexFunc(k, func(r rune) bool { return !isNameRune(r) }) >= 0:
			errs.add(field, heraldtype.CodeInvalidField, "metadata key may hold only letters, digits and . _ : -")
		}
		v := m[k]
		switch {
		case !utf8.ValidString(v):
			errs.add(field, heraldtype.CodeInvalidField, "metadata value is not valid UTF-8")
		case strings.IndexByte(v, 0) >= 0:
			errs.add(field, heraldtype.CodeInvalidField, "metadata value contains U+0000")
		case len(v) > MaxMetadataValueBytes:
			errs.add(field, heraldtype.CodeInvalidField, "metadata value is %d bytes; the limit is %d", len(v), MaxMetadataValueBytes)
		}
	}
	if len(*errs) > n {
		return nil, nil
	}
	out := make([]byte, 0, 64)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = canonjson.AppendString(out, k)
		out = append(out, ':')
		out = canonjson.AppendString(out, m[k])
	}
	out = append(out, '}')
	if len(out) > MaxMetadataBytes {
		errs.add("metadata", heraldtype.CodeTooLarge, "metadata is %d bytes as JSON; the limit is %d", len(out), MaxMetadataBytes)
		return nil, nil
	}
	return maps.Clone(m), out
}

// withMetadata returns the fingerprint of an intent whose fingerprint
// without its metadata is fp and whose canonical metadata JSON is meta:
// fp itself when there is none, so that an intent without metadata keeps
// the fingerprint it always had; else the hex SHA-256 of fp and meta, so
// that the same key resent with other metadata is a conflict.
func withMetadata(fp string, meta []byte) string {
	if meta == nil {
		return fp
	}
	h := sha256.New()
	h.Write([]byte("herald metadata\x00"))
	h.Write([]byte(fp))
	h.Write([]byte{0})
	h.Write(meta)
	return hex.EncodeToString(h.Sum(nil))
}

// DecodeMetadata decodes records.metadata (NULL: nil) into the map it
// holds.
func DecodeMetadata(raw []byte) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// metadata returns DecodeRaw's field function for metadata: an object of
// strings (null means none), each member decoded as a string field is.
// A key given twice is refused as any repeated field is. It stops at
// MaxMetadataKeys+1 members, which Validate refuses anyway, so
// that a hostile entry cannot make it list thousands of errors.
func (d *rawDecoder) metadata(dst *map[string]string) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if isNull(raw) {
			return
		}
		if kind := jsonKind(raw); kind != "object" {
			d.errs.add(path, heraldtype.CodeWrongShape, "must be an object of strings, not %s", kind)
			return
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		if _, err := dec.Token(); err != nil { // '{'
			d.errs.add(path, heraldtype.CodeNotJSON, "%v", err)
			return
		}
		m := map[string]string{}
		ok := true
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				d.errs.add(path, heraldtype.CodeNotJSON, "%v", err)
				return
			}
			k, _ := tok.(string)
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				d.errs.add(path, heraldtype.CodeNotJSON, "%v", err)
				return
			}
			if len(m) == MaxMetadataKeys {
				d.errs.add(path, heraldtype.CodeInvalidField, "metadata has more than %d keys", MaxMetadataKeys)
				return
			}
			field := joinPath(path, k)
			if _, dup := m[k]; dup {
				d.errs.add(field, heraldtype.CodeWrongShape, "field appears twice")
				ok = false
				continue
			}
			if kind := jsonKind(v); kind != "string" {
				d.errs.add(field, heraldtype.CodeWrongShape, "must be a string, not %s", kind)
				ok = false
				m[k] = ""
				continue
			}
			s, good := d.decodeString(field, v)
			ok = ok && good
			m[k] = s
		}
		if ok {
			*dst = m
		}
	}
}
