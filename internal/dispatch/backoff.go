package dispatch

import (
	"math/rand/v2"
	"time"
)

// BackoffConfig is one channel's retry policy after a transient failure:
// exponential growth from Base, capped at Cap, with full jitter (the delay is
// drawn uniformly between zero and the exponential ceiling), so the retries
// of a burst that failed together spread out instead of hammering the
// channel again in lock-step. A channel's Retry-After is a floor.
type BackoffConfig struct {
	// Base is the ceiling of the first retry's delay. Default 1s.
	Base time.Duration
	// Cap bounds every delay's ceiling. Default 10m.
	Cap time.Duration
	// RandFunc returns a number in [0, 1) that places the delay under the
	// ceiling. Default math/rand/v2's Float64; tests return a constant.
	RandFunc func() float64
}

func (b *BackoffConfig) withDefaults() BackoffConfig {
	out := *b
	if out.Base <= 0 {
		out.Base = time.Second
	}
	if out.Cap <= 0 {
		out.Cap = 10 * time.Minute
	}
	if out.Cap < out.Base {
		out.Cap = out.Base
	}
	if out.RandFunc == nil {
		out.RandFunc = rand.Float64
	}
	return out
}

// Delay returns how long to wait before the attempt after attempt (1-based)
// failed transiently: uniform in [0, min(Cap, Base·2^(attempt-1))], and
// never less than retryAfter. b must have its defaults applied.
func (b *BackoffConfig) Delay(attempt int, retryAfter time.Duration) time.Duration {
	ceiling := b.Base
	for i := 1; i < attempt && ceiling < b.Cap; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, b.Cap)
	r := b.RandFunc()
	r = min(max(r, 0), 1)
	d := time.Duration(r * float64(ceiling))
	return max(d, retryAfter)
}
