// Package pgarray makes pgx encode a Go []string as a binary text[]
// parameter in one pass. herald's batch statements (accepting a thousand
// intents, completing a batch of routes) pass their columns as arrays,
// and pgx's generic array path boxes each element into an interface,
// plans it, and grows its buffer a little at a time: the accept
// statement's arrays took about a tenth of the bench process's CPU.
//
// Register wraps the text[] codec of a connection's type map; the bytes
// sent are the ones pgx's own codec sends (the tests compare them), and
// every other value, format and decoding is left to that codec.
package pgarray

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
)

// Register makes m encode a []string parameter of type text[] in the
// binary format itself (encodeStrings). It does nothing when it has
// already, or when m's text[] codec is not pgx's array codec.
func Register(m *pgtype.Map) {
	t, ok := m.TypeForOID(pgtype.TextArrayOID)
	if !ok {
		return
	}
	switch c := t.Codec.(type) {
	case *textArrayCodec:
	case *pgtype.ArrayCodec:
		if c.ElementType == nil {
			return
		}
		m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: &textArrayCodec{Codec: c, elementOID: c.ElementType.OID}})
	}
}

// Registered reports whether Register has wrapped m's text[] codec.
func Registered(m *pgtype.Map) bool {
	t, ok := m.TypeForOID(pgtype.TextArrayOID)
	if !ok {
		return false
	}
	_, ok = t.Codec.(*textArrayCodec)
	return ok
}

// textArrayCodec is the text[] codec that Register installs: the map's
// own, except for a []string encoded in the binary format.
type textArrayCodec struct {
	pgtype.Codec
	elementOID uint32
}

// PlanEncode implements pgtype.Codec.
func (c *textArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	// Only for a text[] parameter: pgx also asks this codec, found by the
	// value's Go type, about a []string for other types (the elements of
	// a [][]string, as text), which its own refuses.
	if _, ok := value.([]string); ok && format == pgtype.BinaryFormatCode && oid == pgtype.TextArrayOID {
		return encodeStrings{elementOID: c.elementOID}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

// encodeStrings encodes a []string as a one-dimensional binary array of
// the element type elementOID, as pgx's ArrayCodec does: nil is NULL, an
// empty slice an array of one dimension of length 0; no element is NULL.
type encodeStrings struct{ elementOID uint32 }

// errTooLong is returned for an array or an element longer than the
// binary format's 32-bit lengths can say.
var errTooLong = errors.New("text[] parameter: more than 2^31-1 elements or bytes in an element")

// Encode implements pgtype.EncodePlan.
func (p encodeStrings) Encode(value any, buf []byte) ([]byte, error) {
	ss := value.([]string)
	if ss == nil {
		return nil, nil
	}
	if len(ss) > math.MaxInt32 {
		return nil, errTooLong
	}
	// Header: dimensions, has-nulls flag, element type, then the one
	// dimension's length and lower bound; each element its length and
	// bytes.
	size := 20 + 4*len(ss)
	for _, s := range ss {
		if len(s) > math.MaxInt32 {
			return nil, errTooLong
		}
		size += len(s)
	}
	// At most one growth for the whole array, to at least double the
	// buffer, so that the parameters after it fit too (pgx appends every
	// parameter of a statement to one buffer).
	if cap(buf)-len(buf) < size {
		buf = slices.Grow(buf, max(size, cap(buf)))
	}
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint32(buf, 0)
	buf = binary.BigEndian.AppendUint32(buf, p.elementOID)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(ss)))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	for _, s := range ss {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	return buf, nil
}
