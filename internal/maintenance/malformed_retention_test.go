package maintenance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
)

func TestDeleteMalformed_DeletesOnlyOld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i, at := range []time.Time{t0, t0.Add(day), t0.Add(20 * day), t0.Add(29 * day)} {
		_, err := b.pool.Exec(ctx, `
			INSERT INTO herald.malformed_intents (stream_entry_id, failure_code, failure_message, raw_fields, recorded_at)
			VALUES ($1, 'invalid_json', 'body is not JSON', '{}', $2)`, fmt.Sprintf("intake:%d", i), at)
		require.NoError(t, err)
	}
	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{MalformedRetention: 7 * day, BatchSize: 1})
	n, err := m.DeleteMalformed(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Equal(t, 1, b.count(t, "malformed_intents"), "the one recorded a day ago is kept")
}
