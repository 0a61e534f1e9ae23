package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/heraldhq/herald/internal/metrics/monitoring"
)

func init() {
	register(&command{
		name:    "observability",
		summary: "print the Prometheus alert rules or the Grafana dashboard for herald's metrics",
		subs: []*command{
			{name: "alerts", summary: "print Prometheus alert rules for herald (a rules file to load with rule_files)",
				run: observabilityAlerts, readOnly: true,
				example: "herald observability alerts -lag 10m -output /etc/prometheus/rules/herald.yml"},
			{name: "dashboard", summary: "print a Grafana dashboard of every herald metric (JSON to import)",
				run: observabilityDashboard, readOnly: true,
				example: "herald observability dashboard -output herald-dashboard.json"},
		},
	})
}

func observabilityAlerts(_ context.Context, m *Main, args []string) error {
	th := monitoring.DefaultThresholds()
	return m.printFile("observability alerts", args, th.Bind, func() ([]byte, error) {
		if err := th.Validate(); err != nil {
			return nil, usageError{err}
		}
		return monitoring.Rules(th, nil)
	})
}

func observabilityDashboard(_ context.Context, m *Main, args []string) error {
	return m.printFile("observability dashboard", args, func(*flag.FlagSet) {}, monitoring.DashboardJSON)
}

// printFile runs command name, which needs no database and prints the
// file build makes, on standard output or into -output; bind adds its
// other flags.
func (m *Main) printFile(name string, args []string, bind func(*flag.FlagSet), build func() ([]byte, error)) error {
	fs := flag.NewFlagSet("herald "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	out := fs.String("output", "", "write to this `file` instead of standard output")
	bind(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.printUsage(fs, "")
			return err
		}
		return usageError{fmt.Errorf("%s: %w", name, err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	b, err := build()
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = m.Stdout.Write(b)
		return err
	}
	return os.WriteFile(*out, b, 0o644)
}
