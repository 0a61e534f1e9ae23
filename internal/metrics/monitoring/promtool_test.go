package monitoring_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/metrics/monitoring"
)

// promtool returns the path of Prometheus's promtool, failing the test
// when it is missing: CI installs it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (%v): .ci/run installs it with Debian's prometheus package (apt-get install prometheus)", err)
	}
	return p
}

func TestRules_PassPromtoolCheck(t *testing.T) {
	t.Parallel()
	tool := promtool(t)
	custom := monitoring.DefaultThresholds()
	custom.Job, custom.Lag, custom.Backlog = "herald-eu", 90e9, 1
	for _, th := range []monitoring.Thresholds{monitoring.DefaultThresholds(), custom} {
		rules, err := monitoring.Rules(th, nil)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "herald.yml")
		require.NoError(t, os.WriteFile(path, rules, 0o644))
		out, err := exec.Command(tool, "check", "rules", path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), fmt.Sprintf("SUCCESS: %d rules found", len(monitoring.Alerts(th))))
	}
}

// The counting alerts (dead letters, unmatched receipts, malformed
// intake) see the event that creates a series, as long as Prometheus was
// scraping the target a window before; a Prometheus that has just started
// scraping does not take counts already there for new ones; a counter that
// does not move fires nothing. promtool evaluates the shipped expressions
// over series written out minute by minute.
func TestRules_CountTheEventThatCreatesASeries(t *testing.T) {
	t.Parallel()
	tool := promtool(t)
	th := monitoring.DefaultThresholds()
	th.DeadLetters, th.UnmatchedReceipts, th.Malformed = 0, 0, 0
	rules, err := monitoring.Rules(th, nil)
	require.NoError(t, err)
	exprs := map[string]string{}
	for _, a := range monitoring.Alerts(th) {
		exprs[a.Name] = a.Expr
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "herald.yml"), rules, 0o644))

	// Target a has been scraped for 80 minutes; its first dead letter,
	// malformed entry and unmatched receipt come at minute 70. Target b
	// is scraped from minute 70 on, its counters already high, and
	// unchanged but for one dead letter more at minute 75.
	const a, b = `job="herald",instance="a:9090"`, `job="herald",instance="b:9090"`
	series := []struct{ name, values string }{
		{`up{` + a + `}`, "1x80"},
		{`herald_dead_letters_total{` + a + `,channel="sms",classification="http_503"}`, "_x69 1x10"},
		{`herald_intents_total{` + a + `,producer="shop",result="malformed"}`, "_x69 1x10"},
		{`herald_receipts_total{` + a + `,provider="sms/acme",status="none",result="unmatched"}`, "_x69 1x10"},
		{`herald_intents_total{` + a + `,producer="shop",result="accepted"}`, "5x80"},
		{`up{` + b + `}`, "_x69 1x10"},
		{`herald_dead_letters_total{` + b + `,channel="email",classification="smtp_550"}`, "_x69 500x5 501x5"},
		{`herald_intents_total{` + b + `,producer="mail",result="malformed"}`, "_x69 900x10"},
	}
	type check struct {
		alert, at string
		labels    []string // the alerts expected, by their labels
	}
	checks := []check{
		{"HeraldDeadLetters", "60m", nil},
		{"HeraldIntakeMalformed", "60m", nil},
		{"HeraldDeadLetters", "70m", []string{`channel="sms"`}},
		{"HeraldDeadLetters", "74m", []string{`channel="sms"`}},       // not b's 500
		{"HeraldIntakeMalformed", "71m", []string{`producer="shop"`}}, // not b's 900
		{"HeraldReceiptsUnmatched", "71m", []string{`provider="sms/acme"`}},
		{"HeraldDeadLetters", "77m", []string{`channel="email"`, `channel="sms"`}}, // b's one more
	}
	var y strings.Builder
	y.WriteString("rule_files: [herald.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n")
	for _, s := range series {
		fmt.Fprintf(&y, "      - series: '%s'\n        values: '%s'\n", s.name, s.values)
	}
	y.WriteString("    promql_expr_test:\n")
	for _, c := range checks {
		// count by the alert's own labels: one series per alert expected.
		by := "channel"
		switch c.alert {
		case "HeraldIntakeMalformed":
			by = "producer"
		case "HeraldReceiptsUnmatched":
			by = "provider"
		}
		fmt.Fprintf(&y, "      - expr: 'count by (%s) (%s)'\n        eval_time: %s\n        exp_samples:", by,
			strings.ReplaceAll(exprs[c.alert], "'", "''"), c.at)
		if len(c.labels) == 0 {
			y.WriteString(" []\n")
			continue
		}
		y.WriteString("\n")
		for _, l := range c.labels {
			fmt.Fprintf(&y, "          - labels: '{%s}'\n            value: 1\n", l)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.yml"), []byte(y.String()), 0o644))
	out, err := exec.Command(tool, "test", "rules", filepath.Join(dir, "test.yml")).CombinedOutput()
	require.NoError(t, err, "%s\n%s", out, y.String())
}
