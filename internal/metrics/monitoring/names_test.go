package monitoring_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/metrics/monitoring"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// prometheusSeries are the series a rule may read that herald does not
// register: Prometheus records them itself.
var prometheusSeries = map[string]string{
	"up": "Prometheus's own series per scrape target: 0 when the scrape failed (HeraldDown)",
}

// notOnDashboard are herald families the dashboard leaves out, each with
// why. Empty: every family has a panel.
var notOnDashboard = map[string]string{}

// recorder is a Registerer that keeps what it registers, so the test can
// describe every family, those without a series yet included.
type recorder struct {
	*prometheus.Registry
	cs []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.cs = append(r.cs, c)
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registered returns every family `herald serve` registers on its metrics
// endpoint: what metrics.New and metrics.ServeCollectors register,
// described (a vector with no series yet is gathered as nothing), and
// everything a scrape of a real database gathers.
func registered(t *testing.T) map[string]bool {
	t.Helper()
	pool := pgtemp.NewPool(t)
	rec := &recorder{Registry: prometheus.NewRegistry()}
	metrics.New(rec)
	cs, err := metrics.ServeCollectors(pool, &metrics.BacklogCollectorConfig{Channels: []string{"sms"}},
		&metrics.HandlerConfig{Pool: pool})
	require.NoError(t, err)
	rec.MustRegister(cs...)

	names := map[string]bool{}
	descs := make(chan *prometheus.Desc, 1000)
	for _, c := range rec.cs {
		c.Describe(descs)
	}
	close(descs)
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		names[m[1]] = true
	}
	fams, err := rec.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		names[f.GetName()] = true
	}
	require.True(t, names[metrics.NameReady] && names[metrics.NameBacklogRoutes] && names[metrics.NameIntents],
		"the registry holds herald's families: %v", names)
	return names
}

var (
	stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers      = regexp.MustCompile(`\{[^}]*\}`)
	grouping      = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ranges        = regexp.MustCompile(`\[[^\]]*\]`)
	identifier    = regexp.MustCompile(`\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(\s*\()?`)
	operators     = []string{"and", "or", "unless", "offset", "bool"}
)

// seriesOf returns the metric names expr reads: every identifier that is
// not a function (followed by a parenthesis), an operator, a label or a
// duration.
func seriesOf(expr string) []string {
	s := stringLiteral.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	var out []string
	for _, m := range identifier.FindAllStringSubmatch(s, -1) {
		if m[1] != "" || slices.Contains(operators, m[0]) {
			continue
		}
		out = append(out, m[0])
	}
	return out
}

func TestSeriesOf_FindsMetricNamesOnly(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"herald_x_total", "herald_x_total", "up", "herald_x_total"}, seriesOf(
		`sum by (channel) (((herald_x_total{a="b or c"} unless herald_x_total offset 10m) and on (job, instance) up offset 10m) or increase(herald_x_total[10m])) > 0`))
	require.Equal(t, []string{"herald_h_seconds_bucket"}, seriesOf(
		`histogram_quantile(0.95, sum by (le, provider) (rate(herald_h_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`))
	require.Equal(t, []string{"herald_up"}, seriesOf(`count(herald_up == 0) or vector(0)`))
}

// family is the family a series name belongs to: a histogram's _bucket,
// _sum and _count series are its family's.
func family(name string, names map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && names[base] {
			return base
		}
	}
	return name
}

func TestRules_ReadOnlyRegisteredSeries(t *testing.T) {
	t.Parallel()
	names := registered(t)
	for _, a := range monitoring.Alerts(monitoring.DefaultThresholds()) {
		series := seriesOf(a.Expr)
		require.NotEmpty(t, series, a.Name)
		for _, s := range series {
			_, external := prometheusSeries[s]
			require.True(t, external || names[family(s, names)], "%s reads %s, which herald does not register", a.Name, s)
		}
	}
}

func TestDashboard_ShowsEveryRegisteredFamily(t *testing.T) {
	t.Parallel()
	names := registered(t)
	shown := map[string]bool{}
	for _, r := range monitoring.Dashboard() {
		for _, p := range r.Panels {
			require.NotEmpty(t, p.Queries, p.Title)
			for _, q := range p.Queries {
				for _, s := range seriesOf(q.Expr) {
					f := family(s, names)
					require.True(t, names[f], "panel %q reads %s, which herald does not register", p.Title, s)
					shown[f] = true
				}
			}
		}
	}
	for n := range names {
		if !strings.HasPrefix(n, "herald_") {
			continue // the Go runtime's and the process's own
		}
		_, excluded := notOnDashboard[n]
		require.True(t, shown[n] || excluded, "family %s has no panel: add one, or say in notOnDashboard why not", n)
	}
	for n := range notOnDashboard {
		require.False(t, shown[n], "%s is on the dashboard and in notOnDashboard", n)
	}
}

func TestAlerts_SayWhatToDo(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, a := range monitoring.Alerts(monitoring.DefaultThresholds()) {
		require.False(t, seen[a.Name], "alert %s twice", a.Name)
		seen[a.Name] = true
		require.Contains(t, []string{monitoring.SeverityCritical, monitoring.SeverityWarning}, a.Severity, a.Name)
		require.Positive(t, a.For, a.Name)
		require.NotEmpty(t, a.Summary, a.Name)
		require.Contains(t, a.Description, "First: ", a.Name)
		require.Regexp(t, "`(herald|curl) [^`]+`", a.Description, fmt.Sprintf("%s names the first command to run", a.Name))
	}
}
