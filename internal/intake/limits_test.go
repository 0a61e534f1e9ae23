package intake

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimits_WithDefaultsFillsUnset(t *testing.T) {
	t.Parallel()

	require.Equal(t, Limits{
		MaxPayloadBytes:  64 << 10,
		MaxEntryBytes:    256 << 10,
		MaxSMSSegments:   10,
		MaxScheduleAhead: 90 * 24 * time.Hour,
		MaxRoutes:        1000,
	}, Limits{}.WithDefaults())

	custom := Limits{MaxPayloadBytes: 1, MaxEntryBytes: 2, MaxSMSSegments: 3, MaxScheduleAhead: time.Minute, MaxRoutes: 5}
	require.Equal(t, custom, custom.WithDefaults())
	require.Equal(t, Limits{}.WithDefaults(), Limits{MaxRoutes: -1, MaxScheduleAhead: -time.Hour}.WithDefaults())
}
