package sms

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/secret"
)

// Settings is the sms-http driver's section of a channel or provider in
// `herald serve`'s configuration file (its `sms_http:` key) and in
// providers.settings.
type Settings struct {
	URL             string        `yaml:"url"`
	APIKey          secret.Secret `yaml:"api_key"`
	AuthHeader      string        `yaml:"auth_header"`
	From            string        `yaml:"from"`
	Format          string        `yaml:"format"`
	ToField         string        `yaml:"to_field"`
	FromField       string        `yaml:"from_field"`
	BodyField       string        `yaml:"body_field"`
	ResponseIDField string        `yaml:"response_id_field"`
	// FlashField, for a provider that can send a flash SMS, names the
	// request field that asks for one, and FlashValue its value as JSON
	// (default true; e.g. Vonage's "message-class": 0). Without it a
	// flash SMS routed here is a dead letter, never a normal SMS.
	FlashField string `yaml:"flash_field,omitempty"`
	FlashValue string `yaml:"flash_value,omitempty"`
}

// Check validates the section, checking the API key with check. The error
// names the field relative to the section ("url: required").
func (s Settings) Check(check secret.CheckFunc) error {
	if s.URL == "" {
		return errors.New("url: required")
	}
	if err := check(s.APIKey); err != nil {
		return fmt.Errorf("api_key: %w", err)
	}
	if s.FlashValue != "" && !json.Valid([]byte(s.FlashValue)) {
		return errors.New(`flash_value: must be a JSON value, e.g. true, 0 or "1"`)
	}
	if s.FlashValue != "" && s.FlashField == "" {
		return errors.New("flash_value: given without flash_field")
	}
	return nil
}

// Config returns the Deliverer configuration the section describes, the
// API key read through getenv; the caller sets Timeout and Logger. The
// error names the field as Check does.
func (s Settings) Config(getenv func(string) string) (Config, error) {
	key, err := s.APIKey.Resolve(getenv)
	if err != nil {
		return Config{}, fmt.Errorf("api_key: %w", err)
	}
	return Config{
		URL:             s.URL,
		APIKey:          key,
		AuthHeader:      s.AuthHeader,
		From:            s.From,
		Format:          s.Format,
		ToField:         s.ToField,
		FromField:       s.FromField,
		BodyField:       s.BodyField,
		ResponseIDField: s.ResponseIDField,
		FlashField:      s.FlashField,
		FlashValue:      s.FlashValue,
	}, nil
}
