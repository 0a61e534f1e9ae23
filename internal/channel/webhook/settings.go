package webhook

import (
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/secret"
)

// Settings is the webhook driver's section of a channel or provider in
// `herald serve`'s configuration file (its `webhook:` key) and in
// providers.settings.
type Settings struct {
	// Secrets holds one or more whsec_ secrets separated by white space;
	// several sign every request during a rotation. Required.
	Secrets      secret.Secret `yaml:"secrets"`
	AllowPrivate bool          `yaml:"allow_private"`
	AllowHosts   []string      `yaml:"allow_hosts"`
	DenyCIDRs    []string      `yaml:"deny_cidrs"`
}

// Check validates the section, checking each credential with check. The
// error names the field relative to the section ("secrets: …").
func (s Settings) Check(check secret.CheckFunc) error {
	if err := check(s.Secrets); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return nil
}

// Config returns the Deliverer configuration the section describes, its
// secrets read through getenv; the caller sets Timeout and Logger. The
// error names the field as Check does.
func (s Settings) Config(getenv func(string) string) (Config, error) {
	secrets, err := s.Secrets.Resolve(getenv)
	if err != nil {
		return Config{}, fmt.Errorf("secrets: %w", err)
	}
	return Config{
		Secrets:      strings.Fields(secrets),
		AllowPrivate: s.AllowPrivate,
		AllowHosts:   s.AllowHosts,
		DenyCIDRs:    s.DenyCIDRs,
	}, nil
}
