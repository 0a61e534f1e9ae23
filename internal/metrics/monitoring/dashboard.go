package monitoring

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/metrics"
)

// Row is one row of the dashboard: a title over its panels.
type Row struct {
	Title  string
	Panels []Panel
}

// Panel is one graph (or, with Stat, one big number) of the dashboard.
type Panel struct {
	Title, Description string
	// Unit is Grafana's unit id: "s", "short", "reqps", "percentunit".
	Unit string
	// Stat shows the last value as a number rather than a time series.
	Stat    bool
	Queries []Query
}

// Query is one PromQL query of a panel, and its legend.
type Query struct{ Expr, Legend string }

// instance is the selector every query carries: the dashboard's instance
// variable, all processes by default.
const instance = `instance=~"$instance"`

// sel is name's series on the chosen instances, with more matchers.
func sel(name string, matchers ...string) string {
	return name + "{" + strings.Join(append([]string{instance}, matchers...), ",") + "}"
}

// rate is the per-second rate of the counter name, summed by labels.
func rate(by, name string, matchers ...string) string {
	return fmt.Sprintf("sum by (%s) (rate(%s[$__rate_interval]))", by, sel(name, matchers...))
}

// quantile is the q-quantile of the histogram name, by labels.
func quantile(q float64, by, name string) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (le, %s) (rate(%s[$__rate_interval])))", q, by, sel(name+"_bucket"))
}

// Dashboard returns the dashboard's rows: first what the alerts watch,
// then each part of herald in the order a route meets them.
func Dashboard() []Row {
	return []Row{
		{"Health", []Panel{
			{Title: "Ready processes", Stat: true, Unit: "short",
				Description: "herald serve processes whose /readyz check passes (herald_ready), of those scraped.",
				Queries:     []Query{{"sum(" + sel(metrics.NameReady) + ")", "ready"}, {"count(" + sel(metrics.NameReady) + ")", "scraped"}}},
			{Title: "Lag by channel", Unit: "s",
				Description: "How late the most overdue route of each channel is (0: nothing overdue). HeraldLag fires on it.",
				Queries:     []Query{{"max by (channel) (" + sel(metrics.NameLagSeconds) + ")", "{{channel}}"}}},
			{Title: "Backlog by channel", Unit: "short",
				Description: "Routes not yet terminal: pending, in flight or waiting to retry. HeraldBacklog fires on it.",
				Queries:     []Query{{"max by (channel) (" + sel(metrics.NameBacklogRoutes) + ")", "{{channel}}"}}},
			{Title: "Dead letters per minute", Unit: "short",
				Description: "Routes dead-lettered, by channel and failure classification. `herald dead-letters list` reads them.",
				Queries:     []Query{{rate("channel, classification", metrics.NameDeadLetters) + " * 60", "{{channel}} {{classification}}"}}},
		}},
		{"Delivery", []Panel{
			{Title: "Attempts per second", Unit: "reqps",
				Description: "Delivery attempts by channel and outcome (delivered, transient, permanent, skip, expired, stale).",
				Queries:     []Query{{rate("channel, outcome", metrics.NameRouteAttempts), "{{channel}} {{outcome}}"}}},
			{Title: "Acceptance to publication, p50 and p99", Unit: "s",
				Description: "Time from an intent's acceptance to its route's publication, by channel.",
				Queries: []Query{{quantile(0.5, "channel", metrics.NameDeliveryLatency), "{{channel}} p50"},
					{quantile(0.99, "channel", metrics.NameDeliveryLatency), "{{channel}} p99"}}},
			{Title: "Routes in flight", Unit: "short",
				Description: "Routes claimed and not yet completed, by channel: what a crash could repeat.",
				Queries:     []Query{{"sum by (channel) (" + sel(metrics.NameRoutesInFlight) + ")", "{{channel}}"}}},
			{Title: "Dispatcher statements canceled", Unit: "short",
				Description: "Claims, resolves and completions the database canceled by lock_timeout or statement_timeout, per second. Sustained, they make /readyz fail.",
				Queries:     []Query{{rate("op, timeout", metrics.NameDispatchDBTimeouts), "{{op}} {{timeout}}"}}},
		}},
		{"Providers", []Panel{
			{Title: "Provider attempts per second", Unit: "reqps",
				Description: "Attempts per provider by outcome.",
				Queries:     []Query{{rate("provider, outcome", metrics.NameProviderAttempts), "{{provider}} {{outcome}}"}}},
			{Title: "Provider latency p95", Unit: "s",
				Description: "How long one attempt took at each provider.",
				Queries:     []Query{{quantile(0.95, "provider", metrics.NameProviderLatency), "{{provider}}"}}},
			{Title: "Open circuits", Unit: "short",
				Description: "1 while a provider's circuit is open and its rules fail over. HeraldProviderCircuitOpen fires on it.",
				Queries:     []Query{{"max by (provider) (" + sel(metrics.NameProviderCircuitOpen) + ")", "{{provider}}"}}},
			{Title: "Providers that cannot send", Unit: "short",
				Description: "1 while a provider cannot send at all (an SMPP provider with no bind up); its routes wait.",
				Queries:     []Query{{"max by (provider) (" + sel(metrics.NameProviderUnavailable) + ")", "{{provider}}"}}},
			{Title: "Waits for a throughput cap", Unit: "short",
				Description: "Routes per second moved into a capped provider's paced queue.",
				Queries:     []Query{{rate("provider", metrics.NameProviderThrottled), "{{provider}}"}}},
		}},
		{"Receipts", []Panel{
			{Title: "Receipts stored per second", Unit: "reqps",
				Description: "Delivery receipts stored in the inbox, by provider and source (http, smpp).",
				Queries:     []Query{{rate("provider, source", metrics.NameReceiptsReceived), "{{provider}} {{source}}"}}},
			{Title: "Receipt decisions per second", Unit: "reqps",
				Description: "What the matcher made of the receipts: matched, duplicate, unmatched, malformed. HeraldReceiptsUnmatched fires on unmatched.",
				Queries:     []Query{{rate("provider, result", metrics.NameReceiptsDecided), "{{provider}} {{result}}"}}},
			{Title: "Acceptance to delivery status, p95", Unit: "s",
				Description: "Time from a route's acceptance to the receipt that set its delivery status.",
				Queries:     []Query{{quantile(0.95, "provider", metrics.NameReceiptLag), "{{provider}}"}}},
		}},
		{"Intake and API", []Panel{
			{Title: "Intents per second by result", Unit: "reqps",
				Description: "Intents submitted through every door: accepted, duplicate, conflict, invalid, forbidden, malformed.",
				Queries:     []Query{{rate("result", metrics.NameIntents), "{{result}}"}}},
			{Title: "Refused intents by producer", Unit: "reqps",
				Description: "Intents refused, per producer. HeraldIntakeMalformed fires on malformed SQL-door entries; `herald malformed list` reads them.",
				Queries:     []Query{{rate("producer, result", metrics.NameIntents, `result=~"malformed|invalid|forbidden|conflict"`), "{{producer}} {{result}}"}}},
			{Title: "API requests per second", Unit: "reqps",
				Description: "HTTP API requests by endpoint and status code.",
				Queries:     []Query{{rate("endpoint, status", metrics.NameAPIRequests), "{{endpoint}} {{status}}"}}},
			{Title: "API latency p95", Unit: "s",
				Description: "How long HTTP API requests took, by endpoint.",
				Queries:     []Query{{quantile(0.95, "endpoint", metrics.NameAPIRequestDuration), "{{endpoint}}"}}},
		}},
		{"Maintenance and metrics", []Panel{
			{Title: "Maintenance runs per hour", Unit: "short",
				Description: "Maintenance job runs by job and result (ok, error).",
				Queries:     []Query{{fmt.Sprintf("sum by (job, result) (increase(%s[1h]))", sel(metrics.NameMaintenanceRuns)), "{{job}} {{result}}"}}},
			{Title: "Rows maintenance removed per second", Unit: "short",
				Description: "Rows deleted or indexes rebuilt by maintenance jobs.",
				Queries:     []Query{{rate("job", metrics.NameMaintenanceRows), "{{job}}"}}},
			{Title: "Backlog query", Unit: "s",
				Description: "The scrape's backlog query: its duration, and whether it failed (then the lag and backlog series are missing and their alerts blind).",
				Queries: []Query{{"max(" + sel(metrics.NameBacklogQuerySeconds) + ")", "seconds"},
					{"count(" + sel(metrics.NameBacklogUp) + " == 0) or vector(0)", "failing processes"}}},
		}},
	}
}

// DashboardJSON returns the dashboard as Grafana's JSON model, ready to
// import: a data source variable (any Prometheus) and an instance variable
// (every herald serve by default).
func DashboardJSON() ([]byte, error) {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	var panels []any
	id, y := 1, 0
	for _, r := range Dashboard() {
		panels = append(panels, map[string]any{
			"id": id, "type": "row", "title": r.Title, "collapsed": false,
			"gridPos": map[string]int{"h": 1, "w": 24, "x": 0, "y": y}, "panels": []any{},
		})
		id++
		y++
		w := 24 / min(len(r.Panels), 4)
		for i, p := range r.Panels {
			if i > 0 && i%4 == 0 {
				y += 8
			}
			var targets []any
			for j, q := range p.Queries {
				targets = append(targets, map[string]any{
					"refId": string(rune('A' + j)), "datasource": ds, "expr": q.Expr, "legendFormat": q.Legend,
				})
			}
			kind := "timeseries"
			if p.Stat {
				kind = "stat"
			}
			panels = append(panels, map[string]any{
				"id": id, "type": kind, "title": p.Title, "description": p.Description, "datasource": ds,
				"gridPos":     map[string]int{"h": 8, "w": w, "x": (i % 4) * w, "y": y},
				"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.Unit}, "overrides": []any{}},
				"targets":     targets,
			})
			id++
		}
		y += 8
	}
	d := map[string]any{
		"title": "herald", "uid": "herald", "tags": []string{"herald"},
		"description":   "herald's metrics, printed by `herald observability dashboard`.",
		"schemaVersion": 39, "version": 1, "editable": true, "refresh": "30s",
		"time": map[string]string{"from": "now-6h", "to": "now"},
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"},
			map[string]any{"name": "instance", "label": "Instance", "type": "query", "datasource": ds,
				"query":      map[string]string{"query": "label_values(" + metrics.NameReady + ", instance)", "refId": "instance"},
				"definition": "label_values(" + metrics.NameReady + ", instance)",
				"includeAll": true, "multi": true, "allValue": ".*", "refresh": 2,
				"current": map[string]any{"text": "All", "value": "$__all"}},
		}},
		"panels": panels,
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode dashboard: %w", err)
	}
	return append(b, '\n'), nil
}
