package console

import (
	"sync"

	"golang.org/x/time/rate"
)

// maxTracked bounds the client addresses the sign-in limiter remembers;
// past it, it forgets them all (an attacker spreading over more addresses
// than this gains a burst each, no more).
const maxTracked = 10_000

// limiter limits sign-in attempts per client address.
type limiter struct {
	rate  rate.Limit
	burst int

	mu     sync.Mutex
	byAddr map[string]*rate.Limiter
}

func newLimiter(perSecond float64, burst int) *limiter {
	return &limiter{rate: rate.Limit(perSecond), burst: burst, byAddr: map[string]*rate.Limiter{}}
}

// allow reports whether addr may try to sign in now.
func (l *limiter) allow(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.byAddr[addr]
	if lim == nil {
		if len(l.byAddr) >= maxTracked {
			l.byAddr = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(l.rate, l.burst)
		l.byAddr[addr] = lim
	}
	return lim.Allow()
}
