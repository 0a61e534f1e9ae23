package smppch

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/smpp"
)

// Settings is the smpp driver's section of a channel or provider in
// `herald serve`'s configuration file (its `smpp:` key) and in
// providers.settings: binds to one SMSC. Zero values take the defaults of
// internal/smpp and this package.
type Settings struct {
	// Host is the SMSC's; Port defaults to 2775.
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// SystemID, Password and SystemType are the bind's credentials;
	// system_id and password are required.
	SystemID   string        `yaml:"system_id"`
	Password   secret.Secret `yaml:"password"`
	SystemType string        `yaml:"system_type"`
	// Binds is how many transceiver binds each serve process keeps
	// (default 1); Window the submit_sm outstanding per bind (default 10);
	// SubmitsPerSecond paces each bind (0: no pacing; the provider's
	// cap_per_second still applies across processes).
	Binds            int `yaml:"binds"`
	Window           int `yaml:"window"`
	SubmitsPerSecond int `yaml:"submits_per_second"`
	// SourceAddr is the sender: "+" and digits, a short code or an
	// alphanumeric id; SourceTON and SourceNPI override the TON and NPI
	// chosen from its form (unknown, international, national,
	// network_specific, subscriber, alphanumeric, abbreviated; unknown,
	// isdn, data, telex, land_mobile, national, private, ermes, internet,
	// wap).
	SourceAddr  string `yaml:"source_addr"`
	SourceTON   string `yaml:"source_ton"`
	SourceNPI   string `yaml:"source_npi"`
	ServiceType string `yaml:"service_type"`
	// GSM7Packed packs GSM-7 septets; by default each takes an octet.
	GSM7Packed bool `yaml:"gsm7_packed"`
	// LongMessages is udh (default), sar or payload.
	LongMessages string `yaml:"long_messages"`
	// Receipts asks for delivery receipts: final (default), failure or
	// none.
	Receipts string `yaml:"receipts"`
	// Timings: enquire_link every EnquireLinkInterval (30s); a bind
	// silent for DeadPeerTimeout (three intervals) is dropped; a submit
	// waits ResponseTimeout (10s); connecting and binding BindTimeout
	// (10s); reconnects back off up to ReconnectMax (30s); a throttled
	// bind rests ThrottleWait (1s). (omitempty keeps a zero duration out
	// of providers.settings, where it would read "0s".)
	EnquireLinkInterval time.Duration `yaml:"enquire_link_interval,omitempty"`
	DeadPeerTimeout     time.Duration `yaml:"dead_peer_timeout,omitempty"`
	ResponseTimeout     time.Duration `yaml:"response_timeout,omitempty"`
	BindTimeout         time.Duration `yaml:"bind_timeout,omitempty"`
	ReconnectMax        time.Duration `yaml:"reconnect_max,omitempty"`
	ThrottleWait        time.Duration `yaml:"throttle_wait,omitempty"`
}

// Check validates the section, checking the password with check. The
// error names the field relative to the section ("host: required").
func (s Settings) Check(check secret.CheckFunc) error {
	src, _, _ := smpp.SourceAddress(s.SourceAddr)
	switch {
	case s.Host == "":
		return errors.New("host: required")
	case s.Port < 0 || s.Port > 65535:
		return errors.New("port: must be between 1 and 65535")
	case s.SystemID == "":
		return errors.New("system_id: required")
	case len(s.SystemID) >= smpp.MaxSystemIDLen:
		return fmt.Errorf("system_id: must be at most %d characters", smpp.MaxSystemIDLen-1)
	case len(s.SystemType) >= smpp.MaxSystemTypeLen:
		return fmt.Errorf("system_type: must be at most %d characters", smpp.MaxSystemTypeLen-1)
	case s.Binds < 0 || s.Binds > smpp.MaxBinds:
		return fmt.Errorf("binds: must be between 1 and %d", smpp.MaxBinds)
	case s.Window < 0 || s.Window > smpp.MaxWindow:
		return fmt.Errorf("window: must be between 1 and %d", smpp.MaxWindow)
	case s.SubmitsPerSecond < 0:
		return errors.New("submits_per_second: must not be negative")
	case len(src) >= smpp.MaxAddrLen:
		return fmt.Errorf("source_addr: must be at most %d characters", smpp.MaxAddrLen-1)
	case len(s.ServiceType) >= smpp.MaxServiceTypeLen:
		return fmt.Errorf("service_type: must be at most %d characters", smpp.MaxServiceTypeLen-1)
	case s.EnquireLinkInterval < 0 || s.DeadPeerTimeout < 0 || s.ResponseTimeout < 0 ||
		s.BindTimeout < 0 || s.ReconnectMax < 0 || s.ThrottleWait < 0:
		return errors.New("enquire_link_interval, dead_peer_timeout, response_timeout, bind_timeout, reconnect_max, throttle_wait: must not be negative")
	case s.DeadPeerTimeout > 0 && s.DeadPeerTimeout <= cmp.Or(s.EnquireLinkInterval, smpp.DefaultEnquireLinkInterval):
		return fmt.Errorf("dead_peer_timeout: %s must exceed enquire_link_interval %s",
			s.DeadPeerTimeout, cmp.Or(s.EnquireLinkInterval, smpp.DefaultEnquireLinkInterval))
	}
	if _, _, err := smpp.ParseTON(s.SourceTON); err != nil {
		return fmt.Errorf("source_ton: %w", err)
	}
	if _, _, err := smpp.ParseNPI(s.SourceNPI); err != nil {
		return fmt.Errorf("source_npi: %w", err)
	}
	if _, err := smpp.ParseLongMode(s.LongMessages); err != nil {
		return fmt.Errorf("long_messages: %w", err)
	}
	if _, err := smpp.ParseReceipts(s.Receipts); err != nil {
		return fmt.Errorf("receipts: %w", err)
	}
	if err := check(s.Password); err != nil {
		return fmt.Errorf("password: %w", err)
	}
	return nil
}

// Config returns the Deliverer configuration the section describes for
// provider, the password read through getenv; the caller sets ReceiptFunc,
// InboundFunc and Logger. The error names the field as Check does.
func (s Settings) Config(provider string, getenv func(string) string) (Config, error) {
	password, err := s.Password.Resolve(getenv)
	if err != nil {
		return Config{}, fmt.Errorf("password: %w", err)
	}
	return Config{
		Provider: provider, Host: s.Host, Port: s.Port,
		SystemID: s.SystemID, Password: password, SystemType: s.SystemType,
		Binds: s.Binds, Window: s.Window, SubmitsPerSecond: s.SubmitsPerSecond,
		SourceAddr: s.SourceAddr, SourceTON: s.SourceTON, SourceNPI: s.SourceNPI, ServiceType: s.ServiceType,
		GSM7Packed: s.GSM7Packed, LongMessages: s.LongMessages, Receipts: s.Receipts,
		EnquireLinkInterval: s.EnquireLinkInterval, DeadPeerTimeout: s.DeadPeerTimeout,
		ResponseTimeout: s.ResponseTimeout, BindTimeout: s.BindTimeout,
		ReconnectMax: s.ReconnectMax, ThrottleWait: s.ThrottleWait,
	}, nil
}
