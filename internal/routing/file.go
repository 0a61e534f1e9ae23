package routing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// Strategies a rule may use.
const (
	// StrategyFailover takes the rule's providers in order, moving to the
	// next after a transient failure or past an open circuit.
	StrategyFailover = "failover"
	// StrategyWeighted gives each provider a share of the routes, by weight.
	StrategyWeighted = "weighted"
)

// Limits the file is checked against; the schema's CHECK constraints on
// herald.providers say the same.
const (
	// MaxConcurrency bounds a provider's concurrency.
	MaxConcurrency = 10000
	// MaxCapPerSecond bounds a provider's cap.
	MaxCapPerSecond = 1_000_000
	// MaxWeight bounds one weight of a weighted rule.
	MaxWeight = 1_000_000
	// MinCooldown is the shortest circuit cool-down.
	MinCooldown = time.Second
)

// DefaultCircuit is a provider's circuit when its file entry gives none
// (each field separately).
var DefaultCircuit = Circuit{FailureRatio: 0.5, MinAttempts: 20, Cooldown: 30 * time.Second}

// File is the declarative file `herald providers apply -f` reads: every
// provider, and each channel's rules in order. Applying it replaces all
// providers and rules in the database.
type File struct {
	Providers []ProviderSpec        `yaml:"providers"`
	Rules     map[string][]RuleSpec `yaml:"rules"`
}

// ProviderSpec is one provider as the file gives it.
type ProviderSpec struct {
	// Name is "<channel>/<name>", e.g. "sms/acme".
	Name string `yaml:"name"`
	// Driver is webhook, smtp, sms-http, smpp, log or discard.
	Driver string `yaml:"driver"`
	// Concurrency is the deliveries in flight per serve process; 0 takes
	// the channel's.
	Concurrency int `yaml:"concurrency"`
	// CapPerSecond is the submissions per second across every serve
	// process; 0 means no cap.
	CapPerSecond int `yaml:"cap_per_second"`
	// Timeout is one attempt's; 0 takes the channel's.
	Timeout time.Duration `yaml:"timeout"`
	Circuit CircuitSpec   `yaml:"circuit"`

	// The driver's section; only the one of Driver may be given.
	Webhook *config.WebhookDriver `yaml:"webhook"`
	SMTP    *config.SMTPDriver    `yaml:"smtp"`
	SMSHTTP *config.SMSHTTPDriver `yaml:"sms_http"`
	SMPP    *config.SMPPDriver    `yaml:"smpp"`

	// Receipts, when given, is how the provider sends delivery receipts.
	Receipts *Receipts `yaml:"receipts"`
}

// CircuitSpec is a provider's circuit as the file gives it: a field left
// out takes DefaultCircuit's.
type CircuitSpec struct {
	FailureRatio *float64       `yaml:"failure_ratio"`
	MinAttempts  *int           `yaml:"min_attempts"`
	Cooldown     *time.Duration `yaml:"cooldown"`
}

// RuleSpec is one rule as the file gives it, under its channel.
type RuleSpec struct {
	Name  string `yaml:"name"`
	Match Match  `yaml:"match"`
	// Strategy is failover (the default) or weighted.
	Strategy  string   `yaml:"strategy"`
	Providers []string `yaml:"providers"`
	// Weights, for weighted only: one per provider, each at least 1.
	Weights []int `yaml:"weights"`
}

// Match is a rule's matchers: each list, when not empty, must contain the
// route's value (for Prefixes, one must match its destination).
type Match struct {
	Prefixes   []string `yaml:"prefixes" json:"prefixes"`
	Producers  []string `yaml:"producers" json:"producers"`
	Types      []string `yaml:"types" json:"types"`
	Priorities []string `yaml:"priorities" json:"priorities"`
}

// ReadFile reads and checks the file at path, as Parse does; its errors
// start with the path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a providers file and checks it whole. It refuses unknown
// keys, and returns the first mistake as one line naming the field
// ("providers[1].sms_http.url: required"). Credentials are checked to be
// referenced, never read.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file is empty: write \"providers: []\" to remove every provider and rule")
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document: give one")
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// yamlError makes a decoding error one line: the first problem, with its
// line, and how many more there are.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	msg := te.Errors[0]
	if field, rest, ok := strings.Cut(msg, "field "); ok {
		if name, _, ok := strings.Cut(rest, " not found in type"); ok {
			msg = field + "unknown field " + name
		}
	}
	if n := len(te.Errors) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return errors.New(msg)
}

var (
	providerNameRE = regexp.MustCompile(`^[a-z]+/[a-z0-9][a-z0-9_.-]{0,62}$`)
	ruleNameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
	phonePrefixRE  = regexp.MustCompile(`^\+[0-9]{1,15}$`)
)

// drivers are every driver a provider may use.
var drivers = []string{config.DriverWebhook, config.DriverSMTP, config.DriverSMSHTTP, config.DriverSMPP, config.DriverLog, config.DriverDiscard}

// driversOf says which drivers can deliver each channel.
var driversOf = map[string][]string{
	channel.Email:   {config.DriverSMTP, config.DriverLog, config.DriverDiscard},
	channel.SMS:     {config.DriverSMSHTTP, config.DriverSMPP, config.DriverLog, config.DriverDiscard},
	channel.Webhook: {config.DriverWebhook, config.DriverLog, config.DriverDiscard},
}

// validate checks f whole and returns its first mistake.
func (f *File) validate() error {
	channels := channel.Channels()
	byName := map[string]string{} // provider name -> channel
	for i, p := range f.Providers {
		at := fmt.Sprintf("providers[%d]", i)
		ch, err := p.validate()
		if err != nil {
			return fmt.Errorf("%s.%w", at, err)
		}
		if _, dup := byName[p.Name]; dup {
			return fmt.Errorf("%s.name: %q is given twice", at, p.Name)
		}
		byName[p.Name] = ch
	}
	for _, ch := range slices.Sorted(maps.Keys(f.Rules)) {
		if !slices.Contains(channels, ch) {
			return fmt.Errorf("rules.%s: %q is not a channel (%s)", ch, ch, strings.Join(channels, ", "))
		}
		names := map[string]bool{}
		for i, r := range f.Rules[ch] {
			at := fmt.Sprintf("rules.%s[%d]", ch, i)
			if err := r.validate(ch, byName); err != nil {
				return fmt.Errorf("%s.%w", at, err)
			}
			if names[r.Name] {
				return fmt.Errorf("%s.name: %q is given twice", at, r.Name)
			}
			names[r.Name] = true
		}
	}
	return nil
}

// validate checks one provider and returns its channel; the error names the
// field relative to the provider.
func (p *ProviderSpec) validate() (string, error) {
	const nameForm = "must be <channel>/<name>, the name of lower-case letters, digits, '_', '.' and '-'"
	ch, _, ok := strings.Cut(p.Name, "/")
	switch {
	case p.Name == "":
		return "", errors.New("name: required")
	case !ok:
		return "", fmt.Errorf("name: %q must be <channel>/<name>", p.Name)
	case !slices.Contains(channel.Channels(), ch):
		return "", fmt.Errorf("name: %q: %s is not a channel (%s)", p.Name, ch, strings.Join(channel.Channels(), ", "))
	case !providerNameRE.MatchString(p.Name):
		return "", fmt.Errorf("name: %q %s (at most 63)", p.Name, nameForm)
	case p.Driver == "":
		return "", errors.New("driver: required (webhook, smtp, sms-http, smpp, log or discard)")
	case !slices.Contains(drivers, p.Driver):
		return "", fmt.Errorf("driver: %q is not webhook, smtp, sms-http, smpp, log or discard", p.Driver)
	case !slices.Contains(driversOf[ch], p.Driver):
		return "", fmt.Errorf("driver: %s cannot deliver channel %s (%s can)", p.Driver, ch, strings.Join(driversOf[ch], ", "))
	case p.Concurrency < 0 || p.Concurrency > MaxConcurrency:
		return "", fmt.Errorf("concurrency: must be between 0 (the channel's) and %d", MaxConcurrency)
	case p.CapPerSecond < 0 || p.CapPerSecond > MaxCapPerSecond:
		return "", fmt.Errorf("cap_per_second: must be between 0 (no cap) and %d", MaxCapPerSecond)
	case p.Timeout < 0:
		return "", errors.New("timeout: must not be negative")
	case p.Circuit.FailureRatio != nil && !(*p.Circuit.FailureRatio > 0 && *p.Circuit.FailureRatio <= 1):
		return "", fmt.Errorf("circuit.failure_ratio: %v must be above 0 and at most 1", *p.Circuit.FailureRatio)
	case p.Circuit.MinAttempts != nil && *p.Circuit.MinAttempts < 1:
		return "", fmt.Errorf("circuit.min_attempts: %d must be at least 1", *p.Circuit.MinAttempts)
	case p.Circuit.Cooldown != nil && *p.Circuit.Cooldown < MinCooldown:
		return "", fmt.Errorf("circuit.cooldown: %s must be at least %s", *p.Circuit.Cooldown, MinCooldown)
	}
	for _, s := range []struct {
		key, driver string
		given       bool
	}{
		{"webhook", config.DriverWebhook, p.Webhook != nil},
		{"smtp", config.DriverSMTP, p.SMTP != nil},
		{"sms_http", config.DriverSMSHTTP, p.SMSHTTP != nil},
		{"smpp", config.DriverSMPP, p.SMPP != nil},
	} {
		if s.given && s.driver != p.Driver {
			return "", fmt.Errorf("%s: not used by driver %s", s.key, p.Driver)
		}
	}
	if err := p.provider().ChannelConfig().ValidateDriver(); err != nil {
		return "", err
	}
	if p.Receipts != nil {
		if err := p.Receipts.validate(p.Driver); err != nil {
			return "", err
		}
	}
	return ch, nil
}

// validate checks one rule of channel ch, given the file's providers'
// channels; the error names the field relative to the rule.
func (r *RuleSpec) validate(ch string, providers map[string]string) error {
	switch {
	case r.Name == "":
		return errors.New("name: required")
	case !ruleNameRE.MatchString(r.Name):
		return fmt.Errorf("name: %q must be lower-case letters, digits, '_', '.' and '-' (at most 63)", r.Name)
	}
	if err := r.Match.validate(ch); err != nil {
		return fmt.Errorf("match.%w", err)
	}
	switch r.Strategy {
	case "", StrategyFailover, StrategyWeighted:
	default:
		return fmt.Errorf("strategy: %q is not failover or weighted", r.Strategy)
	}
	if len(r.Providers) == 0 {
		return errors.New("providers: required (at least one)")
	}
	for i, name := range r.Providers {
		if pch, ok := providers[name]; !ok || pch != ch {
			return fmt.Errorf("providers: %s is not a provider of channel %s", name, ch)
		}
		if slices.Contains(r.Providers[:i], name) {
			return fmt.Errorf("providers: %s is given twice", name)
		}
	}
	if r.Strategy != StrategyWeighted {
		if len(r.Weights) > 0 {
			return errors.New("weights: only for strategy weighted")
		}
		return nil
	}
	if len(r.Weights) != len(r.Providers) {
		return fmt.Errorf("weights: %d weight(s) for %d provider(s): give one per provider", len(r.Weights), len(r.Providers))
	}
	for i, w := range r.Weights {
		if w < 1 || w > MaxWeight {
			return fmt.Errorf("weights[%d]: %d must be between 1 and %d", i, w, MaxWeight)
		}
	}
	return nil
}

// validate checks a rule's matchers for channel ch.
func (m *Match) validate(ch string) error {
	for i, p := range m.Prefixes {
		if err := validPrefix(ch, p); err != nil {
			return fmt.Errorf("prefixes[%d]: %q %w", i, p, err)
		}
	}
	for _, l := range []struct {
		key    string
		values []string
	}{{"producers", m.Producers}, {"types", m.Types}} {
		for i, v := range l.values {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("%s[%d]: empty", l.key, i)
			}
		}
	}
	for i, p := range m.Priorities {
		if heraldtype.Priority(p) != heraldtype.PriorityTransactional && heraldtype.Priority(p) != heraldtype.PriorityBulk {
			return fmt.Errorf("priorities[%d]: %q is not %s or %s", i, p, heraldtype.PriorityTransactional, heraldtype.PriorityBulk)
		}
	}
	return nil
}

// validPrefix checks one destination prefix of a rule of channel ch.
func validPrefix(ch, p string) error {
	switch ch {
	case channel.SMS:
		if !phonePrefixRE.MatchString(p) {
			return errors.New(`is not "+" and digits, as in +254`)
		}
	case channel.Email:
		if p == "" || p == "@" || strings.ContainsAny(p, " \t\r\n") || strings.Count(p, "@") > 1 {
			return errors.New(`is not "@" and a domain, as in @example.com, or the start of an address`)
		}
	case channel.Webhook:
		if !strings.HasPrefix(p, "https://") && !strings.HasPrefix(p, "http://") || strings.ContainsAny(p, " \t\r\n") {
			return errors.New("is not the start of an http:// or https:// URL")
		}
	}
	return nil
}
