// Package metrics defines herald's Prometheus metric families in one place,
// so the engine's parts record into the same registry and names never drift.
// A nil *Metrics is valid and records nothing: library users and tests that
// do not care about metrics pass nil.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds herald's metric families.
type Metrics struct {
	// IntentsAccepted counts intents by producer and result: accepted,
	// duplicate, conflict, invalid (Go client) or malformed (SQL intake).
	IntentsAccepted *prometheus.CounterVec
	// RouteAttempts counts delivery attempts by channel and outcome:
	// delivered, transient, permanent, skip, expired, stale (a completion
	// fenced out because a newer attempt owns the route).
	RouteAttempts *prometheus.CounterVec
	// DeliveryLatency observes accepted → published, per channel.
	DeliveryLatency *prometheus.HistogramVec
	// DeadLetters counts routes dead-lettered, by channel and classification.
	DeadLetters *prometheus.CounterVec
	// MaintenanceRuns counts maintenance job runs by job and result.
	MaintenanceRuns *prometheus.CounterVec
	// MaintenanceRows counts rows a maintenance job deleted or rebuilt.
	MaintenanceRows *prometheus.CounterVec
	// RoutesInFlight is, per channel, the routes this process has claimed
	// whose outcome is not written yet: being delivered, or delivered and
	// waiting for the completer. A crash of the process or of the database
	// may repeat only these.
	RoutesInFlight *prometheus.GaugeVec
	// DispatchDBTimeouts counts the dispatcher's statements the database
	// canceled because they waited too long for a lock (timeout "lock":
	// lock_timeout) or ran too long (timeout "statement": statement_timeout,
	// or a cancel by an administrator, which Postgres reports alike), by op
	// (claim, resolve, complete, release, next_due) and channel. A
	// completion batch that mixes channels counts once for each.
	DispatchDBTimeouts *prometheus.CounterVec
	// ProviderAttempts, ProviderLatency, ProviderCircuitOpen and
	// ProviderThrottledWaits are the delivery plane's provider health:
	// attempts by outcome, attempt latency, circuit state and routes that
	// waited for a throughput cap, per provider.
	ProviderAttempts       *prometheus.CounterVec
	ProviderLatency        *prometheus.HistogramVec
	ProviderCircuitOpen    *prometheus.GaugeVec
	ProviderThrottledWaits *prometheus.CounterVec
	// ProviderUnavailable is 1 while a provider cannot send at all (an
	// SMPP provider with no bind up), as this process sees it.
	ProviderUnavailable *prometheus.GaugeVec
	// ReceiptsReceived counts receipts stored, by provider and source (http,
	// smpp); ReceiptsMatched the matcher's decisions, by provider, delivery
	// status and result (matched, duplicate, unmatched, malformed);
	// ReceiptLag the time from a route's acceptance to the receipt that
	// gave it its delivery status.
	ReceiptsReceived *prometheus.CounterVec
	ReceiptsMatched  *prometheus.CounterVec
	ReceiptLag       *prometheus.HistogramVec
	// APIRequests counts the HTTP API's requests by endpoint (the route's
	// pattern, "unmatched" for none) and status code; APIRequestDuration
	// observes how long each took, by endpoint.
	APIRequests        *prometheus.CounterVec
	APIRequestDuration *prometheus.HistogramVec
}

// New creates herald's metric families and registers them with reg (a new
// registry if reg is nil).
func New(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		IntentsAccepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameIntents,
			Help: "Intents submitted, by producer and result (accepted, duplicate, conflict, invalid, forbidden, malformed).",
		}, []string{"producer", "result"}),
		RouteAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRouteAttempts,
			Help: "Delivery attempts, by channel and outcome (delivered, transient, permanent, skip, expired, stale).",
		}, []string{"channel", "outcome"}),
		DeliveryLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameDeliveryLatency,
			Help:    "Time from an intent's acceptance to its route's publication, by channel.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"channel"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDeadLetters,
			Help: "Routes dead-lettered, by channel and failure classification.",
		}, []string{"channel", "classification"}),
		MaintenanceRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameMaintenanceRuns,
			Help: "Maintenance job runs, by job and result (ok, error).",
		}, []string{"job", "result"}),
		MaintenanceRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameMaintenanceRows,
			Help: "Rows deleted or indexes rebuilt by maintenance jobs, by job.",
		}, []string{"job"}),
		RoutesInFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameRoutesInFlight,
			Help: "Routes this process has claimed whose outcome is not written yet, by channel.",
		}, []string{"channel"}),
		DispatchDBTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDispatchDBTimeouts,
			Help: "Dispatcher statements canceled by the database's lock_timeout (timeout=lock) or statement_timeout (timeout=statement), by op (claim, resolve, complete, release, next_due) and channel.",
		}, []string{"op", "channel", "timeout"}),
		ProviderAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameProviderAttempts,
			Help: "Delivery attempts per provider, by outcome (delivered, transient, permanent, skip).",
		}, []string{"provider", "outcome"}),
		ProviderLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameProviderLatency,
			Help:    "How long one delivery attempt took at a provider, by provider.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"provider"}),
		ProviderCircuitOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameProviderCircuitOpen,
			Help: "1 while a provider's circuit is open (its rules fail over), else 0, as this process last read it.",
		}, []string{"provider"}),
		ProviderUnavailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameProviderUnavailable,
			Help: "1 while a provider cannot send at all (an SMPP provider with no bind up: refused or unreachable) and its routes wait without spending attempts, else 0, as this process sees it.",
		}, []string{"provider"}),
		ProviderThrottledWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameProviderThrottled,
			Help: "Routes that waited for a provider's throughput cap (moved into its paced queue), by provider.",
		}, []string{"provider"}),
		ReceiptsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameReceiptsReceived,
			Help: "Delivery receipts stored in the inbox, by provider and source (http, smpp).",
		}, []string{"provider", "source"}),
		ReceiptsMatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameReceiptsDecided,
			Help: "Delivery receipts the matcher decided on, by provider, delivery status and result (matched, duplicate, unmatched, malformed).",
		}, []string{"provider", "status", "result"}),
		ReceiptLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameReceiptLag,
			Help:    "Time from a route's acceptance to the receipt that set its delivery status, by provider.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
		}, []string{"provider"}),
		APIRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameAPIRequests,
			Help: "HTTP API requests, by endpoint (method and route pattern) and status code.",
		}, []string{"endpoint", "status"}),
		APIRequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameAPIRequestDuration,
			Help:    "How long HTTP API requests took, from the request read to the answer written, by endpoint.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"endpoint"}),
	}
	reg.MustRegister(m.IntentsAccepted, m.RouteAttempts, m.DeliveryLatency, m.DeadLetters,
		m.MaintenanceRuns, m.MaintenanceRows, m.RoutesInFlight, m.DispatchDBTimeouts,
		m.ProviderAttempts, m.ProviderLatency, m.ProviderCircuitOpen, m.ProviderThrottledWaits, m.ProviderUnavailable,
		m.ReceiptsReceived, m.ReceiptsMatched, m.ReceiptLag,
		m.APIRequests, m.APIRequestDuration)
	return m
}

// InFlight adds delta to the routes of channel in flight in this process.
func (m *Metrics) InFlight(channel string, delta int) {
	if m == nil {
		return
	}
	m.RoutesInFlight.WithLabelValues(channel).Add(float64(delta))
}

// DispatchDBTimeout records one dispatcher statement of op on channel's
// routes canceled by the database's lock_timeout (timeout "lock") or
// statement_timeout (timeout "statement").
func (m *Metrics) DispatchDBTimeout(op, channel, timeout string) {
	if m != nil {
		m.DispatchDBTimeouts.WithLabelValues(op, channel, timeout).Inc()
	}
}

// ProviderAttempt records one attempt at provider: its outcome class and
// how long it took.
func (m *Metrics) ProviderAttempt(provider, outcome string, took time.Duration) {
	if m != nil {
		m.ProviderAttempts.WithLabelValues(provider, outcome).Inc()
		m.ProviderLatency.WithLabelValues(provider).Observe(took.Seconds())
	}
}

// ProviderCircuit records whether provider's circuit is open.
func (m *Metrics) ProviderCircuit(provider string, open bool) {
	if m != nil {
		v := 0.0
		if open {
			v = 1
		}
		m.ProviderCircuitOpen.WithLabelValues(provider).Set(v)
	}
}

// ProviderUnavailability records whether provider can send at all.
func (m *Metrics) ProviderUnavailability(provider string, unavailable bool) {
	if m != nil {
		v := 0.0
		if unavailable {
			v = 1
		}
		m.ProviderUnavailable.WithLabelValues(provider).Set(v)
	}
}

// ProviderThrottled records n routes waiting for provider's cap.
func (m *Metrics) ProviderThrottled(provider string, n int) {
	if m != nil {
		m.ProviderThrottledWaits.WithLabelValues(provider).Add(float64(n))
	}
}

// ReceiptReceived counts one receipt stored.
func (m *Metrics) ReceiptReceived(provider, source string) {
	if m != nil {
		m.ReceiptsReceived.WithLabelValues(provider, source).Inc()
	}
}

// ReceiptDecided counts one receipt the matcher decided on.
func (m *Metrics) ReceiptDecided(provider, status, result string) {
	if m != nil {
		m.ReceiptsMatched.WithLabelValues(provider, status, result).Inc()
	}
}

// ReceiptLagged records the time from a route's acceptance to its
// delivery status.
func (m *Metrics) ReceiptLagged(provider string, lag time.Duration) {
	if m != nil {
		m.ReceiptLag.WithLabelValues(provider).Observe(lag.Seconds())
	}
}

// APIRequest records one HTTP API request: its endpoint, status code and
// how long it took.
func (m *Metrics) APIRequest(endpoint string, status int, took time.Duration) {
	if m != nil {
		m.APIRequests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
		m.APIRequestDuration.WithLabelValues(endpoint).Observe(took.Seconds())
	}
}

// Intent records one intent's result.
func (m *Metrics) Intent(producer, result string) {
	if m != nil {
		m.IntentsAccepted.WithLabelValues(producer, result).Inc()
	}
}

// Attempt records one delivery attempt's outcome.
func (m *Metrics) Attempt(channel, outcome string) {
	if m != nil {
		m.RouteAttempts.WithLabelValues(channel, outcome).Inc()
	}
}

// Published records a route's publication latency since acceptance.
func (m *Metrics) Published(channel string, sinceAccepted time.Duration) {
	if m != nil {
		m.DeliveryLatency.WithLabelValues(channel).Observe(sinceAccepted.Seconds())
	}
}

// DeadLetter records one route dead-lettered.
func (m *Metrics) DeadLetter(channel, classification string) {
	if m != nil {
		m.DeadLetters.WithLabelValues(channel, classification).Inc()
	}
}

// Maintenance records one maintenance job run and the rows it affected.
func (m *Metrics) Maintenance(job string, rows int64, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.MaintenanceRuns.WithLabelValues(job, result).Inc()
	if rows > 0 {
		m.MaintenanceRows.WithLabelValues(job).Add(float64(rows))
	}
}
