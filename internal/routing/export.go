package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/internal/config"
)

// exportFile is File as Export writes it: zero values left out, so the
// file reads like one a person wrote; Parse reads it back to the same
// table.
type exportFile struct {
	Providers []exportProvider        `yaml:"providers"`
	Rules     map[string][]exportRule `yaml:"rules,omitempty"`
}

type exportProvider struct {
	Name         string                `yaml:"name"`
	Driver       string                `yaml:"driver"`
	Concurrency  int                   `yaml:"concurrency,omitempty"`
	CapPerSecond int                   `yaml:"cap_per_second,omitempty"`
	Timeout      time.Duration         `yaml:"timeout,omitempty"`
	Circuit      exportCircuit         `yaml:"circuit"`
	Webhook      *config.WebhookDriver `yaml:"webhook,omitempty"`
	SMTP         *config.SMTPDriver    `yaml:"smtp,omitempty"`
	SMSHTTP      *config.SMSHTTPDriver `yaml:"sms_http,omitempty"`
	SMPP         *config.SMPPDriver    `yaml:"smpp,omitempty"`
	Receipts     *Receipts             `yaml:"receipts,omitempty"`
}

type exportCircuit struct {
	FailureRatio float64       `yaml:"failure_ratio"`
	MinAttempts  int           `yaml:"min_attempts"`
	Cooldown     time.Duration `yaml:"cooldown"`
}

type exportRule struct {
	Name      string   `yaml:"name"`
	Match     *Match   `yaml:"match,omitempty"`
	Strategy  string   `yaml:"strategy"`
	Providers []string `yaml:"providers"`
	Weights   []int    `yaml:"weights,omitempty"`
}

// Export returns the providers file `herald providers apply` takes that
// makes the database what it is: applying it changes nothing. Credentials
// are references (env, file) in the database as in the file, and only
// they are written. Settings a provider's row holds that herald does not
// read (written by hand, perhaps a credential's value) are never written:
// notes names each such provider, and the file starts with a comment
// saying so. A provider's state (enabled, draining, disabled) is not the
// file's and stays as it is.
func Export(ctx context.Context, db TxBeginner) (file []byte, notes []string, err error) {
	t, err := Load(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	raw, err := rawSettings(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	var f exportFile
	f.Providers = []exportProvider{}
	for _, name := range slices.Sorted(maps.Keys(t.Providers)) {
		p := t.Providers[name]
		e := exportProvider{
			Name: p.Name, Driver: p.Driver, Concurrency: p.Concurrency, CapPerSecond: p.CapPerSecond, Timeout: p.Timeout,
			Circuit:  exportCircuit{FailureRatio: p.Circuit.FailureRatio, MinAttempts: p.Circuit.MinAttempts, Cooldown: p.Circuit.Cooldown},
			Receipts: p.Receipts,
		}
		switch p.Driver {
		case config.DriverWebhook:
			e.Webhook = &p.Webhook
		case config.DriverSMTP:
			e.SMTP = &p.SMTP
		case config.DriverSMSHTTP:
			e.SMSHTTP = &p.SMSHTTP
		case config.DriverSMPP:
			e.SMPP = &p.SMPP
		}
		f.Providers = append(f.Providers, e)
		read, err := p.SettingsJSON()
		if err != nil {
			return nil, nil, fmt.Errorf("export provider %s: %w", name, err)
		}
		if !sameJSON(read, raw[name]) {
			notes = append(notes, fmt.Sprintf("provider %s: its stored settings hold values herald does not read; they are left out (a credential is only ever written as a reference: env or file)", name))
		}
	}
	for _, ch := range slices.Sorted(maps.Keys(t.Rules)) {
		if f.Rules == nil {
			f.Rules = map[string][]exportRule{}
		}
		for _, r := range t.Rules[ch] {
			e := exportRule{Name: r.Name, Strategy: r.Strategy, Providers: r.Providers, Weights: r.Weights}
			if m := r.Match; len(m.Prefixes)+len(m.Producers)+len(m.Types)+len(m.Priorities) > 0 {
				e.Match = &m
			}
			f.Rules[ch] = append(f.Rules[ch], e)
		}
	}
	var b bytes.Buffer
	b.WriteString("# herald providers file, exported from the database (herald providers export).\n")
	for _, n := range notes {
		b.WriteString("# note: " + n + "\n")
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, nil, fmt.Errorf("export: %w", err)
	}
	return b.Bytes(), notes, nil
}

// rawSettings returns each provider's providers.settings as stored.
func rawSettings(ctx context.Context, db TxBeginner) (map[string]json.RawMessage, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := queries.ProviderList(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("read providers: %w", err)
	}
	out := make(map[string]json.RawMessage, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Settings
	}
	return out, nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
