package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/store"
)

// Provider states, as herald.providers.state holds them.
const (
	// ProviderEnabled: routing sends the provider new attempts.
	ProviderEnabled = "enabled"
	// ProviderDraining: routing sends it no new attempt and fails over to
	// the next provider of each rule; the attempts it holds already (in
	// flight, or waiting for its cap) finish there.
	ProviderDraining = "draining"
	// ProviderDisabled: it gets nothing at all; routes waiting for it go
	// back to be routed afresh.
	ProviderDisabled = "disabled"
)

// ActionProviderState is the audit action of a provider state change.
const ActionProviderState = "provider_state"

var (
	// ErrUnknownProvider is returned by SetProviderState for a provider
	// herald.providers does not have.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrBadProviderState is returned by SetProviderState for a state
	// other than ProviderEnabled, ProviderDraining and ProviderDisabled,
	// a missing actor, or taking a provider out without a reason.
	ErrBadProviderState = errors.New("bad provider state change")
)

// ProviderStateChange is what SetProviderState did.
type ProviderStateChange struct {
	Provider      string `json:"provider"`
	State         string `json:"state"`
	PreviousState string `json:"previous_state"`
	// Changed is false when the provider already had State: nothing was
	// written, nor audited.
	Changed bool `json:"changed"`
	// At is when the state was set (for an unchanged one, when the
	// provider got it, or was added).
	At time.Time `json:"at"`
}

// SetProviderState sets provider name's state (ProviderEnabled,
// ProviderDraining, ProviderDisabled) through herald.provider_state_set:
// one audit row in actor's name with reason (required to take a provider
// out), and every serve follows within seconds. The login needs
// herald_operator. It returns ErrUnknownProvider or ErrBadProviderState
// (wrapped, with the database's message).
func (o *Operator) SetProviderState(ctx context.Context, name, state, actor, reason string) (*ProviderStateChange, error) {
	switch {
	case state != ProviderEnabled && state != ProviderDraining && state != ProviderDisabled:
		return nil, fmt.Errorf("%w: state %q is not %s, %s or %s", ErrBadProviderState, state, ProviderEnabled, ProviderDraining, ProviderDisabled)
	case actor == "":
		return nil, fmt.Errorf("%w: an actor is required", ErrBadProviderState)
	}
	r, err := o.q.ProviderStateSet(ctx, o.pool, store.ProviderStateSetParams{Provider: name, State: state, Actor: actor, Reason: reason})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			switch pgErr.Code {
			case pgerrcode.NoDataFound:
				return nil, fmt.Errorf("%w: %s", ErrUnknownProvider, name)
			case pgerrcode.InvalidParameterValue:
				return nil, fmt.Errorf("%w: %s", ErrBadProviderState, pgErr.Message)
			}
		}
		return nil, fmt.Errorf("set provider %s %s: %w", name, state, err)
	}
	o.logger.Info("provider state set", "provider", name, "state", r.State, "previous_state", r.PreviousState, "changed", r.Changed, "actor", actor)
	return &ProviderStateChange{Provider: r.Name, State: r.State, PreviousState: r.PreviousState, Changed: r.Changed, At: r.ChangedAt}, nil
}

// ProviderOutcomes are one provider's attempts over a stretch of time, by
// outcome, from the two-second health buckets.
type ProviderOutcomes struct {
	WindowSeconds float64 `json:"window_seconds"`
	Delivered     int64   `json:"delivered"`
	Transient     int64   `json:"transient"`
	Permanent     int64   `json:"permanent"`
	Throttled     int64   `json:"throttled"`
	// Unavailable counts the health rounds in which it could not send.
	Unavailable int64 `json:"unavailable"`
	// MeanLatencySeconds and MaxLatencySeconds measure one attempt; nil
	// when there was none.
	MeanLatencySeconds *float64 `json:"mean_latency_seconds"`
	MaxLatencySeconds  *float64 `json:"max_latency_seconds"`
	// FailedOverTo counts the routes that failed here and went on to
	// another provider; FailedOverFrom those that came here after failing
	// at another.
	FailedOverTo   int64 `json:"failed_over_to"`
	FailedOverFrom int64 `json:"failed_over_from"`
}

// Failover is the routes that failed at one provider and went on to
// another over a window: how many, and the start of the newest two-second
// bucket that had one.
type Failover struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	Failovers int64     `json:"failovers"`
	LastAt    time.Time `json:"last_at"`
}

// ProviderHealthOver returns every provider's health with its outcomes
// over the last window (ProviderHealth.Window) beside the last five
// minutes' (the fixed fields, as herald.provider_health_view gives them),
// its state, its circuit told as it behaves (half-open after a cool-down
// until it delivers again) and when its current failing streak started.
// An empty result means no provider is configured.
func (o *Operator) ProviderHealthOver(ctx context.Context, window time.Duration) ([]ProviderHealth, error) {
	if window <= 0 {
		return nil, fmt.Errorf("provider health: window must be positive, got %s", window)
	}
	now, err := o.q.DatabaseNow(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read database clock: %w", err)
	}
	ph, _, err := o.providerHealthAt(ctx, now, window)
	return ph, err
}

// providerHealthAt is ProviderHealthOver at the database's time now, with
// the window's failovers.
func (o *Operator) providerHealthAt(ctx context.Context, now time.Time, window time.Duration) ([]ProviderHealth, []Failover, error) {
	since := now.Add(-window)
	rows, err := o.q.ProviderHealthOver(ctx, o.pool, store.ProviderHealthOverParams{Since: since, Now: &now})
	if err != nil {
		return nil, nil, fmt.Errorf("read provider health: %w", err)
	}
	frows, err := o.q.ProviderFailoverList(ctx, o.pool, since)
	if err != nil {
		return nil, nil, fmt.Errorf("read failovers: %w", err)
	}
	fo := make([]Failover, len(frows))
	out, in := map[string]int64{}, map[string]int64{}
	for i, f := range frows {
		fo[i] = Failover{From: f.FromProvider, To: f.ToProvider, Failovers: f.Failovers, LastAt: f.LastAt}
		out[f.FromProvider] += f.Failovers
		in[f.ToProvider] += f.Failovers
	}
	ph := make([]ProviderHealth, len(rows))
	for i, p := range rows {
		h := ProviderHealth{
			Provider: p.Provider, Channel: p.Channel, Driver: p.Driver, CapPerSecond: int(p.CapPerSecond),
			Circuit: p.Circuit, OpenUntil: p.OpenUntil, CircuitReason: p.CircuitReason,
			Delivered: p.Delivered5m, Transient: p.Transient5m, Permanent: p.Permanent5m, Throttled: p.Throttled5m,
			Unavailable: p.Unavailable5m, UnavailableReason: p.UnavailableReason,
			State: p.State, StateReason: p.StateReason, StateChangedAt: p.StateChangedAt,
			Window: ProviderOutcomes{
				WindowSeconds: window.Seconds(), Delivered: p.Delivered, Transient: p.Transient, Permanent: p.Permanent,
				Throttled: p.Throttled, Unavailable: p.Unavailable,
				FailedOverTo: out[p.Provider], FailedOverFrom: in[p.Provider],
			},
		}
		if p.Failing {
			h.FailingSince = &p.FailingSince
		}
		h.LastDeliveredAt = unlessEpoch(p.LastDeliveredAt)
		if n := p.Delivered5m + p.Transient5m + p.Permanent5m; n > 0 {
			mean, maxL := p.LatencySecondsSum5m/float64(n), p.LatencySecondsMax5m
			h.MeanLatencySeconds, h.MaxLatencySeconds = &mean, &maxL
		}
		if n := p.Delivered + p.Transient + p.Permanent; n > 0 {
			mean, maxL := p.LatencySecondsSum/float64(n), p.LatencySecondsMax
			h.Window.MeanLatencySeconds, h.Window.MaxLatencySeconds = &mean, &maxL
		}
		ph[i] = h
	}
	return ph, fo, nil
}
