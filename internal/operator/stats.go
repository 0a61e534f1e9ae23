package operator

import (
	"context"
	"fmt"
	"time"
)

// Backlog is the routes still to deliver on one channel in one status.
type Backlog struct {
	Channel string `json:"channel"`
	Status  string `json:"status"`
	Routes  int64  `json:"routes"`
	// Due is how many of them are due now.
	Due int64 `json:"due"`
	// LagSeconds is how late the most overdue of them is (0: none is late).
	LagSeconds float64 `json:"lag_seconds"`
}

// Throughput is what one channel published in the stats' window.
type Throughput struct {
	Channel   string  `json:"channel"`
	Published int64   `json:"published"`
	PerSecond float64 `json:"per_second"`
	// MeanLatencySeconds and MaxLatencySeconds measure acceptance to
	// publication.
	MeanLatencySeconds float64 `json:"mean_latency_seconds"`
	MaxLatencySeconds  float64 `json:"max_latency_seconds"`
}

// DeadLetterCount is the dead letters of one channel and classification.
type DeadLetterCount struct {
	Channel        string    `json:"channel"`
	Classification string    `json:"classification"`
	DeadLetters    int64     `json:"dead_letters"`
	NewestAt       time.Time `json:"newest_at"`
}

// Stats is the engine in figures at one moment.
type Stats struct {
	At            time.Time         `json:"at"`
	WindowSeconds float64           `json:"window_seconds"`
	Backlog       []Backlog         `json:"backlog"`
	Throughput    []Throughput      `json:"throughput"`
	DeadLetters   []DeadLetterCount `json:"dead_letters"`
}

// Stats returns the backlog and lag per channel and status, what each
// channel published over the last window (by the database's clock), and the
// dead letters per channel and classification.
func (o *Operator) Stats(ctx context.Context, window time.Duration) (*Stats, error) {
	if window <= 0 {
		return nil, fmt.Errorf("stats: window must be positive, got %s", window)
	}
	now, err := o.q.DatabaseNow(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read database clock: %w", err)
	}
	st := &Stats{At: now, WindowSeconds: window.Seconds()}
	backlog, err := o.q.RouteBacklogByStatus(ctx, o.pool, &now)
	if err != nil {
		return nil, fmt.Errorf("read backlog: %w", err)
	}
	st.Backlog = make([]Backlog, len(backlog))
	for i, b := range backlog {
		st.Backlog[i] = Backlog{Channel: b.Channel, Status: b.Status, Routes: b.Routes, Due: b.Due, LagSeconds: b.LagSeconds}
	}
	tp, err := o.q.RouteThroughputByChannel(ctx, o.pool, now.Add(-window))
	if err != nil {
		return nil, fmt.Errorf("read throughput: %w", err)
	}
	st.Throughput = make([]Throughput, len(tp))
	for i, t := range tp {
		st.Throughput[i] = Throughput{
			Channel: t.Channel, Published: t.Published, PerSecond: float64(t.Published) / window.Seconds(),
			MeanLatencySeconds: t.MeanLatencySeconds, MaxLatencySeconds: t.MaxLatencySeconds,
		}
	}
	dl, err := o.q.DeadLetterCountByClassification(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	st.DeadLetters = make([]DeadLetterCount, len(dl))
	for i, d := range dl {
		st.DeadLetters[i] = DeadLetterCount{Channel: d.Channel, Classification: d.Classification, DeadLetters: d.DeadLetters, NewestAt: d.NewestAt}
	}
	return st, nil
}
