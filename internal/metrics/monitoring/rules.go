package monitoring

import (
	"bytes"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/internal/metrics"
)

// Severities an alert carries in its severity label.
const (
	// SeverityCritical pages: deliveries are late or stopped.
	SeverityCritical = "critical"
	// SeverityWarning goes to a ticket or a channel: something to look at
	// within working hours, before it becomes critical.
	SeverityWarning = "warning"
)

// Alert is one alerting rule.
type Alert struct {
	// Name is the alertname, Herald... .
	Name string
	// Expr is the PromQL expression; every series it returns is an alert.
	Expr string
	// For is how long Expr must hold before the alert fires.
	For      time.Duration
	Severity string
	// Summary is one line; Description says what it means and the first
	// herald command to run. Both may use Prometheus's alert templates
	// ({{ $labels.channel }}, {{ $value }}).
	Summary, Description string
}

// Alerts returns herald's alert rules for t, in the order the rules file
// lists them.
func Alerts(t Thresholds) []Alert {
	return []Alert{
		{
			Name:     "HeraldDown",
			Expr:     fmt.Sprintf("up{job=%q} == 0", t.Job),
			For:      time.Minute,
			Severity: SeverityCritical,
			Summary:  "herald serve {{ $labels.instance }} is down: Prometheus cannot scrape it",
			Description: "Prometheus has not reached the metrics endpoint of {{ $labels.instance }} for a minute: the process is " +
				"stopped, crashed, or unreachable. Other serve processes keep delivering (routes it had claimed come due again " +
				"when their lease ends); with none left, nothing is delivered. First: check the process (systemctl status, " +
				"kubectl get pods) and its last log lines, then `herald stats` to see whether the backlog grows.",
		},
		{
			Name:     "HeraldNotReady",
			Expr:     metrics.NameReady + " == 0",
			For:      2 * time.Minute,
			Severity: SeverityCritical,
			Summary:  "herald serve {{ $labels.instance }} is not ready",
			Description: "{{ $labels.instance }} runs but its /readyz check fails: the database does not answer, a migration " +
				"is pending, or the dispatcher's claims or completions keep failing (a lock they wait for, statements the " +
				"database cancels). Restarting it will not help if someone else holds the lock. First: `curl -s " +
				"http://{{ $labels.instance }}/readyz` says which; then `herald migrate status` for a pending migration, " +
				"or pg_locks / pg_stat_activity for a lock on herald.routes.",
		},
		{
			Name:     "HeraldLag",
			Expr:     fmt.Sprintf("max by (channel) (%s) > %g", metrics.NameLagSeconds, t.Lag.Seconds()),
			For:      5 * time.Minute,
			Severity: SeverityCritical,
			Summary:  "herald channel {{ $labels.channel }} is {{ $value | humanizeDuration }} behind",
			Description: fmt.Sprintf("The most overdue route of channel {{ $labels.channel }} should have been attempted "+
				"{{ $value | humanizeDuration }} ago (threshold %s): deliveries are late. Causes: too few serve processes or "+
				"too little concurrency for the traffic, a provider that answers slowly or not at all, a throughput cap, "+
				"or a stuck dispatcher (see HeraldNotReady). First: `herald stats` (backlog, lag, throughput and provider "+
				"health per channel).", promDuration(t.Lag)),
		},
		{
			Name:     "HeraldBacklog",
			Expr:     fmt.Sprintf("max by (channel) (%s) > %d", metrics.NameBacklogRoutes, t.Backlog),
			For:      15 * time.Minute,
			Severity: SeverityWarning,
			Summary:  "herald channel {{ $labels.channel }} has {{ $value }} routes waiting",
			Description: fmt.Sprintf("Channel {{ $labels.channel }} has {{ $value }} routes not yet terminal (pending, "+
				"in flight, or waiting to retry), more than %d for 15 minutes. A backlog that grows while lag stays low "+
				"is scheduled work (send_at, retries); one that grows with lag is delivery falling behind. First: "+
				"`herald stats`.", t.Backlog),
		},
		{
			Name:     "HeraldProviderCircuitOpen",
			Expr:     fmt.Sprintf("max by (provider) (%s) > 0", metrics.NameProviderCircuitOpen),
			For:      time.Minute,
			Severity: SeverityWarning,
			Summary:  "herald provider {{ $labels.provider }}: circuit open",
			Description: "Too many of {{ $labels.provider }}'s attempts failed transiently (timeouts, 5xx, refused " +
				"connections), so herald stopped sending through it: its rules fail over to their next provider, and " +
				"routes with no other provider wait. The circuit closes by itself after its cool-down once the provider " +
				"answers again. First: `herald stats` (provider health: attempts, failures, circuit events), then the " +
				"provider's status page; `herald routing test` shows where routes go meanwhile.",
		},
		{
			Name: "HeraldDeadLetters",
			Expr: fmt.Sprintf("sum by (channel) (%s) > %d",
				newOrIncrease(metrics.NameDeadLetters, "", DeadLetterWindow), t.DeadLetters),
			For:      time.Minute,
			Severity: SeverityWarning,
			Summary:  "herald channel {{ $labels.channel }}: {{ $value }} routes dead-lettered in " + promDuration(DeadLetterWindow),
			Description: fmt.Sprintf("{{ $value }} routes of channel {{ $labels.channel }} were dead-lettered within %s "+
				"(threshold %d): a provider refuses them (permanent failures: bad numbers, rejected content) or they "+
				"ran out of attempts. They are kept, and can be replayed once the cause is fixed. First: `herald "+
				"dead-letters list -channel {{ $labels.channel }} -since 1h` (classification and recovery hint of each), "+
				"then `herald dead-letters replay`.", promDuration(DeadLetterWindow), t.DeadLetters),
		},
		{
			Name: "HeraldReceiptsUnmatched",
			Expr: fmt.Sprintf("sum by (provider) (%s) > %d",
				newOrIncrease(metrics.NameReceiptsDecided, `result="unmatched"`, UnmatchedWindow), t.UnmatchedReceipts),
			For:      5 * time.Minute,
			Severity: SeverityWarning,
			Summary:  "herald provider {{ $labels.provider }}: {{ $value }} delivery receipts matched no route",
			Description: fmt.Sprintf("{{ $value }} receipts from {{ $labels.provider }} within %s (threshold %d) named a "+
				"message id herald never recorded for that provider, even after their window of retries: the provider "+
				"posts to the wrong provider's endpoint, sends another id than the one it answered with, or reports "+
				"messages herald did not send. Their routes keep no delivery status. They stay in "+
				"herald.delivery_receipts (state unmatched). First: `herald stats` (receipts per provider), then "+
				"`herald providers list` to check the provider's receipts settings.", promDuration(UnmatchedWindow), t.UnmatchedReceipts),
		},
		{
			Name: "HeraldIntakeMalformed",
			Expr: fmt.Sprintf("sum by (producer) (%s) > %d",
				newOrIncrease(metrics.NameIntents, `result="malformed"`, MalformedWindow), t.Malformed),
			For:      time.Minute,
			Severity: SeverityWarning,
			Summary:  "herald intake: {{ $value }} malformed entries from producer {{ $labels.producer }}",
			Description: fmt.Sprintf("{{ $value }} entries the producer {{ $labels.producer }} inserted into the SQL intake "+
				"within %s (threshold %d) were refused: not JSON, a missing or invalid field. Nothing was sent for them; "+
				"each is kept in herald.malformed_intents with its failure code. The producer has a bug or a new "+
				"version that writes another shape. First: `herald malformed list -producer {{ $labels.producer }} "+
				"-since 1h`, then `herald malformed show <id>` for the field at fault.", promDuration(MalformedWindow), t.Malformed),
		},
	}
}

// newOrIncrease is how much the counter name (its series matching
// matchers, e.g. `result="malformed"`) grew within window. increase()
// misses the event that creates a series (the first dead letter of a
// channel since the process started: its first sample is already 1), so a
// series that did not exist a window ago, while Prometheus was scraping
// its target then (up offset window), counts whole instead. A Prometheus
// that has just started scraping a target has no such past, and counts
// only increase(): it does not take a long-lived counter for new events.
func newOrIncrease(name, matchers string, window time.Duration) string {
	s := name
	if matchers != "" {
		s += "{" + matchers + "}"
	}
	w := promDuration(window)
	return fmt.Sprintf("((%s unless %s offset %s) and on (job, instance) up offset %s) or increase(%s[%s])", s, s, w, w, s, w)
}

// promDuration writes d as Prometheus does: 10m, 1h, 90s.
func promDuration(d time.Duration) string { return model.Duration(d).String() }

// RulesOpts tunes Rules; nil takes the defaults.
type RulesOpts struct {
	// For, when not nil, replaces every alert's for: with this duration
	// and changes nothing else: a test evaluating the shipped expressions
	// need not wait out production's patience.
	For *time.Duration
}

// ruleFile is Prometheus's rules file.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string `yaml:"name"`
	Rules []rule `yaml:"rules"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Rules returns the Prometheus rules file of Alerts(t): one group,
// "herald", preceded by a comment saying how it was made.
func Rules(t Thresholds, opts *RulesOpts) ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &RulesOpts{}
	}
	g := ruleGroup{Name: "herald"}
	for _, a := range Alerts(t) {
		d := a.For
		if opts.For != nil {
			d = *opts.For
		}
		g.Rules = append(g.Rules, rule{
			Alert: a.Name, Expr: a.Expr, For: promDuration(d),
			Labels:      map[string]string{"severity": a.Severity},
			Annotations: map[string]string{"summary": a.Summary, "description": a.Description},
		})
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# herald's alert rules, printed by `herald observability alerts`: load them with rule_files.\n"+
		"# Thresholds: -job %s -lag %s -backlog %d -dead-letters %d -unmatched-receipts %d -malformed %d\n",
		t.Job, promDuration(t.Lag), t.Backlog, t.DeadLetters, t.UnmatchedReceipts, t.Malformed)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(ruleFile{Groups: []ruleGroup{g}}); err != nil {
		return nil, fmt.Errorf("encode rules: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode rules: %w", err)
	}
	return b.Bytes(), nil
}
