package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/schema"
)

// ModeRiverWorker is the `herald bench -mode` of a River worker process:
// the River side of a comparison whose herald side runs as serve
// processes. The bench starts these itself, one per serve process, and
// tells each what to do through the environment (riverWorkerEnv...).
const ModeRiverWorker = "river-worker"

// The environment of a River worker process.
const (
	// riverWorkerEnv is what its worker does with a job: "webhook" (POST
	// it through herald's webhook driver to the job's destination, the
	// sink) or "discard" (nothing, as serve's discard driver).
	riverWorkerEnv = "HERALD_BENCH_RIVER_WORKER"
	// riverConcurrencyEnv is MaxWorkers; riverConnsEnv the pool's size.
	riverConcurrencyEnv = "HERALD_BENCH_RIVER_CONCURRENCY"
	riverConnsEnv       = "HERALD_BENCH_RIVER_MAX_CONNS"
)

// RunRiverWorker is a River worker process (ModeRiverWorker): one working
// client on the database at DATABASE_URL, its worker as getenv's
// riverWorkerEnv says, until ctx ends; then it stops the client, which
// finishes the jobs in hand. With engine.CPUProfileEnv set, it writes its
// CPU profile there, as a serve process does.
func RunRiverWorker(ctx context.Context, getenv func(string) string, logger *slog.Logger) error {
	concurrency, err := strconv.Atoi(getenv(riverConcurrencyEnv))
	if err != nil || concurrency < 1 {
		return fmt.Errorf("%s: want a positive count", riverConcurrencyEnv)
	}
	conns, err := strconv.Atoi(getenv(riverConnsEnv))
	if err != nil || conns < 1 {
		return fmt.Errorf("%s: want a positive count", riverConnsEnv)
	}
	var d channel.Deliverer
	switch kind := getenv(riverWorkerEnv); kind {
	case "webhook":
		d, err = newWebhookDeliverer(concurrency)
	case "discard":
		d = channel.Discard
	default:
		return fmt.Errorf("%s %q: want webhook or discard", riverWorkerEnv, kind)
	}
	if err != nil {
		return err
	}
	defer closeDeliverer(d)
	if path := getenv(engine.CPUProfileEnv); path != "" {
		stop, err := engine.StartCPUProfile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", engine.CPUProfileEnv, err)
		}
		defer stop()
	}
	w, err := startRiverWorker(ctx, getenv("DATABASE_URL"), concurrency, int32(conns), d, nil, logger)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return w.stop()
}

// riverWork is one running River working client and its pool.
type riverWork struct {
	client *river.Client[pgx.Tx]
	pool   *pgxpool.Pool
}

// startRiverWorker starts a River working client on a pool of its own of
// conns connections: the settings of River's own benchmark, MaxWorkers
// concurrency, its worker delivering through d (with herald's backoff as
// its retry policy), or calling the bench channel sk when d is nil.
func startRiverWorker(ctx context.Context, url string, concurrency int, conns int32, d channel.Deliverer, sk *sink, logger *slog.Logger) (*riverWork, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	pcfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{sink: sk, deliver: d})
	rc := &river.Config{
		Schema:            schema.Name,
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Queues:            map[string]river.QueueConfig{riverQueue: {MaxWorkers: concurrency}},
		Workers:           workers,
		Logger:            slog.New(warnOnly{logger.Handler()}),
	}
	if d != nil {
		rc.RetryPolicy = newHeraldBackoff()
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("create river client: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("start river client: %w", err)
	}
	return &riverWork{client: client, pool: pool}, nil
}

// stop stops the client, waiting for the jobs in hand, and closes the pool.
func (w *riverWork) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := w.client.Stop(ctx)
	w.pool.Close()
	return err
}

// startRiverProcesses starts n River worker processes (of bin, this
// executable when empty) doing what worker says ("webhook", "discard"),
// their output to out (os.Stderr when nil).
func startRiverProcesses(n int, bin, dbURL, worker string, concurrency int, conns int32, out io.Writer) (*serveProcesses, error) {
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the herald binary: %w", err)
		}
		bin = self
	}
	if out == nil {
		out = os.Stderr
	}
	e := &serveProcesses{}
	for i := range n {
		cmd := exec.Command(bin, "bench", "-mode", ModeRiverWorker, "-log-format", "json", "-log-level", "warn")
		cmd.Env = append(os.Environ(),
			"DATABASE_URL="+dbURL,
			riverWorkerEnv+"="+worker,
			riverConcurrencyEnv+"="+strconv.Itoa(concurrency),
			riverConnsEnv+"="+strconv.Itoa(int(conns)),
		)
		cmd.Env = profileEnv(cmd.Env, "river", i)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			return nil, errors.Join(fmt.Errorf("start river worker process %d: %w", i+1, err), e.Stop())
		}
		e.cmds = append(e.cmds, cmd)
	}
	return e, nil
}
