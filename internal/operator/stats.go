package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
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

// ProviderHealth is one provider's state, circuit, cap, last five
// minutes' outcomes (a row of herald.provider_health_view) and outcomes
// over a window of the caller's (Window).
type ProviderHealth struct {
	Provider string `json:"provider"`
	Channel  string `json:"channel"`
	Driver   string `json:"driver"`
	// CapPerSecond is its throughput cap across every serve; 0 for none.
	CapPerSecond int `json:"cap_per_second"`
	// State is ProviderEnabled, ProviderDraining or ProviderDisabled;
	// StateReason says why it was taken out, StateChangedAt when its state
	// last changed (nil: never).
	State          string     `json:"state"`
	StateReason    string     `json:"state_reason,omitempty"`
	StateChangedAt *time.Time `json:"state_changed_at,omitempty"`
	// Circuit is "open" (until OpenUntil, for CircuitReason), "half-open"
	// (the cool-down is over: routing tries the provider again, and it has
	// not delivered since) or "closed".
	Circuit       string     `json:"circuit"`
	OpenUntil     *time.Time `json:"open_until,omitempty"`
	CircuitReason string     `json:"circuit_reason,omitempty"`
	// The last five minutes' attempts by outcome; Throttled adds the
	// routes that waited for the cap to the attempts the provider asked
	// to slow down.
	Delivered int64 `json:"delivered_5m"`
	Transient int64 `json:"transient_5m"`
	Permanent int64 `json:"permanent_5m"`
	Throttled int64 `json:"throttled_5m"`
	// MeanLatencySeconds and MaxLatencySeconds measure one attempt over
	// the last five minutes; nil when there was none.
	MeanLatencySeconds *float64 `json:"mean_latency_seconds_5m"`
	MaxLatencySeconds  *float64 `json:"max_latency_seconds_5m"`
	// Unavailable counts the last five minutes' health rounds (a second
	// each, per serve process) in which the provider could not send at
	// all, and UnavailableReason says why, while it lasts (the SMSC
	// refused the bind: ESME_RINVPASWD); its routes wait meanwhile,
	// spending no attempts.
	Unavailable       int64  `json:"unavailable_5m"`
	UnavailableReason string `json:"unavailable_reason,omitempty"`
	// FailingSince is the start of the provider's current failing streak:
	// its first two-second bucket with a transient failure (or a round it
	// could not send) after its last delivery; nil when it is not failing.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// LastDeliveredAt is the start of its newest two-second bucket with a
	// delivery (within the buckets kept); nil when there is none.
	LastDeliveredAt *time.Time `json:"last_delivered_at,omitempty"`
	// Window is its outcomes and failovers over the window asked for.
	Window ProviderOutcomes `json:"window"`
}

// CircuitEvent is a circuit opening or closing (herald.provider_events).
type CircuitEvent struct {
	At       time.Time `json:"at"`
	Provider string    `json:"provider"`
	// Event is "circuit_opened" or "circuit_closed".
	Event  string `json:"event"`
	Detail string `json:"detail"`
}

// CircuitEventsShown is how many of the newest circuit events Stats
// returns.
const CircuitEventsShown = 10

// Stats is the engine in figures at one moment.
type Stats struct {
	At            time.Time         `json:"at"`
	WindowSeconds float64           `json:"window_seconds"`
	Backlog       []Backlog         `json:"backlog"`
	Throughput    []Throughput      `json:"throughput"`
	DeadLetters   []DeadLetterCount `json:"dead_letters"`
	// Providers are every provider's health, by name; empty when no
	// provider is configured.
	Providers []ProviderHealth `json:"providers"`
	// CircuitEvents are the newest circuit openings and closings, newest
	// first.
	CircuitEvents []CircuitEvent `json:"circuit_events"`
	// Receipts are the delivery receipts received over the window, per
	// provider; empty when none came.
	Receipts []ReceiptStats `json:"receipts"`
	// Callbacks are the status callbacks created over the window, per
	// producer, by outcome; empty when none was.
	Callbacks []CallbackStats `json:"callbacks"`
	// DeadLettersByProducer are the dead letters per producer, most first.
	DeadLettersByProducer []DeadLetterGroup `json:"dead_letters_by_producer"`
	// Failovers are the routes that failed at one provider and went on to
	// another over the window, most first; empty when none did.
	Failovers []Failover `json:"failovers"`
}

// CallbackStats is one producer's status callbacks created over the stats
// window, by where they stand now: Published (the producer was told),
// Failed (not yet: retrying), DeadLettered (herald gave up; `herald
// dead-letters replay --channel callback` sends them again) and Pending
// (not tried yet, or in flight). Created counts them all.
type CallbackStats struct {
	Producer     string `json:"producer"`
	Created      int64  `json:"created"`
	Published    int64  `json:"published"`
	Failed       int64  `json:"failed"`
	DeadLettered int64  `json:"dead_lettered"`
	Pending      int64  `json:"pending"`
}

// ReceiptStats is one provider's receipts over the stats window: how many
// came, what the matcher made of them, the delivery statuses they set, and
// the receipt lag (acceptance to delivery status) of those that set one.
type ReceiptStats struct {
	Provider      string  `json:"provider"`
	Received      int64   `json:"received"`
	Waiting       int64   `json:"waiting"`
	Matched       int64   `json:"matched"`
	Duplicate     int64   `json:"duplicate"`
	Unmatched     int64   `json:"unmatched"`
	Malformed     int64   `json:"malformed"`
	Delivered     int64   `json:"delivered"`
	Undelivered   int64   `json:"undelivered"`
	Expired       int64   `json:"expired"`
	LagP50Seconds float64 `json:"lag_p50_seconds"`
	LagP95Seconds float64 `json:"lag_p95_seconds"`
}

// Stats returns the backlog and lag per channel and status, what each
// channel published over the last window (by the database's clock), the
// dead letters per channel and classification and per producer, each
// provider's state, circuit and cap with its outcomes over the last five
// minutes and over the window (ProviderHealthOver), the window's
// failovers, the newest circuit events, and the window's delivery receipts
// and status callbacks.
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
	if err := o.providerStats(ctx, st, window); err != nil {
		return nil, err
	}
	groups, err := o.DeadLetterCounts(ctx, Filter{}, []string{GroupProducer})
	if err != nil {
		return nil, err
	}
	st.DeadLettersByProducer = groups
	rs, err := o.q.ReceiptStatsSince(ctx, o.pool, now.Add(-window))
	if err != nil {
		return nil, fmt.Errorf("read receipts: %w", err)
	}
	st.Receipts = make([]ReceiptStats, len(rs))
	for i, r := range rs {
		st.Receipts[i] = ReceiptStats{Provider: r.Provider, Received: r.Received, Waiting: r.Waiting,
			Matched: r.Matched, Duplicate: r.Duplicate, Unmatched: r.Unmatched, Malformed: r.Malformed,
			Delivered: r.Delivered, Undelivered: r.Undelivered, Expired: r.Expired,
			LagP50Seconds: r.LagP50Seconds, LagP95Seconds: r.LagP95Seconds}
	}
	cs, err := o.q.RecordCallbackStatsSince(ctx, o.pool, now.Add(-window))
	if err != nil {
		return nil, fmt.Errorf("read callbacks: %w", err)
	}
	st.Callbacks = make([]CallbackStats, len(cs))
	for i, c := range cs {
		st.Callbacks[i] = CallbackStats{Producer: c.Producer, Created: c.Created, Published: c.Published,
			Failed: c.Failed, DeadLettered: c.DeadLettered, Pending: c.Pending}
	}
	return st, nil
}

// providerStats reads every provider's health over window, the window's
// failovers and the newest circuit events into st.
func (o *Operator) providerStats(ctx context.Context, st *Stats, window time.Duration) error {
	var err error
	if st.Providers, st.Failovers, err = o.providerHealthAt(ctx, st.At, window); err != nil {
		return err
	}
	ev, err := o.q.ProviderEventList(ctx, o.pool, store.ProviderEventListParams{Max: CircuitEventsShown})
	if err != nil {
		return fmt.Errorf("read circuit events: %w", err)
	}
	st.CircuitEvents = make([]CircuitEvent, len(ev))
	for i, e := range ev {
		st.CircuitEvents[i] = CircuitEvent{At: e.At, Provider: e.Provider, Event: e.Event, Detail: e.Detail}
	}
	return nil
}
