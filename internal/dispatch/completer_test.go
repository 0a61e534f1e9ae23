package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gatherCompleter is a completer with nothing but its buffer, for gather.
func gatherCompleter(batchSize int) *completer {
	return newCompleter(&Dispatcher{batchSize: batchSize}, 4*batchSize)
}

func stopped() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

func queue(c *completer, n int) {
	for range n {
		c.add(completion{})
	}
}

// With no statement running, gather takes what is waiting and no more:
// an idle engine's outcome is written at once.
func TestGather_TakesWhatWaitsWhenNoStatementRuns(t *testing.T) {
	c := gatherCompleter(10)
	queue(c, 3)
	require.Len(t, c.gather(nil, stopped()), 3)
	queue(c, 25)
	require.Len(t, c.gather(nil, stopped()), 10, "at most a batch")
}

// While another worker's statement runs, gather keeps taking what arrives
// until that statement ends, and then returns it all as one batch; or
// until the batch is full.
func TestGather_GathersUntilTheStatementInFlightEnds(t *testing.T) {
	c := gatherCompleter(100)
	c.writing.Add(1) // the other worker's statement
	go func() {
		queue(c, 7)
		c.wroteOne()
	}()
	require.Len(t, c.gather(nil, stopped()), 7, "one batch of what arrived during the statement")
	require.Zero(t, len(c.in))
	require.Zero(t, c.writing.Load())

	c.writing.Add(1)
	go queue(c, 150)
	require.Len(t, c.gather(nil, stopped()), 100, "a full batch, with the statement still running")
}

// A statement that does not end (one waiting on a producer's lock) holds
// the next batch up for maxGather, not for as long as it waits.
func TestGather_DoesNotWaitOutAStuckStatement(t *testing.T) {
	c := gatherCompleter(100)
	c.writing.Add(1) // never ends
	queue(c, 3)
	limit := stopped()
	require.Len(t, c.gather(nil, limit), 3)
	queue(c, 2)
	require.Len(t, c.gather(nil, limit), 2, "the worker's timer serves again")
}
