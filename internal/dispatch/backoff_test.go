package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff_GrowsUnderCapWithJitter(t *testing.T) {
	t.Parallel()
	top := (&BackoffConfig{Base: time.Second, Cap: 10 * time.Second, RandFunc: func() float64 { return 1 }}).withDefaults()
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		require.Equal(t, want, top.Delay(attempt, 0), "attempt %d", attempt)
	}
	half := (&BackoffConfig{Base: time.Second, Cap: 10 * time.Second, RandFunc: func() float64 { return .5 }}).withDefaults()
	require.Equal(t, 2*time.Second, half.Delay(3, 0))
	zero := (&BackoffConfig{Base: time.Second, RandFunc: func() float64 { return 0 }}).withDefaults()
	require.Zero(t, zero.Delay(3, 0))
}

func TestBackoff_RetryAfterIsAFloor(t *testing.T) {
	t.Parallel()
	b := (&BackoffConfig{Base: time.Second, RandFunc: func() float64 { return 0 }}).withDefaults()
	require.Equal(t, 30*time.Second, b.Delay(1, 30*time.Second))
	b = (&BackoffConfig{Base: time.Minute, RandFunc: func() float64 { return 1 }}).withDefaults()
	require.Equal(t, time.Minute, b.Delay(1, time.Second))
}

func TestBackoff_DefaultsStayUnderCeiling(t *testing.T) {
	t.Parallel()
	b := (&BackoffConfig{}).withDefaults()
	for range 1000 {
		d := b.Delay(3, 0)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, 4*time.Second)
	}
}
