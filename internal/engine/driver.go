package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/channel/logch"
	"github.com/heraldhq/herald/internal/channel/smppch"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/httpserve"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/smpp"
	"github.com/heraldhq/herald/internal/sqldoor"
)

// LogChannels logs, one record each, the channels c configures: their
// driver and the dispatcher's settings for them, defaults filled in, as
// `herald serve` starts.
func LogChannels(logger *slog.Logger, c *config.Config) {
	for _, name := range c.ChannelNames() {
		ch := c.Channels[name]
		logger.Info("channel configured", "channel", name, "driver", ch.Driver,
			"concurrency", cmp.Or(ch.Concurrency, dispatch.DefaultConcurrency),
			"max_attempts", cmp.Or(ch.MaxAttempts, dispatch.DefaultMaxAttempts),
			"timeout", cmp.Or(ch.Timeout, dispatch.DefaultTimeout))
	}
}

// FromConfig returns the engine configuration `herald serve`'s
// configuration file c describes: the dispatcher's and the intake worker's
// settings, and c's channels as Drivers, with tracing as the OTEL_*
// environment variables say (TracesFromEnv). The caller adds what the file
// does not say (Logger, GetenvFunc, Registry, MetricsAddr, MetricsServer,
// Maintenance).
func FromConfig(c *config.Config) *Config {
	return &Config{
		TracesFromEnv: true,
		Dispatch: dispatch.Config{
			BatchSize:        c.Dispatch.BatchSize,
			PollInterval:     c.Dispatch.PollInterval,
			ShutdownTimeout:  c.Dispatch.ShutdownTimeout,
			LockTimeout:      c.Dispatch.LockTimeout,
			StatementTimeout: c.Dispatch.StatementTimeout,
			StallTimeout:     c.Dispatch.StallTimeout,
		},
		Drivers:      c.Channels,
		ReceiptsAddr: c.Receipts.Listen,
		ReceiptsServer: httpserve.Config{
			ReadTimeout:  c.Receipts.ReadTimeout,
			WriteTimeout: c.Receipts.WriteTimeout,
			IdleTimeout:  c.Receipts.IdleTimeout,
			MaxConns:     c.Receipts.MaxClientConns,
		},
		Receipts: receipt.MatcherConfig{
			BatchSize:    c.Receipts.BatchSize,
			PollInterval: c.Receipts.PollInterval,
		},
		Callbacks: Callbacks{
			Disabled:     c.Callbacks.Disabled,
			Concurrency:  c.Callbacks.Concurrency,
			MaxAttempts:  c.Callbacks.MaxAttempts,
			Backoff:      dispatch.BackoffConfig{Base: c.Callbacks.Backoff.Base, Cap: c.Callbacks.Backoff.Cap},
			Timeout:      c.Callbacks.Timeout,
			Lease:        c.Callbacks.Lease,
			AllowPrivate: c.Callbacks.AllowPrivate,
			AllowHosts:   c.Callbacks.AllowHosts,
			DenyCIDRs:    c.Callbacks.DenyCIDRs,
		},
		API:     apiConfig(c),
		APIAddr: c.API.Listen,
		Process: &Process{Heartbeat: c.Heartbeat.Interval, Console: c.Console.Listen},
		Intake: &sqldoor.WorkerConfig{
			BatchSize:    c.Intake.BatchSize,
			PollInterval: c.Intake.PollInterval,
			Limits: intake.Limits{
				MaxPayloadBytes: c.Intake.MaxPayloadBytes,
				MaxSMSSegments:  c.Intake.MaxSMSSegments,
			},
			IdempotencyWindow: c.Intake.IdempotencyWindow,
		},
	}
}

// apiConfig returns the HTTP API's configuration of c, nil when
// api.listen is not set. Its Pool is the caller's to connect (api.Connect,
// on c.API.DatabaseURL); its limits and idempotency window are the SQL
// door's, so that the doors agree.
func apiConfig(c *config.Config) *api.Config {
	if c.API.Listen == "" {
		return nil
	}
	a := c.API
	return &api.Config{
		MaxBatch: a.MaxBatch, MaxBodyBytes: a.MaxBodyBytes, RateLimit: a.RateLimit, RateBurst: a.RateBurst,
		AuthFailureRate: a.AuthFailureRate, AuthFailureBurst: a.AuthFailureBurst, AuthFailureAddrs: a.AuthFailureAddrs,
		ReadTimeout: a.ReadTimeout, WriteTimeout: a.WriteTimeout, IdleTimeout: a.IdleTimeout,
		MaxClientConns: a.MaxClientConns,
		RequestTimeout: a.RequestTimeout, ShutdownTimeout: a.ShutdownTimeout,
		Limits:            intake.Limits{MaxPayloadBytes: c.Intake.MaxPayloadBytes, MaxSMSSegments: c.Intake.MaxSMSSegments},
		IdempotencyWindow: c.Intake.IdempotencyWindow,
	}
}

// ConnectAPI connects the HTTP API's pool, when cfg (FromConfig's answer
// for c) has the API on, as c's api.database_url (read through getenv)
// says, and sets it as cfg.API.Pool. The caller closes the pool it returns
// (nil when the API is off) after the engine has stopped.
func ConnectAPI(ctx context.Context, c *config.Config, cfg *Config, getenv func(string) string) (*pgxpool.Pool, error) {
	if cfg.API == nil {
		return nil, nil
	}
	url, err := c.API.DatabaseURL.Resolve(getenvOrNone(getenv))
	if err != nil {
		return nil, fmt.Errorf("api.database_url: %w", err)
	}
	pool, err := api.Connect(ctx, url, int32(c.API.MaxConns))
	if err != nil {
		return nil, err
	}
	cfg.API.Pool = pool
	return pool, nil
}

// channelConfig returns the dispatcher's configuration of channel name as
// ch configures it, with a Deliverer built by ch's driver; secrets are read
// here, through getenv or their files.
func channelConfig(name string, ch config.Channel, env driverEnv) (dispatch.ChannelConfig, error) {
	d, err := deliverer(name, ch, env)
	if err != nil {
		return dispatch.ChannelConfig{}, err
	}
	return dispatch.ChannelConfig{
		Deliverer:   d,
		Concurrency: ch.Concurrency,
		MaxAttempts: ch.MaxAttempts,
		Backoff:     dispatch.BackoffConfig{Base: ch.Backoff.Base, Cap: ch.Backoff.Cap},
		Timeout:     ch.Timeout,
		Lease:       ch.Lease,
	}, nil
}

// driverEnv is what building a Deliverer needs beside its settings: the
// environment its secrets name, a logger, and where the SMPP driver
// stores receipts and inbound messages: receipts, the engine's one Group,
// so that the deliver_sm every bind hands over at once share a commit
// (nil: it refuses them, so the SMSC sends them again), with the metrics
// that count them.
type driverEnv struct {
	getenv   func(string) string
	logger   *slog.Logger
	receipts *receipt.Group
	metrics  *metrics.Metrics
}

// driverFunc builds the Deliverer of channel (or provider) name, which ch
// configures with one driver.
type driverFunc func(name string, ch config.Channel, env driverEnv) (channel.Deliverer, error)

// drivers maps each driver name to what builds it: the driver's own
// package turns its settings into its Config (reading secrets through
// getenv), and this table adds what only the engine has. Errors name the
// field under the driver's section key ("smtp.password: …").
var drivers = map[string]driverFunc{
	config.DriverWebhook: func(_ string, ch config.Channel, env driverEnv) (channel.Deliverer, error) {
		cfg, err := ch.Webhook.Config(env.getenv)
		if err != nil {
			return nil, fmt.Errorf("webhook.%w", err)
		}
		cfg.Timeout, cfg.Logger, cfg.Concurrency = ch.Timeout, env.logger, ch.Concurrency
		return built(webhook.New(cfg))
	},
	config.DriverSMTP: func(_ string, ch config.Channel, env driverEnv) (channel.Deliverer, error) {
		cfg, err := ch.SMTP.Config(env.getenv)
		if err != nil {
			return nil, fmt.Errorf("smtp.%w", err)
		}
		cfg.Timeout, cfg.Logger = ch.Timeout, env.logger
		return built(email.New(cfg))
	},
	config.DriverSMSHTTP: func(name string, ch config.Channel, env driverEnv) (channel.Deliverer, error) {
		cfg, err := ch.SMSHTTP.Config(env.getenv)
		if err != nil {
			return nil, fmt.Errorf("sms_http.%w", err)
		}
		cfg.Timeout, cfg.Logger, cfg.Provider, cfg.Concurrency = ch.Timeout, env.logger, name, ch.Concurrency
		return built(sms.New(cfg))
	},
	config.DriverSMPP: func(name string, ch config.Channel, env driverEnv) (channel.Deliverer, error) {
		cfg, err := ch.SMPP.Config(name, env.getenv)
		if err != nil {
			return nil, fmt.Errorf("smpp.%w", err)
		}
		cfg.ReceiptFunc, cfg.InboundFunc, cfg.Logger = env.smppReceipt(name), env.smppInbound(name), env.logger
		return built(smppch.New(cfg))
	},
	config.DriverLog: func(name string, _ config.Channel, env driverEnv) (channel.Deliverer, error) {
		return built(logch.New(logch.Config{Logger: env.logger, Channel: name}))
	},
	config.DriverDiscard: func(string, config.Channel, driverEnv) (channel.Deliverer, error) {
		return channel.Discard, nil
	},
}

// deliverer builds one channel's (or provider's) Deliverer with its
// driver's entry in drivers.
func deliverer(name string, ch config.Channel, env driverEnv) (channel.Deliverer, error) {
	build, ok := drivers[ch.Driver]
	if !ok {
		return nil, fmt.Errorf("driver: %q is not webhook, smtp, sms-http, smpp, log or discard", cmp.Or(ch.Driver, "(empty)"))
	}
	return build(name, ch, env)
}

// smppReceipt returns where provider's SMPP binds store delivery
// receipts: in the database, before the SMSC is answered; a failed store
// answers it with an error, and it sends them again.
func (env driverEnv) smppReceipt(provider string) smpp.ReceiptFunc {
	return func(ctx context.Context, r smpp.Receipt) error {
		if env.receipts == nil {
			return errors.New("no database to store the receipt in")
		}
		err := env.receipts.Store(ctx, receipt.Receipt{Provider: provider,
			ProviderMessageID: r.ProviderMessageID, Status: r.Status, ErrorCode: r.ErrorCode,
			Raw: r.Raw, Source: receipt.SourceSMPP})
		if err == nil {
			env.metrics.ReceiptReceived(provider, receipt.SourceSMPP)
		}
		return err
	}
}

// smppInbound returns where provider's SMPP binds store mobile-originated
// messages, as smppReceipt stores receipts.
func (env driverEnv) smppInbound(provider string) smpp.InboundFunc {
	return func(ctx context.Context, m smpp.Inbound) error {
		if env.receipts == nil {
			return errors.New("no database to store the inbound message in")
		}
		return env.receipts.StoreInbound(ctx, receipt.Inbound{Provider: provider,
			From: m.From, To: m.To, Body: m.Body, DataCoding: m.DataCoding})
	}
}

// built returns d as a Deliverer, or a nil Deliverer (not a nil *T in an
// interface) with err.
func built[T channel.Deliverer](d T, err error) (channel.Deliverer, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}
