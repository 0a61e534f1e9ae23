package dispatch

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// gatedSink is a loopback webhook receiver whose paths under /hold/ answer
// only when the test opens their gate, and say when their request came;
// every other path answers 200 at once.
type gatedSink struct {
	*httptest.Server
	mu      sync.Mutex
	gates   map[string]chan struct{}
	arrived map[string]chan struct{}
	hits    map[string]int
}

func newGatedSink(t *testing.T, held ...string) *gatedSink {
	t.Helper()
	s := &gatedSink{gates: map[string]chan struct{}{}, arrived: map[string]chan struct{}{}, hits: map[string]int{}}
	for _, h := range held {
		s.gates[h] = make(chan struct{})
		s.arrived[h] = make(chan struct{}, 1)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/hold/")
		s.mu.Lock()
		s.hits[r.URL.Path]++
		gate, arrived := s.gates[name], s.arrived[name]
		s.mu.Unlock()
		if gate != nil {
			select {
			case arrived <- struct{}{}:
			default:
			}
			<-gate
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() {
		s.mu.Lock()
		for name, g := range s.gates {
			close(g)
			delete(s.gates, name)
		}
		s.mu.Unlock()
		s.Close()
	})
	return s
}

func (s *gatedSink) open(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gates[name])
	delete(s.gates, name)
}

func (s *gatedSink) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// waitArrived waits until the held path's request has come.
func (s *gatedSink) waitArrived(t *testing.T, name string) {
	t.Helper()
	select {
	case <-s.arrived[name]:
	case <-time.After(15 * time.Second):
		require.FailNow(t, "no delivery came", name)
	}
}

// lockWaiters counts the sessions of the test's database waiting for a
// lock: the dispatcher's completions waiting for a producer's rows.
func lockWaiters(t *testing.T, b *testBundle) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
	return n
}

// A producer that cancels its own notifications in transactions it keeps
// open, while their routes are being delivered, holds up only those routes'
// completions: both completer workers, each stopped a lock_timeout by one
// of them, go on to write another producer's completions; the held ones
// are logged with the login and pid of the producer holding them, and written once the producer lets go, the
// committed cancel's route staying canceled and the rolled-back one's
// published, each delivered once.
func TestComplete_OpenCancelDelaysOwnOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	nameA, asA := pgtemp.Login(t, b.pool, "prod_a", "herald_producer")
	nameB, _ := pgtemp.Login(t, b.pool, "prod_b", "herald_producer")
	s := newGatedSink(t, "a1", "a2")
	var logs syncBuffer
	b.start(t, &Config{
		Channels:    map[string]ChannelConfig{channel.Webhook: {Deliverer: webhookDeliverer(t)}},
		LockTimeout: 3 * time.Second,
		Logger:      slog.New(slog.NewJSONHandler(&logs, nil)),
	})

	a := b.insert(t,
		routeSpec{channel: channel.Webhook, ref: s.URL + "/hold/a1", producer: nameA},
		routeSpec{channel: channel.Webhook, ref: s.URL + "/hold/a2", producer: nameA})
	s.waitArrived(t, "a1")
	s.waitArrived(t, "a2")

	// A cancels each notification in a transaction of its own, kept open:
	// it holds the claimed routes' rows.
	tx1, err := asA.Begin(ctx)
	require.NoError(t, err)
	defer tx1.Rollback(context.Background())
	tx2, err := asA.Begin(ctx)
	require.NoError(t, err)
	defer tx2.Rollback(context.Background())
	var n int
	require.NoError(t, tx1.QueryRow(ctx, `SELECT count(*) FROM herald.notification_cancel($1, 'svc-a', 'changed its mind')`, a[0].notificationID).Scan(&n))
	require.Equal(t, 1, n, "the route in flight is canceled")
	require.NoError(t, tx2.QueryRow(ctx, `SELECT count(*) FROM herald.notification_cancel($1, 'svc-a', 'changed its mind')`, a[1].notificationID).Scan(&n))
	require.Equal(t, 1, n)

	// Each delivery ends in turn; each completion waits for A's row, one
	// per completer worker.
	s.open("a1")
	require.Eventually(t, func() bool { return lockWaiters(t, b) == 1 }, 10*time.Second, 5*time.Millisecond)
	s.open("a2")
	require.Eventually(t, func() bool { return lockWaiters(t, b) == 2 }, 10*time.Second, 5*time.Millisecond)

	// B's routes are delivered and their completions written within a
	// bound, while A holds on.
	start := time.Now()
	var bs []routeSpec
	for range 5 {
		bs = append(bs, routeSpec{channel: channel.Webhook, ref: s.URL + "/b", producer: nameB})
	}
	for _, k := range b.insert(t, bs...) {
		b.waitStatus(t, k, "published")
	}
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, "claimed", b.route(t, a[0]).Status)
	require.Equal(t, "claimed", b.route(t, a[1]).Status)
	require.Eventually(t, func() bool {
		l := logs.String()
		return strings.Contains(l, "completions set aside") && strings.Contains(l, nameA+" (pid ") &&
			strings.Contains(l, a[0].notificationID+" "+a[0].routeID) &&
			strings.Contains(l, a[1].notificationID+" "+a[1].routeID)
	}, 5*time.Second, 10*time.Millisecond, "the holder is named: %s", logs.String())

	// A commits the first cancel: that route stays canceled, its completion
	// fenced out. It rolls the second back: that route's completion is
	// written.
	require.NoError(t, tx1.Commit(ctx))
	require.NoError(t, tx2.Rollback(ctx))
	b.waitStatus(t, a[1], "published")
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), `"msg":"stale completion ignored: the route has moved on","notification_id":"`+a[0].notificationID)
	}, 10*time.Second, 10*time.Millisecond)
	r := b.route(t, a[0])
	require.Equal(t, "canceled", r.Status)
	require.Nil(t, r.NextAttemptAt)
	require.Equal(t, 1, s.count("/hold/a1"))
	require.Equal(t, 1, s.count("/hold/a2"))
	require.Equal(t, 5, s.count("/b"))
}
