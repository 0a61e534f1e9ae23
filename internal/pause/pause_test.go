package pause

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFor_WaitsUnlessContextEnds(t *testing.T) {
	t.Parallel()
	require.NoError(t, For(context.Background(), time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, For(ctx, time.Hour), context.Canceled, "an ended context returns at once, not after the hour")
}
