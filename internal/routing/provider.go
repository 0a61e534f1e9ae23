package routing

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/store"
)

// Provider is one provider as herald.providers holds it: a named instance
// of a driver for one channel. Credentials are references only.
type Provider struct {
	// Name is "<channel>/<name>", e.g. "sms/acme".
	Name    string
	Channel string
	Driver  string
	// Concurrency is the deliveries in flight per serve process; 0 means
	// the channel's.
	Concurrency int
	// CapPerSecond is the submissions per second across every serve
	// process; 0 means no cap.
	CapPerSecond int
	// Timeout is one attempt's; 0 means the channel's.
	Timeout time.Duration
	Circuit Circuit

	// The driver's settings; only Driver's is used.
	Webhook config.WebhookDriver
	SMTP    config.SMTPDriver
	SMSHTTP config.SMSHTTPDriver
	SMPP    config.SMPPDriver

	// Receipts is how the provider sends delivery receipts; nil when it
	// sends none.
	Receipts *Receipts

	// State is herald.providers.state: StateEnabled ("" reads the same),
	// StateDraining or StateDisabled. It is the operator's, not the
	// file's (herald providers disable, drain, enable), and no part of
	// the driver's configuration: a change keeps the provider's
	// connections.
	State string `json:"-"`
}

// Provider states (herald.providers.state).
const (
	// StateEnabled: routing sends the provider new attempts.
	StateEnabled = "enabled"
	// StateDraining: routing sends it no new attempt; what it holds
	// already (in flight, or waiting in its lane for its cap) finishes
	// there.
	StateDraining = "draining"
	// StateDisabled: it gets nothing at all.
	StateDisabled = "disabled"
)

// TakesNew reports whether routing may send p new attempts: its state is
// enabled.
func (p Provider) TakesNew() bool { return p.State == "" || p.State == StateEnabled }

// Circuit is when a provider's circuit opens: when at least MinAttempts
// attempts since it last closed failed transiently at FailureRatio or
// more; it stays open for Cooldown.
type Circuit struct {
	FailureRatio float64
	MinAttempts  int
	Cooldown     time.Duration
}

// ChannelConfig returns p as a channel's configuration (driver, its
// settings, timeout, concurrency; no retry policy), the input of the
// engine's driver builder. Its credentials are still references.
func (p Provider) ChannelConfig() config.Channel {
	return config.Channel{
		Driver:      p.Driver,
		Concurrency: p.Concurrency,
		Timeout:     p.Timeout,
		Webhook:     p.Webhook,
		SMTP:        p.SMTP,
		SMSHTTP:     p.SMSHTTP,
		SMPP:        p.SMPP,
	}
}

// provider returns the provider s describes, defaults applied. s must be
// valid but for its driver settings.
func (s *ProviderSpec) provider() Provider {
	ch, _, _ := strings.Cut(s.Name, "/")
	p := Provider{
		Name:         s.Name,
		Channel:      ch,
		Driver:       s.Driver,
		Concurrency:  s.Concurrency,
		CapPerSecond: s.CapPerSecond,
		Timeout:      s.Timeout,
		Circuit:      DefaultCircuit,
		// A provider added by a file starts enabled (routing_apply).
		State: StateEnabled,
	}
	if s.Circuit.FailureRatio != nil {
		p.Circuit.FailureRatio = *s.Circuit.FailureRatio
	}
	if s.Circuit.MinAttempts != nil {
		p.Circuit.MinAttempts = *s.Circuit.MinAttempts
	}
	if s.Circuit.Cooldown != nil {
		p.Circuit.Cooldown = *s.Circuit.Cooldown
	}
	p.setSections(s.Webhook, s.SMTP, s.SMSHTTP, s.SMPP, s.Receipts)
	return p
}

// setSections sets p's driver sections from those given (nil leaves a
// section zero) and its receipts settings: what the file's ProviderSpec and
// the stored settings both carry.
func (p *Provider) setSections(webhook *config.WebhookDriver, smtp *config.SMTPDriver,
	smsHTTP *config.SMSHTTPDriver, smpp *config.SMPPDriver, receipts *Receipts) {
	if webhook != nil {
		p.Webhook = *webhook
	}
	if smtp != nil {
		p.SMTP = *smtp
	}
	if smsHTTP != nil {
		p.SMSHTTP = *smsHTTP
	}
	if smpp != nil {
		p.SMPP = *smpp
	}
	p.Receipts = receipts
}

// settings is providers.settings: the timeout and the driver's section,
// keyed as in the file.
type settings struct {
	Timeout string                `yaml:"timeout,omitempty"`
	Webhook *config.WebhookDriver `yaml:"webhook,omitempty"`
	SMTP    *config.SMTPDriver    `yaml:"smtp,omitempty"`
	SMSHTTP *config.SMSHTTPDriver `yaml:"sms_http,omitempty"`
	SMPP    *config.SMPPDriver    `yaml:"smpp,omitempty"`
	// Receipts is kept whole: its zero values mean defaults.
	Receipts *Receipts `yaml:"receipts,omitempty"`
}

// SettingsJSON returns p's providers.settings: a JSON object keyed as the
// file is (credentials as references), with the driver's section only and empty values left out, so
// that the same file gives the same settings.
func (p Provider) SettingsJSON() (json.RawMessage, error) {
	var s settings
	if p.Timeout > 0 {
		s.Timeout = p.Timeout.String()
	}
	switch p.Driver {
	case config.DriverWebhook:
		s.Webhook = &p.Webhook
	case config.DriverSMTP:
		s.SMTP = &p.SMTP
	case config.DriverSMSHTTP:
		s.SMSHTTP = &p.SMSHTTP
	case config.DriverSMPP:
		s.SMPP = &p.SMPP
	}
	s.Receipts = p.Receipts
	// Through YAML, for the file's keys (the config types have no JSON
	// tags), then pruned of zero values.
	y, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(y, &m); err != nil {
		return nil, err
	}
	prune(m)
	return json.Marshal(m)
}

// prune deletes m's zero values (empty strings and lists, zeros, false,
// nulls, and objects left empty), recursively.
func prune(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			if len(v) == 0 {
				delete(m, k)
			}
		case string:
			if v == "" {
				delete(m, k)
			}
		case int:
			if v == 0 {
				delete(m, k)
			}
		case float64:
			if v == 0 {
				delete(m, k)
			}
		case bool:
			if !v {
				delete(m, k)
			}
		case nil:
			delete(m, k)
		}
	}
}

// providerFromRow returns the provider a herald.providers row holds.
func providerFromRow(r store.HeraldProvider) (Provider, error) {
	p := Provider{
		Name:         r.Name,
		Channel:      r.Channel,
		Driver:       r.Driver,
		Concurrency:  int(r.Concurrency),
		CapPerSecond: int(r.CapPerSecond),
		State:        r.State,
		Circuit: Circuit{
			FailureRatio: float64(r.CircuitFailureRatio),
			MinAttempts:  int(r.CircuitMinAttempts),
			Cooldown: time.Duration(r.CircuitCooldown.Microseconds)*time.Microsecond +
				time.Duration(r.CircuitCooldown.Days)*24*time.Hour +
				time.Duration(r.CircuitCooldown.Months)*30*24*time.Hour,
		},
	}
	// Back through YAML, as SettingsJSON wrote it.
	m := map[string]any{}
	if len(r.Settings) > 0 {
		if err := json.Unmarshal(r.Settings, &m); err != nil {
			return Provider{}, fmt.Errorf("provider %s: settings: %w", r.Name, err)
		}
	}
	y, err := yaml.Marshal(m)
	if err != nil {
		return Provider{}, fmt.Errorf("provider %s: settings: %w", r.Name, err)
	}
	var s settings
	if err := yaml.Unmarshal(y, &s); err != nil {
		return Provider{}, fmt.Errorf("provider %s: settings: %w", r.Name, err)
	}
	if s.Timeout != "" {
		if p.Timeout, err = time.ParseDuration(s.Timeout); err != nil {
			return Provider{}, fmt.Errorf("provider %s: settings.timeout: %w", r.Name, err)
		}
	}
	p.setSections(s.Webhook, s.SMTP, s.SMSHTTP, s.SMPP, s.Receipts)
	return p, nil
}
