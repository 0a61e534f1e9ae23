package channel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckPolicy_NamesTheSettingAsTheFileDoes(t *testing.T) {
	t.Parallel()
	s := time.Second
	require.NoError(t, CheckPolicy(0, 0, 0, 0, 0, 0), "zero values take the defaults")
	require.NoError(t, CheckPolicy(MaxConcurrency, 1, 5*s, 6*s, s, 10*s))
	for _, c := range []struct {
		conc, attempts         int
		timeout, lease, b, cap time.Duration
		want                   string
	}{
		{conc: -1, want: "concurrency: must be between 1 and 10000"},
		{conc: MaxConcurrency + 1, want: "concurrency: must be between 1 and 10000"},
		{attempts: -1, want: "max_attempts: must be at least 1"},
		{timeout: -s, want: "timeout: must not be negative"},
		{lease: -s, want: "lease: must not be negative"},
		{lease: DefaultTimeout, want: "lease: 30s must exceed timeout 30s"},
		{timeout: 10 * s, lease: 10 * s, want: "lease: 10s must exceed timeout 10s"},
		{b: -s, want: "backoff: durations must not be negative"},
		{b: 2 * s, cap: s, want: "backoff.cap: must not be below backoff.base"},
	} {
		require.EqualError(t, CheckPolicy(c.conc, c.attempts, c.timeout, c.lease, c.b, c.cap), c.want)
	}
}
