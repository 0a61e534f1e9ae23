package email

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/secret"
)

// Settings is the smtp driver's section of a channel or provider in
// `herald serve`'s configuration file (its `smtp:` key) and in
// providers.settings.
type Settings struct {
	Host     string        `yaml:"host"`
	Port     int           `yaml:"port"`
	TLS      string        `yaml:"tls"`
	From     string        `yaml:"from"`
	Username string        `yaml:"username"`
	Password secret.Secret `yaml:"password"`
	HeloName string        `yaml:"helo_name"`
}

// Check validates the section, checking the password (when a username is
// given) with check. The error names the field relative to the section
// ("host: required").
func (s Settings) Check(check secret.CheckFunc) error {
	switch {
	case s.Host == "":
		return errors.New("host: required")
	case s.From == "":
		return errors.New("from: required")
	case s.Port < 0 || s.Port > 65535:
		return errors.New("port: must be between 1 and 65535")
	}
	switch s.TLS {
	case "", TLSStartTLS, TLSOpportunistic, TLSImplicit, TLSNone:
	default:
		return fmt.Errorf("tls: %q is not starttls, opportunistic, implicit or none", s.TLS)
	}
	if s.Username != "" {
		if err := check(s.Password); err != nil {
			return fmt.Errorf("password: %w", err)
		}
	}
	return nil
}

// Config returns the Deliverer configuration the section describes, the
// password read through getenv when a username is given; the caller sets
// Timeout and Logger. The error names the field as Check does.
func (s Settings) Config(getenv func(string) string) (Config, error) {
	var password string
	if s.Username != "" {
		var err error
		if password, err = s.Password.Resolve(getenv); err != nil {
			return Config{}, fmt.Errorf("password: %w", err)
		}
	}
	return Config{
		Host:     s.Host,
		Port:     s.Port,
		Username: s.Username,
		Password: password,
		From:     s.From,
		TLS:      s.TLS,
		HeloName: s.HeloName,
	}, nil
}
