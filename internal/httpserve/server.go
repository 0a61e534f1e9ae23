// Package httpserve builds every http.Server herald runs (the HTTP API, the
// receipts endpoint, the metrics endpoint), so that none listens without
// bounds: a client that sends its headers or body slowly is cut off
// (ReadHeaderTimeout, ReadTimeout), an answer the client does not read is
// abandoned (WriteTimeout), a keep-alive connection left idle is closed
// (IdleTimeout), and at most MaxConns connections are open at once (the
// next waits in the listen backlog until one closes). Without these, an
// unauthenticated client holding connections open could exhaust the
// process's file descriptors.
package httpserve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Defaults of Config.
const (
	// DefaultReadTimeout is the default Config.ReadTimeout: the whole
	// request, headers and body, must arrive within 30 seconds.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout is the default Config.WriteTimeout.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout is the default Config.IdleTimeout.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConns is the default Config.MaxConns.
	DefaultMaxConns = 1024
	// DefaultShutdownTimeout is the default Config.ShutdownTimeout.
	DefaultShutdownTimeout = 5 * time.Second
	// MaxReadHeaderTimeout caps the time to read a request's headers: the
	// ReadTimeout when shorter.
	MaxReadHeaderTimeout = 10 * time.Second
)

// Config bounds one listener. Zero values take the defaults.
type Config struct {
	// ReadTimeout is how long a request, headers and body, may take to
	// arrive, from the connection's first byte or the end of the previous
	// request. The headers alone get at most MaxReadHeaderTimeout.
	// Default 30s.
	ReadTimeout time.Duration
	// WriteTimeout is how long, from the end of the request's headers,
	// the answer may take to be written. Default 30s.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request. Default 2m.
	IdleTimeout time.Duration
	// MaxConns is how many connections may be open at once; further ones
	// wait, unaccepted, until one closes. Default 1024.
	MaxConns int
	// ShutdownTimeout is how long requests in flight may finish once
	// Serve's context is done. Default 5s.
	ShutdownTimeout time.Duration
	// Logger receives the server's own errors (a TLS handshake, a
	// malformed request) at debug level. Default: discard.
	Logger *slog.Logger
}

// WithDefaults returns c with its zero values replaced by the defaults.
func (c Config) WithDefaults() Config {
	c.ReadTimeout = cmp.Or(c.ReadTimeout, DefaultReadTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

// Validate returns an error naming the first field out of range: a
// negative timeout or connection bound.
func (c *Config) Validate() error {
	switch {
	case c.ReadTimeout < 0:
		return errors.New("ReadTimeout must not be negative")
	case c.WriteTimeout < 0:
		return errors.New("WriteTimeout must not be negative")
	case c.IdleTimeout < 0:
		return errors.New("IdleTimeout must not be negative")
	case c.MaxConns < 0:
		return errors.New("MaxConns must not be negative")
	case c.ShutdownTimeout < 0:
		return errors.New("ShutdownTimeout must not be negative")
	}
	return nil
}

// Server is an http.Server with Config's bounds. Create it with New.
type Server struct {
	srv *http.Server
	cfg Config
}

// New returns a Server of handler bounded by cfg (nil: the defaults), or
// the error of cfg.Validate.
func New(handler http.Handler, cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.WithDefaults()
	return &Server{cfg: c, srv: &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: min(c.ReadTimeout, MaxReadHeaderTimeout),
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(c.Logger.Handler(), slog.LevelDebug),
	}}, nil
}

// Listen binds addr (":8080", "127.0.0.1:0") for Serve; what names the
// listener in the error ("api", "receipts", "metrics").
func Listen(ctx context.Context, what, addr string) (net.Listener, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s address %s: %w", what, addr, err)
	}
	return ln, nil
}

// Serve serves on ln, at most Config.MaxConns connections at once, until
// ctx is done; then it stops accepting connections and lets the requests
// in flight finish, for up to Config.ShutdownTimeout. It returns nil
// after a clean shutdown, and the serve loop's or the shutdown's error
// otherwise. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(netutil.LimitListener(ln, s.cfg.MaxConns)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && serr != nil {
		return serr
	}
	if err != nil {
		_ = s.srv.Close()
		return fmt.Errorf("shut down http server: %w", err)
	}
	return nil
}
