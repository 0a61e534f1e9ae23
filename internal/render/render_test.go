package render

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
)

func TestMalformedPage_AlignsAndNamesNextPage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		page *operator.MalformedPage
		want string
	}{
		{"Empty", &operator.MalformedPage{}, "no malformed intents\n"},
		{"LastPage", &operator.MalformedPage{Malformed: []operator.Malformed{
			{EntryRef: "intake:1", FailureCode: "not_json", FailureMessage: "not\nJSON"},
		}}, "RECORDED  ID        CODE      PRODUCER  TYPE  MESSAGE\n" +
			"-         intake:1  not_json  -         -     not JSON\n"},
		{"MorePages", &operator.MalformedPage{Malformed: []operator.Malformed{{EntryRef: "intake:2"}}, Next: "abc"},
			"RECORDED  ID        CODE  PRODUCER  TYPE  MESSAGE\n" +
				"-         intake:2        -         -     \n" +
				"\nmore: herald malformed list --after abc (same filters)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			require.NoError(t, MalformedPage(&b, tt.page))
			require.Equal(t, tt.want, b.String())
		})
	}
}

func TestCells_OneLineUTCDashForNothing(t *testing.T) {
	t.Parallel()
	require.Equal(t, "-", stamp(time.Time{}))
	require.Equal(t, "-", stampPtr(nil))
	at := time.Date(2025, 1, 2, 4, 4, 5, 0, time.FixedZone("", 3600))
	require.Equal(t, "2025-01-02 03:04:05Z", stamp(at))
	require.Equal(t, "a b c", clip("a\n b\tc", 10))
	require.Equal(t, "abcd…", clip("abcdefgh", 5))
	require.Equal(t, "-", dash(""))
	require.Equal(t, "x", dash("x"))
}
