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

// RecordInsertManyFresh is RecordInsertMany without ON CONFLICT (and so
// without joining the records to the keys it inserted: every key is the
// statement's own or it fails whole), and internal/accept runs either with
// the same arguments and reads either's rows the same: a change to one
// statement must be made to both.
func TestRecordInsertManyFresh_IsManyWithoutOnConflict(t *testing.T) {
	t.Parallel()
	withIt := statementText(recordInsertMany)
	fresh := withIt
	for _, part := range []string{
		" ON CONFLICT (producer, idempotency_key) DO NOTHING RETURNING k.notification_id",
		" WHERE notification_id IN (SELECT notification_id FROM keys_ins)",
	} {
		require.Equal(t, 1, strings.Count(withIt, part), part)
		fresh = strings.Replace(fresh, part, "", 1)
	}
	require.Equal(t, fresh, statementText(recordInsertManyFresh))
	require.NotContains(t, statementText(recordInsertManyFresh), "ON CONFLICT")
}
