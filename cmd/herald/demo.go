package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/internal/harness/demo"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/telemetry"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "run the engine against loopback channel servers with a mixed workload, and summarise it",
		example: "herald demo -users 500",
		run:     runDemo,
	})
}

type demoFlags struct {
	globalFlags
	keep    bool
	users   int
	timeout time.Duration
	metrics string
	console string
	otlp    string
}

func runDemo(ctx context.Context, m *Main, args []string) error {
	var f demoFlags
	fs := m.newFlagSet("demo", &f.globalFlags)
	fs.BoolVar(&f.JSON, "json", false, "print the summary as JSON (progress still goes to stderr)")
	fs.BoolVar(&f.keep, "keep", false, "leave the throwaway PostgreSQL running after the summary, until Ctrl-C")
	fs.IntVar(&f.users, "users", 200, "users in the demo's recipient directory (the workload scales with it)")
	fs.DurationVar(&f.timeout, "timeout", 50*time.Second, "give up if the workload has not finished by then")
	fs.StringVar(&f.metrics, "metrics-addr", "", "serve /metrics, /healthz and /readyz here while the demo runs, e.g. 127.0.0.1:9090")
	fs.StringVar(&f.console, "console-addr", "127.0.0.1:0", "serve the operator console here while the demo runs (and until Ctrl-C with -keep)")
	fs.StringVar(&f.otlp, "otlp-endpoint", "", "export every span over OTLP/HTTP to this URL, e.g. http://127.0.0.1:4318/v1/traces (without it, the OTEL_* variables decide, as for serve)")
	if m.Getenv("HERALD_LOG_LEVEL") == "" {
		_ = fs.Set("log-level", "error") // the progress lines are the demo's output
	}
	if err := m.parse(fs, &f.globalFlags, args); err != nil {
		return err
	}
	if err := demo.CheckCommandLine(f.users, f.timeout, f.otlp); err != nil {
		return usageError{err}
	}
	start, logger := time.Now(), m.logger(&f.globalFlags)
	tp, err := telemetry.New(ctx, f.otlp)
	if err != nil {
		return err
	}
	defer tp.Stop(ctx, logger) // flushes the spans not exported yet
	var tracer trace.TracerProvider
	if tp.Enabled {
		tracer = tp
		fmt.Fprintf(m.Stderr, "demo: tracing on, exporting spans (%s)\n", tp.Exporter)
	}
	throwaway := !m.hasTarget(&f.globalFlags)
	if throwaway {
		u, stop, err := demo.StartThrowaway(ctx, m.Stderr, logger)
		if err != nil {
			return err
		}
		defer stop()
		f.DatabaseURL = u
	}
	pool, err := m.connect(ctx, &f.globalFlags, nil) // the demo migrates it itself
	if err != nil {
		return err
	}
	return demo.Run(ctx, pool, &demo.Config{
		Users: f.users, Timeout: f.timeout, MetricsAddr: f.metrics, ConsoleAddr: f.console, Keep: throwaway && f.keep,
		DatabaseURL: connstr.Redact(f.DatabaseURL), Throwaway: throwaway, Started: start,
		Logger: logger, Progress: m.Stderr, NewClientFunc: newDemoClient, TracerProvider: tracer,
		ReportFunc: func(sum *demo.Summary) error { return output(m, f.JSON, sum, demo.WriteSummary) },
	})
}

// demoClient is the public client as internal/harness/demo uses it (internal
// packages do not import the module root). Intents and recipients are
// heraldtype's on both sides; errors keep the client's message and match
// the demo's sentinels.
type demoClient struct{ c *herald.Client }

func newDemoClient(pool *pgxpool.Pool, cfg *demo.ClientConfig) (demo.Client, error) {
	c, err := herald.NewClient(pool, &herald.Config{Actor: cfg.Actor, Logger: cfg.Logger, ResultFunc: cfg.ResultFunc,
		TracerProvider: cfg.TracerProvider})
	if err != nil {
		return nil, err
	}
	return demoClient{c}, nil
}

func (d demoClient) SubmitMany(ctx context.Context, ins []*intake.Intent) ([]demo.Result, error) {
	res, err := d.c.SubmitMany(ctx, ins)
	if err != nil {
		return nil, err
	}
	out := make([]demo.Result, len(res))
	for i, r := range res {
		out[i].Err = demoErr(r.Err)
		if r.Receipt != nil {
			out[i].NotificationID, out[i].Duplicate = r.Receipt.NotificationID, r.Receipt.Duplicate
		}
	}
	return out, nil
}

func (d demoClient) UpsertRecipient(ctx context.Context, r heraldtype.Recipient, shared bool) error {
	if shared {
		return demoErr(d.c.UpsertSharedRecipient(ctx, r))
	}
	return demoErr(d.c.UpsertRecipient(ctx, r))
}

func (d demoClient) Get(ctx context.Context, id string) error {
	_, err := d.c.Get(ctx, id)
	return demoErr(err)
}

func (d demoClient) Cancel(ctx context.Context, id, reason string) error {
	_, err := d.c.Cancel(ctx, id, &herald.CancelOpts{Reason: reason})
	return demoErr(err)
}

func (d demoClient) SetCallbackSubscription(ctx context.Context, url, secret string) error {
	return demoErr(d.c.SetCallbackSubscription(ctx, herald.CallbackSubscription{URL: url, Secret: secret}))
}
func (d demoClient) Close() { d.c.Close() }

func (d demoClient) Campaign(ctx context.Context, producer, campaign string) (*heraldtype.Campaign, error) {
	c, err := d.c.Campaign(ctx, producer, campaign)
	return c, demoErr(err)
}

func (d demoClient) CancelCampaign(ctx context.Context, producer, campaign, reason string, batch int) (int64, int, error) {
	res, err := d.c.CancelCampaign(ctx, producer, campaign, &herald.CancelCampaignOpts{Reason: reason, BatchSize: batch})
	if err != nil {
		return 0, 0, demoErr(err)
	}
	return res.Canceled, res.Batches, nil
}

// demoError is a client's error that also matches one of the demo's
// sentinels.
type demoError struct{ err, kind error }

func (e demoError) Error() string   { return e.err.Error() }
func (e demoError) Unwrap() []error { return []error{e.err, e.kind} }

func demoErr(err error) error {
	var ve *herald.ValidationError
	switch {
	case errors.Is(err, herald.ErrIdempotencyConflict):
		return demoError{err, demo.ErrConflict}
	case errors.Is(err, herald.ErrForbidden):
		return demoError{err, demo.ErrForbidden}
	case errors.Is(err, herald.ErrNotFound):
		return demoError{err, demo.ErrNotFound}
	case errors.As(err, &ve):
		return demoError{err, demo.ErrInvalid}
	}
	return err
}
