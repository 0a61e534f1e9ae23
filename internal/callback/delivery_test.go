package callback

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

func TestOrderWait_WaitsForTheEarlierCallbackWithinBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		earlier    float64
		orderRetry time.Duration
		want       time.Duration
	}{
		{"EarlierBeingDeliveredWaitsOrderRetry", 0, time.Second, time.Second},
		{"EarlierDueSoonWaitsOrderRetry", 0.2, time.Second, time.Second},
		{"EarlierDueLaterWaitsForItAndHalfOrderRetry", 10, time.Second, 10*time.Second + 500*time.Millisecond},
		{"NeverMoreThanAMinute", 3600, time.Second, time.Minute},
		{"ALongOrderRetryIsKept", 0, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, orderWait(tt.earlier, tt.orderRetry))
		})
	}
}

func TestEndpointRefused_HintsOnlyPermanentOutcomes(t *testing.T) {
	t.Parallel()
	out := EndpointRefused(channel.Outcome{Class: channel.Permanent, Classification: "http_404"})
	require.Equal(t, HintEndpoint+" (http_404)", out.RecoveryHint)
	out = EndpointRefused(channel.Outcome{Class: channel.Transient, Classification: "http_503"})
	require.Empty(t, out.RecoveryHint)
	out = BadSecret(errors.New("secret must start with whsec_"))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, ClassBadSecret, out.Classification)
	require.Contains(t, out.Message, "secret must start with whsec_")
	require.Equal(t, HintBadSecret, out.RecoveryHint)
}

// A callback whose record retention removed ends at once: there is
// nothing to post and nothing to replay.
func TestPrepare_ACallbackWhoseRecordIsGoneIsPermanent(t *testing.T) {
	t.Parallel()
	pool := pgtemp.NewPool(t)
	_, out, ok := Prepare(context.Background(), pool,
		&channel.Message{NotificationID: "01970000-0000-7000-8000-000000000000", RouteID: "callback:x"}, time.Second)
	require.False(t, ok)
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, ClassLookup, out.Classification)
	require.Equal(t, HintGone, out.RecoveryHint)
}
