package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Overview is the engine at one moment as the console's first page shows
// it: the backlog and lag per channel, the dead letters per channel and
// classification, the malformed entries of the window per failure code,
// what each provider did over the window, step by step, and each serve
// process's readiness (ServeProcesses). It leaves out
// Stats' throughput per channel, which scans the routes table (no index
// on published_at): a provider's deliveries over time come from its
// health buckets instead.
type Overview struct {
	At            time.Time         `json:"at"`
	WindowSeconds float64           `json:"window_seconds"`
	Backlog       []Backlog         `json:"backlog"`
	DeadLetters   []DeadLetterCount `json:"dead_letters"`
	Malformed     []MalformedCount  `json:"malformed"`
	Series        []ProviderPoint   `json:"series"`
	Processes     []ServeProcess    `json:"processes"`
}

// ProviderPoint is what one provider did in one step of a window.
type ProviderPoint struct {
	Provider  string    `json:"provider"`
	Channel   string    `json:"channel"`
	At        time.Time `json:"at"`
	Delivered int64     `json:"delivered"`
	Transient int64     `json:"transient"`
	Permanent int64     `json:"permanent"`
}

// Overview returns the overview over the last window (by the database's
// clock), the providers' outcomes in steps of step (at least 2s, the
// health buckets' size).
func (o *Operator) Overview(ctx context.Context, window, step time.Duration) (*Overview, error) {
	if window <= 0 {
		return nil, fmt.Errorf("overview: window must be positive, got %s", window)
	}
	now, err := o.q.DatabaseNow(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read database clock: %w", err)
	}
	ov := &Overview{At: now, WindowSeconds: window.Seconds()}
	backlog, err := o.q.RouteBacklogByStatus(ctx, o.pool, &now)
	if err != nil {
		return nil, fmt.Errorf("read backlog: %w", err)
	}
	ov.Backlog = make([]Backlog, len(backlog))
	for i, b := range backlog {
		ov.Backlog[i] = Backlog{Channel: b.Channel, Status: b.Status, Routes: b.Routes, Due: b.Due, LagSeconds: b.LagSeconds}
	}
	dl, err := o.q.DeadLetterCountByClassification(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	ov.DeadLetters = make([]DeadLetterCount, len(dl))
	for i, d := range dl {
		ov.DeadLetters[i] = DeadLetterCount{Channel: d.Channel, Classification: d.Classification, DeadLetters: d.DeadLetters, NewestAt: d.NewestAt}
	}
	if ov.Malformed, err = o.MalformedCounts(ctx, now.Add(-window)); err != nil {
		return nil, err
	}
	if ov.Series, err = o.ProviderSeries(ctx, now.Add(-window), step); err != nil {
		return nil, err
	}
	if ov.Processes, err = o.serveProcesses(ctx); err != nil {
		return nil, err
	}
	return ov, nil
}

// ProviderSeries returns every provider's outcomes since since in steps of
// step (at least 2s), by provider and time.
func (o *Operator) ProviderSeries(ctx context.Context, since time.Time, step time.Duration) ([]ProviderPoint, error) {
	rows, err := o.q.ConsoleProviderSeries(ctx, o.pool, store.ConsoleProviderSeriesParams{
		Since: since, StepSeconds: int32(max(step, 2*time.Second) / time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("read provider series: %w", err)
	}
	out := make([]ProviderPoint, len(rows))
	for i, r := range rows {
		out[i] = ProviderPoint{r.Provider, r.Channel, r.At, r.Delivered, r.Transient, r.Permanent}
	}
	return out, nil
}

// ProviderWindow is one provider's health (ProviderHealthOver: its state
// and circuit now, its outcomes over the window) with the window's
// failure rate.
type ProviderWindow struct {
	ProviderHealth
	// FailureRate is the failed attempts' share of the window's attempts
	// (0 when there was none).
	FailureRate float64 `json:"failure_rate"`
}

// ProviderReport is the providers page: each provider over the window and
// the newest circuit events.
type ProviderReport struct {
	At            time.Time        `json:"at"`
	Providers     []ProviderWindow `json:"providers"`
	CircuitEvents []CircuitEvent   `json:"circuit_events"`
}

// Providers returns each provider's health now and over the last window,
// and the newest circuit events.
func (o *Operator) Providers(ctx context.Context, window time.Duration) (*ProviderReport, error) {
	if window <= 0 {
		return nil, fmt.Errorf("providers: window must be positive, got %s", window)
	}
	now, err := o.q.DatabaseNow(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read database clock: %w", err)
	}
	health, err := o.ProviderHealthOver(ctx, window)
	if err != nil {
		return nil, err
	}
	events, err := o.q.ProviderEventList(ctx, o.pool, store.ProviderEventListParams{Max: CircuitEventsShown})
	if err != nil {
		return nil, fmt.Errorf("read circuit events: %w", err)
	}
	rep := &ProviderReport{At: now, CircuitEvents: make([]CircuitEvent, len(events)), Providers: make([]ProviderWindow, len(health))}
	for i, e := range events {
		rep.CircuitEvents[i] = CircuitEvent{At: e.At, Provider: e.Provider, Event: e.Event, Detail: e.Detail}
	}
	for i, p := range health {
		w := ProviderWindow{ProviderHealth: p}
		if n := p.Window.Delivered + p.Window.Transient + p.Window.Permanent; n > 0 {
			w.FailureRate = float64(p.Window.Transient+p.Window.Permanent) / float64(n)
		}
		rep.Providers[i] = w
	}
	return rep, nil
}

// unlessEpoch returns &t, or nil for the epoch (a query's "none").
func unlessEpoch(t time.Time) *time.Time {
	if t.Unix() == 0 {
		return nil
	}
	return &t
}
