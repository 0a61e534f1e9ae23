package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/telemetry"
)

// engineParams is how the bench wants herald's engine run.
type engineParams struct {
	// DatabaseURL is the database to work.
	DatabaseURL string
	// Channel is the channel the bench's intents use ("webhook").
	Channel string
	// Deliverer is the bench channel, for an engine in this process.
	Deliverer channel.Deliverer
	// Concurrency is the channel's concurrency per process.
	Concurrency int
	// Processes is the number of engine processes.
	Processes int
	// Serve asks for `herald serve` processes even when Processes is 1.
	Serve bool
	// AsyncCommit asks for synchronous_commit off on the engine's
	// connections.
	AsyncCommit bool
	// BatchSize is the dispatcher's batch size; 0 is its default.
	BatchSize int
	// Settings are run-time settings for the engine's connections.
	Settings map[string]string
	// Discard asks serve processes for the discard driver.
	Discard bool
	// MaxConns is the size of each engine process's connection pool; River
	// gets the same.
	MaxConns int32
	// Receipts opens the engine's receipts endpoint on a loopback port.
	Receipts bool
	// TraceEndpoint, when set, turns tracing on: spans sampled at
	// TraceSample exported over OTLP/HTTP to this URL.
	TraceEndpoint string
	TraceSample   float64
	// GetenvFunc resolves the providers' credential references.
	GetenvFunc func(string) string
	// Logger is for the engine's logs.
	Logger *slog.Logger
	// ServeBinary and ServeOutput are Config's.
	ServeBinary string
	ServeOutput io.Writer
}

// runningEngine is a running herald engine.
type runningEngine interface {
	// Stop stops the engine and waits for it; it closes the engine's
	// database connections, which flushes their statistics.
	Stop() error
	// PeakRSS returns the peak resident set size of each engine process in
	// bytes, read just before Stop; for an in-process engine, this
	// process's (which includes the bench's own producers).
	PeakRSS() []int64
}

// startEngine starts herald's engine as p says: in this process (its
// dispatcher, delivering to p.Deliverer), or as p.Processes `herald serve`
// processes delivering to the bench's loopback webhook sink.
func startEngine(ctx context.Context, p *engineParams) (runningEngine, error) {
	if p.Processes > 1 || p.Serve {
		return startServeProcesses(p)
	}
	pcfg, err := pgxpool.ParseConfig(p.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = p.MaxConns
	if p.AsyncCommit {
		pcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	for k, v := range p.Settings {
		pcfg.ConnConfig.RuntimeParams[k] = v
	}
	engine.ConfigurePool(pcfg) // as herald serve runs
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	ecfg := &engine.Config{
		Logger:     p.Logger,
		GetenvFunc: p.GetenvFunc,
		Dispatch: dispatch.Config{
			Channels: map[string]dispatch.ChannelConfig{
				p.Channel: {Deliverer: p.Deliverer, Concurrency: p.Concurrency},
			},
			BatchSize: p.BatchSize,
		},
	}
	if p.Receipts {
		ecfg.ReceiptsAddr = "127.0.0.1:0"
	}
	var tp *sdktrace.TracerProvider
	if p.TraceEndpoint != "" {
		if tp, err = tracerProvider(ctx, p.TraceEndpoint, p.TraceSample); err != nil {
			pool.Close()
			return nil, err
		}
		ecfg.TracerProvider = tp
	}
	eng, err := engine.New(pool, ecfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &inProcess{cancel: cancel, done: make(chan error, 1), pool: pool, tp: tp}
	if a := eng.ReceiptsAddr(); a != nil {
		e.receiptsAddr = a.String()
	}
	go func() { e.done <- eng.Run(rctx) }()
	return e, nil
}

// inProcess is the engine running in this process.
type inProcess struct {
	cancel context.CancelFunc
	done   chan error
	pool   *pgxpool.Pool
	// receiptsAddr is the receipts endpoint's address, when it has one.
	receiptsAddr string
	// tp is the engine's tracer provider, flushed at Stop; nil without.
	tp *sdktrace.TracerProvider
}

func (e *inProcess) Stop() error {
	e.cancel()
	err := <-e.done
	if e.tp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = errors.Join(err, e.tp.Shutdown(ctx))
		cancel()
	}
	e.pool.Close()
	return err
}

// tracerProvider returns the tracer provider serve would build from
// OTEL_TRACES_EXPORTER=otlp, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint
// and OTEL_TRACES_SAMPLER=parentbased_traceidratio with ratio as its
// argument: spans batched to the OTLP/HTTP exporter.
func tracerProvider(ctx context.Context, endpoint string, ratio float64) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "herald"))),
		sdktrace.WithRawSpanLimits(telemetry.SpanLimits()),
	), nil
}

func (e *inProcess) PeakRSS() []int64 { return []int64{PeakRSS(0)} }

// webhookSecret signs the serve processes' webhooks to the sink (and River's
// worker's, in the like-for-like modes), which checks every signature.
const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// startServeProcesses runs p.Processes `herald serve` processes (of
// p.ServeBinary) delivering to the bench's loopback webhook sink.
func startServeProcesses(p *engineParams) (runningEngine, error) {
	bin := p.ServeBinary
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the herald binary: %w", err)
		}
		bin = self
	}
	out := p.ServeOutput
	if out == nil {
		out = os.Stderr
	}
	e := &serveProcesses{}
	for i := range p.Processes {
		dbURL := p.DatabaseURL
		// pgx passes unknown URL parameters on as run-time settings.
		settings := maps.Clone(p.Settings)
		if p.AsyncCommit {
			if settings == nil {
				settings = map[string]string{}
			}
			settings["synchronous_commit"] = "off"
		}
		for k, v := range settings {
			sep := "?"
			if strings.Contains(dbURL, "?") {
				sep = "&"
			}
			dbURL += sep + url.QueryEscape(k) + "=" + url.QueryEscape(v)
		}
		cmd := exec.Command(bin, "serve", "-log-format", "json", "-log-level", "warn", "-no-maintenance",
			"-max-conns", strconv.Itoa(int(p.MaxConns)))
		cmd.Env = append(os.Environ(),
			"DATABASE_URL="+dbURL,
			"HERALD_CHANNELS_WEBHOOK_CONCURRENCY="+strconv.Itoa(p.Concurrency),
		)
		if p.Discard {
			cmd.Env = append(cmd.Env, "HERALD_CHANNELS_WEBHOOK_DRIVER=discard")
		} else {
			cmd.Env = append(cmd.Env,
				"HERALD_CHANNELS_WEBHOOK_DRIVER=webhook",
				"HERALD_CHANNELS_WEBHOOK_ALLOW_PRIVATE=true",
				"HERALD_CHANNELS_WEBHOOK_SECRETS_ENV=HERALD_BENCH_WEBHOOK_SECRETS",
				"HERALD_BENCH_WEBHOOK_SECRETS="+webhookSecret,
			)
		}
		if p.BatchSize > 0 {
			cmd.Env = append(cmd.Env, "HERALD_DISPATCH_BATCH_SIZE="+strconv.Itoa(p.BatchSize))
		}
		if p.TraceEndpoint == "" {
			// Tracing as the bench says, whatever this environment says.
			cmd.Env = append(cmd.Env, "OTEL_TRACES_EXPORTER=none")
		} else {
			// The same as tracerProvider, by serve's OTEL_* variables.
			cmd.Env = append(cmd.Env,
				"OTEL_TRACES_EXPORTER=otlp",
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+p.TraceEndpoint,
				"OTEL_TRACES_SAMPLER=parentbased_traceidratio",
				"OTEL_TRACES_SAMPLER_ARG="+strconv.FormatFloat(p.TraceSample, 'g', -1, 64),
			)
		}
		cmd.Env = profileEnv(cmd.Env, "herald", i)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			_ = e.Stop()
			return nil, fmt.Errorf("start serve process %d: %w", i+1, err)
		}
		e.cmds = append(e.cmds, cmd)
	}
	return e, nil
}

// profileEnv returns env with engine.CPUProfileEnv set for the i-th (from
// 0) process of engine, when the bench's own environment sets it: each
// child writes its CPU profile to a file of its own, the path given with
// ".<engine><i+1>" added (a later phase's process overwrites an earlier
// one's: the files hold the last phase's profiles).
func profileEnv(env []string, engineName string, i int) []string {
	path := os.Getenv(engine.CPUProfileEnv)
	if path == "" {
		return env
	}
	return append(env, fmt.Sprintf("%s=%s.%s%d", engine.CPUProfileEnv, path, engineName, i+1))
}

// serveProcesses is herald serve child processes.
type serveProcesses struct{ cmds []*exec.Cmd }

// Stop stops the processes with SIGTERM (a graceful stop) and waits.
func (e *serveProcesses) Stop() error {
	var errs []error
	for _, c := range e.cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range e.cmds {
		if err := c.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	e.cmds = nil
	return errors.Join(errs...)
}

// RSS returns each process's current VmRSS.
func (e *serveProcesses) RSS() []int64 {
	out := make([]int64, len(e.cmds))
	for i, c := range e.cmds {
		out[i] = RSS(c.Process.Pid)
	}
	return out
}

// PeakRSS returns each process's VmHWM.
func (e *serveProcesses) PeakRSS() []int64 {
	out := make([]int64, len(e.cmds))
	for i, c := range e.cmds {
		out[i] = PeakRSS(c.Process.Pid)
	}
	return out
}
