// Package api is herald's HTTP API: the door for producers written in any
// language, with the Go client's guarantees. `herald serve` runs it on a
// listen address of its own when its configuration has an api section
// (internal/engine), beside the dispatcher and the other parts.
//
// # Endpoints
//
// The document is openapi.json in this directory (OpenAPI 3.1), served at
// /openapi.json; every route and answer of the handler is tested against
// it. In short:
//
//	POST   /v1/notifications               submit one intent (201, or 200 for a replay)
//	POST   /v1/notifications/batch         submit up to Config.MaxBatch intents, a result each
//	GET    /v1/notifications               the producer's notifications, newest first, by cursor,
//	                                       filtered by status, channel, campaign, since, until
//	GET    /v1/notifications/{id}          one notification with its routes
//	POST   /v1/notifications/{id}/cancel   cancel the routes not delivered yet (audited)
//	PUT    /v1/recipients/{user_id}        create or replace a directory entry
//	DELETE /v1/recipients/{user_id}        delete a directory entry
//	GET    /healthz, /readyz, /openapi.json
//
// The bodies are the Go client's: the intent is the JSON a producer
// INSERTs into herald.intake, decoded by the same strict decoder
// (intake.DecodeRaw), validated by intake.Validate and stored by
// accept.Accept, so the HTTP door reports the same failure codes, field
// paths and idempotency as the other two.
//
// # Identity and scope
//
// A request carries an API key (Authorization: Bearer hk_…), made with
// `herald api-keys create`. The server connects as a login of its own, a
// member of the role herald_api, and starts each request's transaction by
// setting herald.api_key to the request's key: the database's
// herald.acting_producer() then names the key's producer, and row-level
// security holds the request to that producer's rows exactly as it holds a
// producer's own login. The server checks nothing about ownership itself
// that the database would not: another producer's notification is simply
// not found (404), and an intent in another producer's name is refused by
// the database (403). A request whose key is unknown or revoked is 401.
// The key is checked before anything else of the request: a caller
// without a valid key gets 401, never a validation error. Failed
// authentications are limited per client address (Config.AuthFailureRate):
// past them the address gets 429 with Retry-After before any database
// work. A key that authenticated is limited to Config.RateLimit.
//
// # Rate limits
//
// Both limits are token buckets, and an answer subject to one says where
// it stands: every answer once a key authenticated (when Config.RateLimit
// is set) for the key's bucket, named "key"; a 401 for a key that failed,
// and the 429 of an address held back, for the address's bucket, named
// "auth-failures". The fields are the IETF httpapi draft's
// RateLimit-Policy ("key";q=400;w=2: the bucket's size, and the seconds an
// empty one takes to fill) and RateLimit ("key";r=399;t=1: requests left,
// and seconds until the bucket is full), and the same in
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (Unix
// seconds), which many client libraries read instead. A 429 also has
// Retry-After: when one request is allowed again.
//
// # Query parameters
//
// An operation takes the query parameters the document gives it, each
// once; any other, or one given twice, is a 400 naming it, after the key
// authenticated (checkQuery reads the list from the document itself).
//
// # Slow clients
//
// The server has read, write and idle timeouts and a bound on open
// connections (internal/httpserve). A body that does not arrive within the
// read timeout is answered 408 (code request_timeout) when the connection
// still takes an answer, logged at warn as a slow client, and counted
// under 408.
//
// # Errors
//
// Every error is application/problem+json (RFC 9457) with a stable type
// per failure code (urn:herald:problem:<code>), the code, the field's JSON
// path where there is one, every field error of a refused intent, and the
// request id (also in the X-Request-Id header, taken from the request's
// when it sends a sane one). Bad input is always a 4xx (a path
// parameter, query value, header or body field that is not UTF-8 text, or
// holds a NUL, is a 400 naming it); a database that does not answer is
// 503 with Retry-After.
package api

import (
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/httpserve"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/tracing"
	"github.com/heraldhq/herald/internal/wake"
)

// Defaults of Config.
const (
	// DefaultMaxBatch is the default Config.MaxBatch: 500 intents.
	DefaultMaxBatch = 500
	// DefaultMaxBodyBytes is the default Config.MaxBodyBytes: 16 MiB.
	DefaultMaxBodyBytes = 16 << 20
	// DefaultReadTimeout is the default Config.ReadTimeout.
	DefaultReadTimeout = httpserve.DefaultReadTimeout
	// DefaultWriteTimeout is the default Config.WriteTimeout.
	DefaultWriteTimeout = httpserve.DefaultWriteTimeout
	// DefaultIdleTimeout is the default Config.IdleTimeout.
	DefaultIdleTimeout = httpserve.DefaultIdleTimeout
	// DefaultMaxClientConns is the default Config.MaxClientConns.
	DefaultMaxClientConns = httpserve.DefaultMaxConns
	// DefaultAuthFailureRate is the default Config.AuthFailureRate: one
	// failed authentication per second and client address.
	DefaultAuthFailureRate = 1.0
	// DefaultAuthFailureBurst is the default Config.AuthFailureBurst.
	DefaultAuthFailureBurst = 20
	// DefaultAuthFailureAddrs is the default Config.AuthFailureAddrs.
	DefaultAuthFailureAddrs = 10000
	// DefaultRequestTimeout is the default Config.RequestTimeout.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultShutdownTimeout is the default Config.ShutdownTimeout.
	DefaultShutdownTimeout = 20 * time.Second
	// RetryAfterUnavailable is the Retry-After, in seconds, of a 503.
	RetryAfterUnavailable = 2
)

//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the API's OpenAPI 3.1 document, as /openapi.json serves
// it. The slice must not be modified.
func OpenAPI() []byte { return openAPIDocument }

// Config configures a Server.
type Config struct {
	// Pool connects as a login that is a member of herald_api (never the
	// engine's owning login, which row-level security does not hold).
	// Required.
	Pool *pgxpool.Pool
	// Logger receives one line per request (request_id, producer, status,
	// duration). Default: discard.
	Logger *slog.Logger
	// Metrics records herald_api_requests_total, the request durations and
	// herald_intents_total; nil records nothing.
	Metrics *metrics.Metrics
	// TracerProvider, when set, makes a server span of each request,
	// continuing the caller's trace from its traceparent header. Intents
	// submitted without a trace_id store the span's traceparent (see
	// accept.Accept). Nil makes none.
	TracerProvider trace.TracerProvider
	// ReadyFunc, if set, is /readyz's check besides a ping of Pool: nil
	// when every migration is applied. The API's login cannot read the
	// migration table itself; the engine passes its own check.
	ReadyFunc func(context.Context) error

	// MaxBatch caps the intents of one batch submit. Default 500.
	MaxBatch int
	// MaxBodyBytes caps a request body (a batch's; a single intent is held
	// to Limits.MaxEntryBytes, 256 KiB by default). Default 16 MiB.
	MaxBodyBytes int64
	// RateLimit is the requests per second one API key may make, with
	// bursts of RateBurst (default: one second's worth, at least 1); 0
	// means no limit. It is per serve process.
	RateLimit float64
	RateBurst int
	// AuthFailureRate is the failed authentications per second one client
	// address (an IPv4 address, an IPv6 /64) may make, with bursts of
	// AuthFailureBurst; past them its requests are answered 429 before
	// any database work. At most AuthFailureAddrs addresses are tracked,
	// the least recently failed forgotten first. Defaults 1/s, 20 and
	// 10000.
	AuthFailureRate  float64
	AuthFailureBurst int
	AuthFailureAddrs int
	// ReadTimeout, WriteTimeout and IdleTimeout are the http.Server's
	// (internal/httpserve): a request must arrive within ReadTimeout, its
	// answer be written within WriteTimeout, and an idle keep-alive
	// connection is closed after IdleTimeout. MaxClientConns bounds the
	// connections open at once. RequestTimeout bounds one request's
	// database work. Defaults 30s, 30s, 2m, 1024 and 10s.
	ReadTimeout    time.Duration
	WriteTimeout   time.Duration
	IdleTimeout    time.Duration
	MaxClientConns int
	RequestTimeout time.Duration
	// ShutdownTimeout is how long requests in flight may finish once Serve's
	// context is done. Default 20s.
	ShutdownTimeout time.Duration

	// Limits bounds intents, as the SQL door's and the Go client's do.
	Limits intake.Limits
	// IdempotencyWindow is how long keys stay reserved. Default 48 hours.
	IdempotencyWindow time.Duration
	// NotifyDebounce is the dispatchers' wake-up hint's window, as the Go
	// client's Config.NotifyDebounce. Default 5 ms.
	NotifyDebounce time.Duration
	// NowFunc, if set, replaces the clock of validation; for tests.
	NowFunc func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("Pool is required")
	case c.MaxBatch < 0:
		return errors.New("MaxBatch must not be negative")
	case c.MaxBodyBytes < 0:
		return errors.New("MaxBodyBytes must not be negative")
	case c.RateLimit < 0:
		return errors.New("RateLimit must not be negative")
	case c.RateBurst < 0:
		return errors.New("RateBurst must not be negative")
	case c.AuthFailureRate < 0 || c.AuthFailureBurst < 0 || c.AuthFailureAddrs < 0:
		return errors.New("AuthFailureRate, AuthFailureBurst and AuthFailureAddrs must not be negative")
	case c.MaxClientConns < 0:
		return errors.New("MaxClientConns must not be negative")
	case c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 || c.RequestTimeout < 0 || c.ShutdownTimeout < 0:
		return errors.New("timeouts must not be negative")
	case c.IdempotencyWindow != 0 && c.IdempotencyWindow < time.Second:
		return errors.New("IdempotencyWindow must be at least 1s")
	}
	return nil
}

// Server is the HTTP API. Create it with New; serve it with Serve, or
// mount Handler in a server of your own.
type Server struct {
	cfg     Config
	pool    *pgxpool.Pool
	logger  *slog.Logger
	metrics *metrics.Metrics
	tracer  trace.Tracer // nil: no spans
	limits  intake.Limits
	waker   *wake.Waker
	limiter *limiter
	guard   *authGuard // failed authentications per client address
	// pipeline is intake's, as every door runs it.
	pipeline accept.Pipeline
	mux      *http.ServeMux
	handler  http.Handler

	touchMu sync.Mutex
	touched map[[sha256.Size]byte]time.Time // when each key's last_used_at was last written
}

// New returns a Server on cfg.Pool, or an error naming the invalid Config
// field. It touches nothing yet.
func New(cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new api server: %w", err)
	}
	c := *cfg
	c.MaxBatch = cmp.Or(c.MaxBatch, DefaultMaxBatch)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, DefaultReadTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.MaxClientConns = cmp.Or(c.MaxClientConns, DefaultMaxClientConns)
	c.AuthFailureRate = cmp.Or(c.AuthFailureRate, DefaultAuthFailureRate)
	c.AuthFailureBurst = cmp.Or(c.AuthFailureBurst, DefaultAuthFailureBurst)
	c.AuthFailureAddrs = cmp.Or(c.AuthFailureAddrs, DefaultAuthFailureAddrs)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.IdempotencyWindow = cmp.Or(c.IdempotencyWindow, accept.DefaultIdempotencyWindow)
	logger := cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	s := &Server{
		cfg:     c,
		pool:    c.Pool,
		logger:  logger,
		metrics: c.Metrics,
		limits:  c.Limits.WithDefaults(),
		waker:   wake.NewWaker(c.Pool, c.NotifyDebounce, logger),
		limiter: newLimiter(c.RateLimit, c.RateBurst),
		guard:   newAuthGuard(c.AuthFailureRate, c.AuthFailureBurst, c.AuthFailureAddrs),
		touched: map[[sha256.Size]byte]time.Time{},
	}
	s.pipeline = accept.Pipeline{
		Limits:            s.limits,
		Content:           content.NewChecker(&content.CheckerConfig{Logger: logger}),
		IdempotencyWindow: c.IdempotencyWindow,
		Waker:             s.waker,
	}
	if c.TracerProvider != nil {
		s.tracer = tracing.Tracer(c.TracerProvider)
	}
	s.mux = s.routes()
	s.handler = s.middleware(s.mux)
	return s, nil
}

// Handler returns the API's handler: every route, with request ids,
// logging, metrics and panics answered as 500 problems.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds addr for Serve (":8080", "127.0.0.1:0").
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	return httpserve.Listen(ctx, "api", addr)
}

// Serve serves the API on ln until ctx is done, then stops accepting
// connections and lets the requests in flight finish, for up to
// Config.ShutdownTimeout; it returns nil after a clean shutdown, and the
// serve loop's error otherwise. It closes ln. The server has the
// Config's read, write and idle timeouts and its bound on connections
// (internal/httpserve).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.waker.Close()
	srv, err := httpserve.New(s.handler, &httpserve.Config{
		ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout,
		MaxConns: s.cfg.MaxClientConns, ShutdownTimeout: s.cfg.ShutdownTimeout, Logger: s.logger,
	})
	if err != nil {
		return fmt.Errorf("api server: %w", err)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("api server: %w", err)
	}
	return nil
}

// ErrNotAPILogin is returned by Connect when the URL's login is not one
// the API may serve as: a member of herald_api that row-level security
// holds (not a superuser, not BYPASSRLS, not the schema's owner).
var ErrNotAPILogin = errors.New("the API's database login must be a member of herald_api, and neither a superuser, nor BYPASSRLS, nor the schema's owner")

// Connect returns a pool on url for Config.Pool, sized maxConns (0: the
// URL's or pgx's default), after checking that its login is one the API
// may serve as (ErrNotAPILogin otherwise): a login that bypasses row-level
// security would see every producer's rows.
func Connect(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("api database url: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("api database: %w", err)
	}
	ok, err := store.New().LoginActsForAPIKeys(ctx, pool)
	if err == nil && !ok {
		err = ErrNotAPILogin
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("api database login %s: %w", cfg.ConnConfig.User, err)
	}
	return pool, nil
}
