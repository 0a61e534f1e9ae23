package console

import (
	"context"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/httpserve"
)

// FromConfig returns the console's Config from the console section of
// serve's configuration, signing people in to the database databaseURL
// names (serve's own) unless the section names another; nil when the
// section sets no listen address: the console is off.
func FromConfig(c config.Console, databaseURL string, logger *slog.Logger) *Config {
	if c.Listen == "" {
		return nil
	}
	if c.DatabaseURL != "" {
		databaseURL = c.DatabaseURL
	}
	return &Config{
		Listen: c.Listen, DatabaseURL: databaseURL, SessionIdle: c.SessionIdle, SecureCookies: c.SecureCookies,
		Server: httpserve.Config{ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout, IdleTimeout: c.IdleTimeout,
			MaxConns: c.MaxClientConns},
		Logger: logger.With("component", "console"),
	}
}

// RunBeside runs run and, when cfg is not nil, a console beside it, until
// run returns or the console fails (each stops the other); it returns the
// first error. A console that cannot start (a bad setting, an address in
// use) returns its error before run starts.
func RunBeside(ctx context.Context, cfg *Config, run func(context.Context) error) error {
	if cfg == nil {
		return run(ctx)
	}
	c, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	c.logger.Info("console listening", "addr", c.Addr().String())
	g, gctx := errgroup.WithContext(ctx)
	cctx, stop := context.WithCancel(gctx)
	g.Go(func() error { return c.Run(cctx) })
	g.Go(func() error {
		defer stop()
		return run(gctx)
	})
	return g.Wait()
}
