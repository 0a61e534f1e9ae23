package store

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// statementText returns a query's SQL without its comments and with its
// whitespace collapsed: the statement Postgres runs.
func statementText(q string) string {
	q = regexp.MustCompile(`--[^\n]*`).ReplaceAllString(q, "")
	return strings.Join(strings.Fields(q), " ")
}

// RecordInsertManyFresh is RecordInsertMany without ON CONFLICT, and
// internal/accept runs either with the same arguments and reads either's
// rows the same: a change to one statement must be made to both.
func TestRecordInsertManyFreshIsRecordInsertManyWithoutOnConflict(t *testing.T) {
	t.Parallel()
	const onConflict = " ON CONFLICT (producer, idempotency_key) DO NOTHING"
	withIt := statementText(recordInsertMany)
	require.Equal(t, 1, strings.Count(withIt, onConflict))
	require.Equal(t, strings.Replace(withIt, onConflict, "", 1), statementText(recordInsertManyFresh))
	require.NotContains(t, statementText(recordInsertManyFresh), "ON CONFLICT")
}
