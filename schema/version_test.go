package schema_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/schema"
)

func TestCheckVersion_SaysBehindOrAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	latest := schema.LatestVersion()

	pool := pgtemp.NewPool(t)
	require.NoError(t, schema.CheckVersion(ctx, pool))

	_, err := pool.Exec(ctx, `INSERT INTO herald.goose_db_version (version_id, is_applied) VALUES ($1, true)`, latest+1)
	require.NoError(t, err)
	var ve *schema.VersionError
	require.ErrorAs(t, schema.CheckVersion(ctx, pool), &ve)
	require.Equal(t, schema.VersionError{Have: latest + 1, Want: latest}, *ve)
	require.True(t, ve.Ahead())
	require.EqualError(t, ve, fmt.Sprintf("binary older than schema: the database is at version %d, this herald knows %d: upgrade herald", latest+1, latest))

	require.ErrorAs(t, schema.CheckVersion(ctx, emptyPool(t)), &ve)
	require.Equal(t, schema.VersionError{Have: 0, Want: latest}, *ve)
	require.False(t, ve.Ahead())
	require.EqualError(t, ve, fmt.Sprintf("schema at version 0 of %d: run herald migrate up", latest))
}
