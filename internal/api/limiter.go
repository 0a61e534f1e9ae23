package api

import (
	"crypto/sha256"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiterIdle is how long a key's bucket is kept without requests.
const limiterIdle = 10 * time.Minute

// limiter holds one token bucket per API key (by the key's SHA-256, so
// that no raw key stays in memory longer than its request).
type limiter struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[[sha256.Size]byte]*bucket
	swept   time.Time
}

type bucket struct {
	l    *rate.Limiter
	last time.Time
}

// newLimiter returns a limiter of perSecond requests per key with bursts of
// burst (default one second's worth); nil, which allows everything, when
// perSecond is 0.
func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	return &limiter{rate: rate.Limit(perSecond), burst: burst, buckets: map[[sha256.Size]byte]*bucket{}}
}

// allow takes one token of key's bucket. When there is none it returns
// false and how long until there is.
func (l *limiter) allow(key [sha256.Size]byte, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > limiterIdle {
		for k, b := range l.buckets {
			if now.Sub(b.last) > limiterIdle {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{l: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
	}
	b.last = now
	res := b.l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}
