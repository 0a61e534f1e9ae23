package pgarray

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// hostile are element lists that a text[] parameter may carry: empty,
// NULL-looking, quoting, braces, NUL-free control characters, invalid
// UTF-8 (the server refuses that, as it does pgx's own bytes), long.
var hostile = map[string][]string{
	"Nil":          nil,
	"Empty":        {},
	"OneEmpty":     {""},
	"Several":      {"a", "", "bc", "a"},
	"NullWord":     {"NULL", "null", `"NULL"`},
	"Syntax":       {`{`, `}`, `,`, `"`, `\`, `{"a","b"}`, " lead", "trail ", "\t\n\r"},
	"Unicode":      {"é", "日本", "\U0001F600", "\u2028"},
	"InvalidUTF8":  {"\xff\xfe", "a\x80b"},
	"Huge":         {strings.Repeat("x", 1<<20), "y"},
	"ManyElements": manyElements(100_000),
}

func manyElements(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strings.Repeat("k", i%40)
	}
	return out
}

// encodeWith encodes ss as a binary text[] parameter with m, after prefix
// (what pgx's buffer holds of the statement's earlier parameters).
func encodeWith(t testing.TB, m *pgtype.Map, ss []string, prefix []byte) []byte {
	t.Helper()
	buf, err := m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, ss, prefix)
	require.NoError(t, err)
	return buf
}

func registered(t testing.TB) *pgtype.Map {
	t.Helper()
	m := pgtype.NewMap()
	Register(m)
	require.True(t, Registered(m))
	return m
}

// TestEncode_SameBytesAsPgx: a []string encodes to the bytes pgx's own
// array codec writes, after whatever the buffer held, and nil to NULL.
func TestEncode_SameBytesAsPgx(t *testing.T) {
	t.Parallel()
	for name, ss := range hostile {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, prefix := range [][]byte{nil, {}, []byte("earlier parameters")} {
				want := encodeWith(t, pgtype.NewMap(), ss, append([]byte(nil), prefix...))
				got := encodeWith(t, registered(t), ss, append([]byte(nil), prefix...))
				require.Equal(t, want, got)
				if ss == nil {
					require.Nil(t, got, "nil is NULL")
				}
			}
		})
	}
}

// TestEncode_OthersLeftToPgx: only a []string in the binary format takes
// the fast path; the text format, other slice types and decoding are
// pgx's own.
func TestEncode_OthersLeftToPgx(t *testing.T) {
	t.Parallel()
	m, ref := registered(t), pgtype.NewMap()
	type names []string
	s := "b"
	for _, v := range []any{names{"a", "b"}, []*string{&s, nil}, []pgtype.Text{{String: "a", Valid: true}, {}},
		[][]string{{"a"}, {"b"}}, []int{1}} {
		want, wantErr := ref.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, v, nil)
		got, err := m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, v, nil)
		require.Equal(t, wantErr == nil, err == nil, "%T: error %v, pgx's %v", v, err, wantErr)
		require.Equal(t, want, got, "%T", v)
	}
	want, err := ref.Encode(pgtype.TextArrayOID, pgtype.TextFormatCode, []string{"a", `"b"`}, nil)
	require.NoError(t, err)
	got, err := m.Encode(pgtype.TextArrayOID, pgtype.TextFormatCode, []string{"a", `"b"`}, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)

	var back []string
	require.NoError(t, m.Scan(pgtype.TextArrayOID, pgtype.BinaryFormatCode, encodeWith(t, m, hostile["Syntax"], nil), &back))
	require.Equal(t, hostile["Syntax"], back)
}

// TestRegister_Idempotent: registering again does not wrap twice.
func TestRegister_Idempotent(t *testing.T) {
	t.Parallel()
	m := registered(t)
	Register(m)
	typ, ok := m.TypeForOID(pgtype.TextArrayOID)
	require.True(t, ok)
	c, ok := typ.Codec.(*textArrayCodec)
	require.True(t, ok)
	_, ok = c.Codec.(*pgtype.ArrayCodec)
	require.True(t, ok, "the wrapped codec is pgx's, not another wrapper")
	require.False(t, Registered(pgtype.NewMap()))
}

// TestEncode_RoundTripsThroughPostgres: what the server makes of the
// parameter is the array sent, element for element; nil is NULL and
// empty an empty array.
func TestEncode_RoundTripsThroughPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	Register(conn.Conn().TypeMap())
	for name, ss := range hostile {
		if name == "InvalidUTF8" {
			var n int
			err := conn.QueryRow(ctx, "select cardinality($1::text[])", ss).Scan(&n)
			require.Error(t, err, "the server refuses text that is not UTF-8")
			continue
		}
		var back []string
		var isNull bool
		var n *int
		require.NoError(t, conn.QueryRow(ctx, "select $1::text[], $1::text[] is null, cardinality($1::text[])", ss).
			Scan(&back, &isNull, &n), name)
		require.Equal(t, ss == nil, isNull, name)
		if ss != nil {
			require.Equal(t, len(ss), *n, name)
			require.Equal(t, ss, back, name)
		}
	}
}

// FuzzEncode checks the encoding against pgx's own for lists cut from
// the fuzzer's input at each NUL (or nil).
func FuzzEncode(f *testing.F) {
	f.Add("a\x00b\x00", false)
	f.Add("", false)
	f.Add("", true)
	f.Add("{\"x\"}\\,NULL", false)
	m, ref := registered(f), pgtype.NewMap()
	f.Fuzz(func(t *testing.T, s string, asNil bool) {
		var ss []string
		if !asNil {
			ss = strings.Split(s, "\x00")
		}
		want := encodeWith(t, ref, ss, []byte("p"))
		got := encodeWith(t, m, ss, []byte("p"))
		require.Equal(t, want, got)
	})
}

// BenchmarkEncode compares pgx's array codec with encodeStrings on a
// thousand elements of the accept statement's sizes.
//
//	go test -run '^$' -bench Encode ./internal/pgarray
func BenchmarkEncode(b *testing.B) {
	ss := make([]string, 1000)
	for i := range ss {
		ss[i] = "0193b2c4-7d2e-7c1a-9f3e-" + strings.Repeat("0", 12)
	}
	for _, side := range []struct {
		name string
		m    *pgtype.Map
	}{{"pgx", pgtype.NewMap()}, {"pgarray", registered(b)}} {
		b.Run(side.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := side.m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, ss, make([]byte, 0, 256)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEncode_GrowsTheBufferGeometrically: the parameters of a statement
// share one buffer; an array grows it only when it does not fit, and
// then to at least double, so that a statement of many arrays copies its
// buffer a few times and holds at most about twice what it needs.
func TestEncode_GrowsTheBufferGeometrically(t *testing.T) {
	t.Parallel()
	m := registered(t)
	ss := manyElements(1000)
	buf := make([]byte, 0, 256)
	grew := 0
	for range 30 {
		before := cap(buf)
		buf = encodeWith(t, m, ss, buf)
		if cap(buf) != before {
			grew++
		}
	}
	require.LessOrEqual(t, cap(buf), 3*len(buf), "capacity %d for %d bytes", cap(buf), len(buf))
	require.LessOrEqual(t, grew, 8, "grew %d times for 30 arrays", grew)
}
