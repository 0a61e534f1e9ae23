package routing_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/routing"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// exampleFile is a file using every feature: the providers guide's example.
const exampleFile = `
providers:
  - name: sms/acme
    driver: sms-http
    concurrency: 16
    cap_per_second: 200
    timeout: 10s
    circuit: {failure_ratio: 0.5, min_attempts: 20, cooldown: 30s}
    sms_http: {url: "https://api.acme.example/v1/sms", api_key: {env: ACME_KEY}, from: HERALD}
  - name: sms/backup
    driver: sms-http
    circuit: {cooldown: 1m}
    sms_http: {url: "https://sms.backup.example/send", api_key: {file: /run/secrets/backup}}
  - name: email/ses
    driver: smtp
    smtp: {host: email-smtp.eu-west-1.amazonaws.com, port: 587, from: "Shop <noreply@shop.example>", username: AKIA, password: {env: SES_PASSWORD}}
  - name: email/dev
    driver: log
  - name: webhook/default
    driver: webhook
    webhook: {secrets: {env: WEBHOOK_SECRETS}}
rules:
  sms:
    - name: kenya
      match: {prefixes: ["+254"], producers: [shop], types: [otp.sent], priorities: [transactional]}
      strategy: failover
      providers: [sms/acme, sms/backup]
    - name: default
      strategy: weighted
      providers: [sms/acme, sms/backup]
      weights: [80, 20]
  email:
    - name: internal
      match: {prefixes: ["@shop.example"]}
      providers: [email/dev]
    - name: default
      providers: [email/ses]
`

func TestParse_ReadsEveryField(t *testing.T) {
	t.Parallel()
	f, err := routing.Parse([]byte(exampleFile))
	require.NoError(t, err)
	tab := f.Table()
	acme := tab.Providers["sms/acme"]
	require.Equal(t, routing.Provider{
		Name: "sms/acme", Channel: "sms", Driver: "sms-http", Concurrency: 16, CapPerSecond: 200,
		Timeout: 10 * time.Second,
		Circuit: routing.Circuit{FailureRatio: 0.5, MinAttempts: 20, Cooldown: 30 * time.Second},
		SMSHTTP: config.SMSHTTPDriver{URL: "https://api.acme.example/v1/sms", APIKey: config.Secret{Env: "ACME_KEY"}, From: "HERALD"},
		State:   routing.StateEnabled,
	}, acme)
	require.Equal(t, routing.Circuit{FailureRatio: 0.5, MinAttempts: 20, Cooldown: time.Minute}, tab.Providers["sms/backup"].Circuit,
		"a circuit field left out takes the default")
	require.Equal(t, config.Channel{
		Driver: "sms-http", Concurrency: 16, Timeout: 10 * time.Second,
		SMSHTTP: acme.SMSHTTP,
	}, acme.ChannelConfig())
	require.Len(t, tab.Rules["sms"], 2)
	require.Equal(t, routing.Rule{
		Channel: "sms", Position: 2, Name: "default", Strategy: "weighted",
		Match:     routing.Match{Prefixes: []string{}, Producers: []string{}, Types: []string{}, Priorities: []string{}},
		Providers: []string{"sms/acme", "sms/backup"}, Weights: []int{80, 20},
	}, tab.Rules["sms"][1])
	require.Equal(t, "failover", tab.Rules["email"][0].Strategy, "failover is the default strategy")
	require.NotContains(t, tab.Rules, "webhook")
}

func TestParse_RefusesBadFileNamingField(t *testing.T) {
	t.Parallel()
	const sms = "  - name: sms/acme\n    driver: sms-http\n    sms_http: {url: \"https://a.example\", api_key: {env: K}}\n"
	tests := []struct {
		name, file, want string
	}{
		{"Empty", "", "the file is empty"},
		{"NotYAML", "providers: [", "not valid YAML"},
		{"UnknownTopKey", "provider: []", `line 1: unknown field provider`},
		{"UnknownProviderKey", "providers:\n  - name: sms/a\n    driver: log\n    capacity: 3\n", `line 4: unknown field capacity`},
		{"UnknownDriverKey", "providers:\n  - name: sms/a\n    driver: sms-http\n    sms_http: {uri: x}\n", `unknown field uri`},
		{"UnknownRuleKey", "providers: []\nrules:\n  sms:\n    - name: a\n      matches: {}\n", `unknown field matches`},
		{"NameMissing", "providers:\n  - driver: log\n", "providers[0].name: required"},
		{"NameWithoutChannel", "providers:\n  - name: acme\n    driver: log\n", `providers[0].name: "acme" must be <channel>/<name>`},
		{"NameOfUnknownChannel", "providers:\n  - name: fax/a\n    driver: log\n", `providers[0].name: "fax/a": fax is not a channel`},
		{"NameBadCharacters", "providers:\n  - name: sms/Acme\n    driver: log\n", `providers[0].name: "sms/Acme" must be <channel>/<name>`},
		{"NameTwice", "providers:\n" + sms + sms, `providers[1].name: "sms/acme" is given twice`},
		{"DriverMissing", "providers:\n  - name: sms/a\n", "providers[0].driver: required"},
		{"DriverUnknown", "providers:\n  - name: sms/a\n    driver: pigeon\n", `providers[0].driver: "pigeon" is not webhook, smtp, sms-http, smpp, log or discard`},
		{"DriverOfOtherChannel", "providers:\n  - name: sms/a\n    driver: smtp\n", "providers[0].driver: smtp cannot deliver channel sms"},
		{"SMPPForEmail", "providers:\n  - name: email/a\n    driver: smpp\n", "providers[0].driver: smpp cannot deliver channel email"},
		{"SMPPHostMissing", "providers:\n  - name: sms/a\n    driver: smpp\n    smpp: {system_id: h, password: {env: P}}\n", "providers[0].smpp.host: required"},
		{"SMPPPasswordMissing", "providers:\n  - name: sms/a\n    driver: smpp\n    smpp: {host: smsc.example, system_id: h}\n", "providers[0].smpp.password: required: set env or file"},
		{"SMPPBadLongMode", "providers:\n  - name: sms/a\n    driver: smpp\n    smpp: {host: smsc.example, system_id: h, password: {env: P}, long_messages: chunks}\n", `providers[0].smpp.long_messages: "chunks" is not udh, sar or payload`},
		{"URLMissing", "providers:\n" + sms + "  - name: sms/b\n    driver: sms-http\n    sms_http: {api_key: {env: K}}\n", "providers[1].sms_http.url: required"},
		{"SectionMissing", "providers:\n  - name: sms/a\n    driver: sms-http\n", "providers[0].sms_http.url: required"},
		{"APIKeyMissing", "providers:\n  - name: sms/a\n    driver: sms-http\n    sms_http: {url: \"https://a.example\"}\n", "providers[0].sms_http.api_key: required: set env or file"},
		{"SecretBothSources", "providers:\n  - name: sms/a\n    driver: sms-http\n    sms_http: {url: \"https://a.example\", api_key: {env: K, file: /k}}\n", "providers[0].sms_http.api_key: set env or file, not both"},
		{"SMTPHostMissing", "providers:\n  - name: email/a\n    driver: smtp\n    smtp: {from: a@b.example}\n", "providers[0].smtp.host: required"},
		{"WebhookSecretsMissing", "providers:\n  - name: webhook/a\n    driver: webhook\n", "providers[0].webhook.secrets: required"},
		{"SectionOfOtherDriver", "providers:\n  - name: sms/a\n    driver: log\n    sms_http: {url: x}\n", "providers[0].sms_http: not used by driver log"},
		{"NegativeCap", "providers:\n  - name: sms/a\n    driver: log\n    cap_per_second: -1\n", "providers[0].cap_per_second: must be between 0 (no cap) and 1000000"},
		{"NegativeConcurrency", "providers:\n  - name: sms/a\n    driver: log\n    concurrency: -1\n", "providers[0].concurrency: must be between 0"},
		{"NegativeTimeout", "providers:\n  - name: sms/a\n    driver: log\n    timeout: -1s\n", "providers[0].timeout: must not be negative"},
		{"TimeoutNotDuration", "providers:\n  - name: sms/a\n    driver: log\n    timeout: 10\n", "line 4"},
		{"RatioZero", "providers:\n  - name: sms/a\n    driver: log\n    circuit: {failure_ratio: 0}\n", "providers[0].circuit.failure_ratio: 0 must be above 0 and at most 1"},
		{"RatioAboveOne", "providers:\n  - name: sms/a\n    driver: log\n    circuit: {failure_ratio: 1.5}\n", "providers[0].circuit.failure_ratio: 1.5 must be above 0"},
		{"MinAttemptsZero", "providers:\n  - name: sms/a\n    driver: log\n    circuit: {min_attempts: 0}\n", "providers[0].circuit.min_attempts: 0 must be at least 1"},
		{"CooldownShort", "providers:\n  - name: sms/a\n    driver: log\n    circuit: {cooldown: 10ms}\n", "providers[0].circuit.cooldown: 10ms must be at least 1s"},
		{"RuleChannelUnknown", "providers:\n" + sms + "rules:\n  fax:\n    - {name: a, providers: [sms/acme]}\n", `rules.fax: "fax" is not a channel`},
		{"RuleNameMissing", "providers:\n" + sms + "rules:\n  sms:\n    - {providers: [sms/acme]}\n", "rules.sms[0].name: required"},
		{"RuleNameTwice", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, providers: [sms/acme]}\n    - {name: a, providers: [sms/acme]}\n", `rules.sms[1].name: "a" is given twice`},
		{"RuleProviderUnknown", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, providers: [sms/acme, sms/nope]}\n", "rules.sms[0].providers: sms/nope is not a provider of channel sms"},
		{"RuleProviderOfOtherChannel", "providers:\n" + sms + "  - {name: email/a, driver: log}\nrules:\n  sms:\n    - {name: a, providers: [email/a]}\n", "rules.sms[0].providers: email/a is not a provider of channel sms"},
		{"RuleProviderTwice", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, providers: [sms/acme, sms/acme]}\n", "rules.sms[0].providers: sms/acme is given twice"},
		{"RuleProvidersMissing", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a}\n", "rules.sms[0].providers: required"},
		{"RuleStrategyUnknown", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, strategy: random, providers: [sms/acme]}\n", `rules.sms[0].strategy: "random" is not failover or weighted`},
		{"WeightsTooFew", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, strategy: weighted, providers: [sms/acme]}\n", "rules.sms[0].weights: 0 weight(s) for 1 provider(s)"},
		{"WeightZero", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, strategy: weighted, providers: [sms/acme], weights: [0]}\n", "rules.sms[0].weights[0]: 0 must be between 1"},
		{"WeightsForFailover", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, providers: [sms/acme], weights: [1]}\n", "rules.sms[0].weights: only for strategy weighted"},
		{"PriorityUnknown", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, match: {priorities: [urgent]}, providers: [sms/acme]}\n", `rules.sms[0].match.priorities[0]: "urgent" is not transactional or bulk`},
		{"PhonePrefixWithoutPlus", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, match: {prefixes: [\"+254\", \"2547\"]}, providers: [sms/acme]}\n", `rules.sms[0].match.prefixes[1]: "2547" is not "+" and digits`},
		{"EmailPrefixBare", "providers:\n  - {name: email/a, driver: log}\nrules:\n  email:\n    - {name: a, match: {prefixes: [\"@\"]}, providers: [email/a]}\n", `rules.email[0].match.prefixes[0]: "@" is not "@" and a domain`},
		{"WebhookPrefixNotURL", "providers:\n  - {name: webhook/a, driver: log}\nrules:\n  webhook:\n    - {name: a, match: {prefixes: [\"hooks.example\"]}, providers: [webhook/a]}\n", `rules.webhook[0].match.prefixes[0]: "hooks.example" is not the start of an http`},
		{"ProducerEmpty", "providers:\n" + sms + "rules:\n  sms:\n    - {name: a, match: {producers: [\"\"]}, providers: [sms/acme]}\n", "rules.sms[0].match.producers[0]: empty"},
		{"TwoDocuments", "providers: []\n---\nproviders: []\n", "more than one YAML document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := routing.Parse([]byte(tc.file))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestParse_AcceptsNoProviders(t *testing.T) {
	t.Parallel()
	f, err := routing.Parse([]byte("providers: []\n"))
	require.NoError(t, err)
	require.Empty(t, f.Table().Providers)
}

func TestReadFile_NamesTheFile(t *testing.T) {
	t.Parallel()
	_, err := routing.ReadFile("testdata/nope.yaml")
	require.Error(t, err)
	p := t.TempDir() + "/providers.yaml"
	require.NoError(t, writeFile(p, "providers:\n  - name: sms/a\n"))
	_, err = routing.ReadFile(p)
	require.EqualError(t, err, p+": providers[0].driver: required (webhook, smtp, sms-http, smpp, log or discard)")
	require.False(t, strings.Contains(err.Error(), "\n"))
}

func TestParse_GuideExampleIsValid(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../guide/channels.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "# Providers and routing\n")
	require.True(t, ok, "the providers guide has no Providers and routing section")
	_, block, ok := strings.Cut(section, "```yaml\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")
	f, err := routing.Parse([]byte(block))
	require.NoError(t, err)
	require.Equal(t, routing.DefaultCircuit, f.Table().Providers["sms/acme"].Circuit, "the example's circuit is the default, as it says")
}
