// Package monitoring defines what herald ships for the Prometheus and
// Grafana that watch it: the alert rules on-call needs (Rules, printed by
// `herald observability alerts`) and a dashboard of every herald metric
// (DashboardJSON, printed by `herald observability dashboard`).
//
// Both are Go data built from the family names internal/metrics registers
// (metrics.Name*), never from copies of them: a family renamed there
// renames it here, one removed breaks the build, and the tests check that
// every series a rule or a panel reads is one `herald serve` registers and
// that every herald family has a panel.
package monitoring
