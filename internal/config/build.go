package config

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/channel/logch"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/metrics"
)

// DispatchConfig builds every channel's Deliverer and returns the
// dispatcher's configuration, with closeFunc releasing the deliverers'
// connections. Secrets are read here, through getenv or their files.
func (c *Config) DispatchConfig(getenv func(string) string, logger *slog.Logger, met *metrics.Metrics) (_ *dispatch.Config, closeFunc func(), err error) {
	var closers []func() error
	closeFunc = func() {
		for _, f := range closers {
			_ = f()
		}
	}
	defer func() {
		if err != nil {
			closeFunc()
		}
	}()
	out := &dispatch.Config{
		Channels:        map[string]dispatch.ChannelConfig{},
		BatchSize:       c.Dispatch.BatchSize,
		PollInterval:    c.Dispatch.PollInterval,
		ShutdownTimeout: c.Dispatch.ShutdownTimeout,
		Logger:          logger,
		Metrics:         met,

		LockTimeout:      c.Dispatch.LockTimeout,
		StatementTimeout: c.Dispatch.StatementTimeout,
		StallTimeout:     c.Dispatch.StallTimeout,
	}
	for _, name := range c.ChannelNames() {
		ch := c.Channels[name]
		// Every deliverer logs its own "channel" key.
		d, closer, err := ch.deliverer(name, getenv, logger)
		if err != nil {
			return nil, nil, fmt.Errorf("channels.%s: %w", name, err)
		}
		if closer != nil {
			closers = append(closers, closer)
		}
		out.Channels[name] = dispatch.ChannelConfig{
			Deliverer:   d,
			Concurrency: ch.Concurrency,
			MaxAttempts: ch.MaxAttempts,
			Backoff:     dispatch.BackoffConfig{Base: ch.Backoff.Base, Cap: ch.Backoff.Cap},
			Timeout:     ch.Timeout,
			Lease:       ch.Lease,
		}
	}
	return out, closeFunc, nil
}

// IntakeConfig returns the SQL intake worker's configuration.
func (c *Config) IntakeConfig(logger *slog.Logger, met *metrics.Metrics) *intake.WorkerConfig {
	return &intake.WorkerConfig{
		Logger:       logger,
		BatchSize:    c.Intake.BatchSize,
		PollInterval: c.Intake.PollInterval,
		ResultFunc:   met.Intent,
		Limits: intake.Limits{
			MaxPayloadBytes: c.Intake.MaxPayloadBytes,
			MaxSMSSegments:  c.Intake.MaxSMSSegments,
		},
		IdempotencyWindow: c.Intake.IdempotencyWindow,
	}
}

// deliverer builds one channel's Deliverer; the closer, if not nil,
// releases its connections.
func (ch Channel) deliverer(name string, getenv func(string) string, logger *slog.Logger) (channel.Deliverer, func() error, error) {
	switch ch.Driver {
	case DriverWebhook:
		secrets, err := ch.Webhook.Secrets.Resolve(getenv)
		if err != nil {
			return nil, nil, fmt.Errorf("webhook.secrets: %w", err)
		}
		d, err := webhook.New(webhook.Config{
			Timeout:      ch.Timeout,
			Secrets:      strings.Fields(secrets),
			AllowPrivate: ch.Webhook.AllowPrivate,
			AllowHosts:   ch.Webhook.AllowHosts,
			DenyCIDRs:    ch.Webhook.DenyCIDRs,
			Logger:       logger,
		})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	case DriverSMTP:
		s := ch.SMTP
		var password string
		if s.Username != "" {
			var err error
			if password, err = s.Password.Resolve(getenv); err != nil {
				return nil, nil, fmt.Errorf("smtp.password: %w", err)
			}
		}
		d, err := email.New(email.Config{
			Host:     s.Host,
			Port:     s.Port,
			Username: s.Username,
			Password: password,
			From:     s.From,
			TLS:      s.TLS,
			Timeout:  ch.Timeout,
			HeloName: s.HeloName,
			Logger:   logger,
		})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	case DriverSMSHTTP:
		s := ch.SMSHTTP
		key, err := s.APIKey.Resolve(getenv)
		if err != nil {
			return nil, nil, fmt.Errorf("sms_http.api_key: %w", err)
		}
		d, err := sms.New(sms.Config{
			URL:             s.URL,
			APIKey:          key,
			AuthHeader:      s.AuthHeader,
			From:            s.From,
			Format:          s.Format,
			ToField:         s.ToField,
			FromField:       s.FromField,
			BodyField:       s.BodyField,
			ResponseIDField: s.ResponseIDField,
			Timeout:         ch.Timeout,
			Logger:          logger,
		})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	case DriverLog:
		d, err := logch.New(logch.Config{Logger: logger, Channel: name})
		if err != nil {
			return nil, nil, err
		}
		return d, nil, nil
	case DriverDiscard:
		return channel.Discard, nil, nil
	}
	return nil, nil, fmt.Errorf("driver: %q is not webhook, smtp, sms-http, log or discard", cmp.Or(ch.Driver, "(empty)"))
}
