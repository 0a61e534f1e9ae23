package api

import (
	"container/list"
	"crypto/sha256"
	"math"
	"net/netip"
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

// allowKnown takes one token of key's bucket, when key has one (it has
// once it authenticated: see taken). When there is none it returns false
// and how long until there is. A key without a bucket is allowed, and
// known is false: the caller calls taken once the key authenticated, so
// that keys nobody holds never get a bucket.
func (l *limiter) allowKnown(key [sha256.Size]byte, now time.Time) (ok bool, wait time.Duration, known bool) {
	if l == nil {
		return true, 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[key]
	if b == nil {
		return true, 0, false
	}
	return b.take(now)
}

// taken makes key's bucket, if it has none, and takes one token of it
// (none when it is empty).
func (l *limiter) taken(key [sha256.Size]byte, now time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{l: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
	}
	b.take(now)
}

// state returns where key's bucket stands: full when it has none.
func (l *limiter) state(key [sha256.Size]byte, now time.Time) rateState {
	l.mu.Lock()
	defer l.mu.Unlock()
	tokens := float64(l.burst)
	if b := l.buckets[key]; b != nil {
		tokens = b.l.TokensAt(now)
	}
	return bucketState(keyPolicy, l.rate, l.burst, tokens)
}

// sweep drops the buckets idle for limiterIdle, every limiterIdle.
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.swept) <= limiterIdle {
		return
	}
	for k, b := range l.buckets {
		if now.Sub(b.last) > limiterIdle {
			delete(l.buckets, k)
		}
	}
	l.swept = now
}

func (b *bucket) take(now time.Time) (bool, time.Duration, bool) {
	b.last = now
	res := b.l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d, true
	}
	return true, 0, true
}

// authGuard limits failed authentications per client address: a token
// bucket for each address that failed, at most size of them (the least
// recently failed is forgotten first), so that memory stays bounded
// however many addresses a client uses.
type authGuard struct {
	rate  rate.Limit
	burst int
	size  int

	mu    sync.Mutex
	order *list.List // of *guardEntry, the most recent failure first
	addrs map[netip.Prefix]*list.Element
}

type guardEntry struct {
	addr netip.Prefix
	l    *rate.Limiter
}

func newAuthGuard(perSecond float64, burst, size int) *authGuard {
	return &authGuard{rate: rate.Limit(perSecond), burst: burst, size: size, order: list.New(),
		addrs: map[netip.Prefix]*list.Element{}}
}

// clientAddr returns the client address of a request's RemoteAddr: the IP
// address, or its /64 for IPv6 (one subscriber's usual allocation). An
// address it cannot parse is the zero prefix, one bucket for all such.
func clientAddr(remoteAddr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// blocked reports whether addr has used up its failed authentications,
// and how long until it has one again. It changes nothing.
func (g *authGuard) blocked(addr netip.Prefix, now time.Time) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.addrs[addr]
	if e == nil {
		return false, 0
	}
	tokens := e.Value.(*guardEntry).l.TokensAt(now)
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - tokens) / float64(g.rate) * float64(time.Second))
}

// state returns where addr's bucket of failed authentications stands:
// full when it has none.
func (g *authGuard) state(addr netip.Prefix, now time.Time) rateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	tokens := float64(g.burst)
	if e := g.addrs[addr]; e != nil {
		tokens = e.Value.(*guardEntry).l.TokensAt(now)
	}
	return bucketState(authFailurePolicy, g.rate, g.burst, tokens)
}

// failed counts one failed authentication of addr.
func (g *authGuard) failed(addr netip.Prefix, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.addrs[addr]
	if e == nil {
		if g.order.Len() >= g.size {
			oldest := g.order.Back()
			g.order.Remove(oldest)
			delete(g.addrs, oldest.Value.(*guardEntry).addr)
		}
		e = g.order.PushFront(&guardEntry{addr: addr, l: rate.NewLimiter(g.rate, g.burst)})
		g.addrs[addr] = e
	} else {
		g.order.MoveToFront(e)
	}
	e.Value.(*guardEntry).l.AllowN(now, 1)
}

// tracked returns how many addresses g holds a bucket for.
func (g *authGuard) tracked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.order.Len()
}
