package metrics

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultCheckTimeout bounds one /healthz or /readyz check.
const DefaultCheckTimeout = 2 * time.Second

// NewRegistry returns a registry with the Go runtime and process collectors
// registered: what `herald serve` exposes besides herald's own families.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// HandlerConfig configures the HTTP handler of NewHandler.
type HandlerConfig struct {
	// Pool is the database /healthz and /readyz check. Required.
	Pool *pgxpool.Pool
	// Gatherer is what /metrics exposes. Required.
	Gatherer prometheus.Gatherer
	// CheckTimeout bounds each health check. Defaults to DefaultCheckTimeout.
	CheckTimeout time.Duration
	// CurrentFunc reports whether every migration is applied; defaults to
	// schema's Migrator.Current on Pool.
	CurrentFunc func(context.Context) (bool, error)
	// Logger receives failed checks at debug level (a probe that fails is
	// the prober's news, not the log's). Defaults to a logger that discards.
	Logger *slog.Logger
	// ProgressFunc, if set, reports whether the dispatcher is making
	// progress: nil while it is (or has nothing to do), else an error
	// saying (dispatcher first) which part has been failing or stuck for
	// how long.
	// /readyz answers 503 with "dispatching": false and that error while
	// it returns one. It must not block: it is called on every probe.
	ProgressFunc func() error
}

func (c *HandlerConfig) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("Pool is required")
	case c.Gatherer == nil:
		return errors.New("Gatherer is required")
	case c.CheckTimeout < 0:
		return errors.New("CheckTimeout must not be negative")
	}
	return nil
}

// Check is the JSON body of /healthz and /readyz.
type Check struct {
	// OK is true when the process can serve: the status code is 200, else
	// 503.
	OK bool `json:"ok"`
	// Database says whether a ping reached the database.
	Database bool `json:"database"`
	// SchemaCurrent says whether every migration is applied (/readyz only).
	SchemaCurrent *bool `json:"schema_current,omitempty"`
	// Dispatching says whether the dispatcher is making progress (/readyz
	// only, when HandlerConfig.ProgressFunc is set): false while its claims
	// or completions have been failing (a lock they wait for, a database
	// that cancels them) for longer than its stall timeout.
	Dispatching *bool `json:"dispatching,omitempty"`
	// Error says what failed.
	Error string `json:"error,omitempty"`
}

// NewHandler returns the observability HTTP handler:
//
//   - /metrics: the Prometheus exposition of Gatherer;
//   - /healthz: 200 when the process is up and the database answers a ping;
//   - /readyz: 200 when the database answers, every migration (herald's
//     and River's) is applied and, if ProgressFunc is set, the dispatcher
//     is making progress; 503 otherwise, so a process on a database with a
//     pending migration takes no traffic, and one whose claims or
//     completions are stuck (behind a table lock, say) says so while
//     /healthz still answers: restarting the process would not release
//     someone else's lock.
//
// Health bodies are JSON (Check). It returns an error naming a missing
// HandlerConfig field.
func NewHandler(cfg *HandlerConfig) (http.Handler, error) {
	if cfg == nil {
		cfg = &HandlerConfig{}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("metrics handler config: %w", err)
	}
	c := *cfg
	c.CheckTimeout = cmp.Or(c.CheckTimeout, DefaultCheckTimeout)
	logger := cmp.Or(c.Logger, slog.New(slog.DiscardHandler))

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(c.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), c.CheckTimeout)
		defer cancel()
		var chk Check
		if err := c.Pool.Ping(ctx); err != nil {
			chk.Error = "database: " + err.Error()
		} else {
			chk.Database, chk.OK = true, true
		}
		writeCheck(w, logger, "healthz", chk)
	})
	ready := newReadiness(&c)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		writeCheck(w, logger, "readyz", ready.check(r.Context()))
	})
	return mux, nil
}

func writeCheck(w http.ResponseWriter, logger *slog.Logger, name string, chk Check) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !chk.OK {
		logger.Debug("health check failed", "check", name, "err", chk.Error)
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(chk)
}
