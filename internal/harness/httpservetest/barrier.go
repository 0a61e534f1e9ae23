package httpservetest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Barrier is a loopback HTTP server that counts the connections it
// accepts and answers no request of a round of N until all N arrived, so
// that the N are in flight at once, each on its own connection: what a
// test of a client's connection pool needs to see whether a round's
// connections serve the next.
type Barrier struct {
	*httptest.Server
	n       int
	mu      sync.Mutex
	arrived int
	release chan struct{}
	conns   int
}

// NewBarrier starts a Barrier for rounds of n requests, each answered by
// answer once its round is complete; it closes when the test ends.
func NewBarrier(t testing.TB, n int, answer func(http.ResponseWriter)) *Barrier {
	t.Helper()
	b := &Barrier{n: n, release: make(chan struct{})}
	b.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b.mu.Lock()
		release := b.release
		if b.arrived++; b.arrived%b.n == 0 {
			close(b.release)
			b.release = make(chan struct{})
		}
		b.mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		answer(w)
	}))
	b.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			b.mu.Lock()
			b.conns++
			b.mu.Unlock()
		}
	}
	b.Start()
	t.Cleanup(b.Close)
	return b
}

// Accepted is how many connections the server has accepted.
func (b *Barrier) Accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns
}

// RequireConnectionsKept runs two batches of the Barrier's n calls of
// deliver (i from 0 to n-1) at once and fails the test unless the first
// batch opened n connections and the second opened none.
func (b *Barrier) RequireConnectionsKept(t testing.TB, deliver func(i int)) {
	t.Helper()
	batch := func() {
		var wg sync.WaitGroup
		for i := range b.n {
			wg.Go(func() { deliver(i) })
		}
		wg.Wait()
	}
	batch()
	if got := b.Accepted(); got != b.n {
		t.Fatalf("the first batch's connections: %d, want %d", got, b.n)
	}
	batch()
	if got := b.Accepted(); got != b.n {
		t.Fatalf("connections after the second batch: %d, want %d", got, b.n)
	}
}
