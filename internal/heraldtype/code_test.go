package heraldtype

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidationError_ElidesLongTail(t *testing.T) {
	t.Parallel()

	two := &ValidationError{Errors: []FieldError{
		{Field: "producer", Code: CodeMissingField, Message: "producer is required"},
		{Code: CodeTooLarge, Message: "entry is too big"},
	}}
	require.Equal(t, "invalid intent: producer: producer is required (missing_field); entry is too big (too_large)", two.Error())
	require.Equal(t, CodeMissingField, two.Code())

	var many ValidationError
	for i := range 25 {
		many.Errors = append(many.Errors, FieldError{Field: fmt.Sprintf("audience.sms[%d]", i), Code: CodeInvalidPhone, Message: "bad"})
	}
	msg := many.Error()
	require.Contains(t, msg, "audience.sms[19]")
	require.NotContains(t, msg, "audience.sms[20]")
	require.True(t, strings.HasSuffix(msg, "; and 5 more"), msg)

	require.Empty(t, (&ValidationError{}).Code())
}

func TestCodes_ListsEveryCodeOnce(t *testing.T) {
	t.Parallel()

	codes := Codes()
	require.Len(t, codes, 21)
	seen := map[Code]bool{}
	for _, c := range codes {
		require.False(t, seen[c], "code %s listed twice", c)
		seen[c] = true
		require.Regexp(t, `^[a-z]+(_[a-z]+)*$`, c)
	}
	require.True(t, seen[CodeIdempotencyConflict])
}

func TestPriority_NumberAndPriorityOfAreInverse(t *testing.T) {
	t.Parallel()
	for _, p := range []Priority{PriorityTransactional, PriorityBulk} {
		n, ok := p.Number()
		require.True(t, ok)
		require.Equal(t, p, PriorityOf(n))
	}
	n, ok := Priority("").Number()
	require.True(t, ok)
	require.Equal(t, PriorityTransactional, PriorityOf(n))
	_, ok = Priority("urgent").Number()
	require.False(t, ok)
}
