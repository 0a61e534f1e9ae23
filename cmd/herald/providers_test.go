package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
)

// The CLI tests (cli_test.go) learn these commands' subcommands here, so
// that each gets its help and mistyped-flag checks.
func init() {
	subcommands["providers"] = []string{"apply", "list", "export", "health", "disable", "drain", "enable"}
	subcommands["routing"] = []string{"list", "test"}
}

// providersFile is a small providers file: two SMS providers, one rule of
// each strategy.
const providersFile = `
providers:
  - name: sms/acme
    driver: sms-http
    cap_per_second: 200
    timeout: 10s
    sms_http: {url: "https://api.acme.example/v1/sms", api_key: {env: ACME_KEY}, from: HERALD}
  - name: sms/backup
    driver: sms-http
    circuit: {failure_ratio: 0.25, min_attempts: 10, cooldown: 1m}
    sms_http: {url: "https://sms.backup.example/send", api_key: {file: /run/secrets/backup}}
rules:
  sms:
    - name: kenya
      match: {prefixes: ["+254"], producers: [shop]}
      providers: [sms/acme, sms/backup]
    - name: default
      strategy: weighted
      providers: [sms/acme, sms/backup]
      weights: [80, 20]
`

// writeProviders writes body to a file of the test's and returns its path.
func writeProviders(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestProvidersCmd_ApplyShowsDiffIdempotent(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	file := writeProviders(t, providersFile)

	out, stderr, code := execute(t, b.env, "providers", "apply", "-f", file, "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^added\s+provider\s+sms/acme$`, out)
	require.Regexp(t, `(?m)^added\s+rule\s+sms/kenya$`, out)
	require.Contains(t, out, "dry run: 4 change(s), nothing applied (version 0)")

	out, stderr, code = execute(t, b.env, "providers", "apply", "-f", file, "--reason", "first providers")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "applied 4 change(s): version 1")
	var actor, reason string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT actor, reason FROM herald.audit_log WHERE action = 'routing_apply'`).Scan(&actor, &reason))
	require.Equal(t, "tester", actor, "$USER by default")
	require.Equal(t, "first providers", reason)

	out, _, code = execute(t, b.env, "providers", "apply", "-f", file)
	require.Equal(t, 0, code)
	require.Equal(t, "no changes (version 1)\n", out)

	var res struct {
		DryRun  bool             `json:"dry_run"`
		Changes []routing.Change `json:"changes"`
		Version int64            `json:"version"`
	}
	changed := writeProviders(t, strings.Replace(providersFile, "weights: [80, 20]", "weights: [50, 50]", 1))
	runJSON(t, b.env, &res, "providers", "apply", "-f", changed, "--actor", "ann")
	require.Equal(t, []routing.Change{{Kind: "rule", Name: "sms/default", Change: "changed"}}, res.Changes)
	require.Equal(t, int64(2), res.Version)
}

func TestProvidersCmd_ApplyRefusesBadFile(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	_, _, code := execute(t, b.env, "providers", "apply", "-f", writeProviders(t, providersFile))
	require.Equal(t, 0, code)

	bad := writeProviders(t, strings.Replace(providersFile, "providers: [sms/acme, sms/backup]\n    - name: default", "providers: [sms/acme, sms/nope]\n    - name: default", 1))
	out, stderr, code := execute(t, b.env, "providers", "apply", "-f", bad)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "herald: "+bad+": rules.sms[0].providers: sms/nope is not a provider of channel sms\n", stderr)

	var version int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT version FROM herald.routing_state`).Scan(&version))
	require.Equal(t, int64(1), version)

	out, stderr, code = execute(t, b.env, "providers", "apply")
	requireUsageError(t, out, stderr, code, "-f")
	out, stderr, code = execute(t, b.env, "providers", "apply", "-f", bad, "extra")
	requireUsageError(t, out, stderr, code, `unexpected argument "extra"`)
	out, stderr, code = execute(t, map[string]string{"DATABASE_URL": b.env["DATABASE_URL"]}, "providers", "apply", "-f", bad)
	requireUsageError(t, out, stderr, code, "-actor")
	_, stderr, code = execute(t, b.env, "providers", "apply", "-f", filepath.Join(t.TempDir(), "missing.yaml"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no such file")
}

func TestProvidersCmd_ListHidesSecrets(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	out, _, code := execute(t, b.env, "providers", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "no providers")

	env := map[string]string{"DATABASE_URL": b.env["DATABASE_URL"], "USER": "tester", "ACME_KEY": "sekrit-value"}
	_, _, code = execute(t, env, "providers", "apply", "-f", writeProviders(t, providersFile))
	require.Equal(t, 0, code)

	out, stderr, code := execute(t, env, "providers", "list")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "sms/acme")
	require.Contains(t, out, "api_key env ACME_KEY")
	require.Contains(t, out, "api_key file /run/secrets/backup")
	require.Contains(t, out, "ratio 0.25, min 10, cooldown 1m0s")
	require.NotContains(t, out, "sekrit")

	var list struct {
		Version   int64 `json:"version"`
		Providers []struct {
			Name         string          `json:"name"`
			Channel      string          `json:"channel"`
			Driver       string          `json:"driver"`
			CapPerSecond int             `json:"cap_per_second"`
			Settings     json.RawMessage `json:"settings"`
		} `json:"providers"`
	}
	runJSON(t, env, &list, "providers", "list")
	require.Equal(t, int64(1), list.Version)
	require.Len(t, list.Providers, 2)
	require.Equal(t, "sms/acme", list.Providers[0].Name)
	require.Equal(t, 200, list.Providers[0].CapPerSecond)
	require.JSONEq(t, `{"timeout": "10s", "sms_http": {"url": "https://api.acme.example/v1/sms", "api_key": {"env": "ACME_KEY"}, "from": "HERALD"}}`,
		string(list.Providers[0].Settings))
}

// TestProvidersCmd_ListShowsSMPPTarget applies an
// SMPP provider whose receipts settings say what its receipts mean (no
// HTTP token: its receipts arrive on its binds), and lists it with the
// SMSC it binds to and where its password is read from.
func TestProvidersCmd_ListShowsSMPPTarget(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	env := map[string]string{"DATABASE_URL": b.env["DATABASE_URL"], "USER": "tester"}
	_, stderr, code := execute(t, env, "providers", "apply", "-f", writeProviders(t, `
providers:
  - name: sms/smsc
    driver: smpp
    smpp: {host: smsc.example, port: 2776, system_id: herald, password: {env: SMSC_PASSWORD}}
    receipts: {retry_temporary: true, temporary_errors: ["088"]}
`))
	require.Equal(t, 0, code, stderr)
	out, stderr, code := execute(t, env, "providers", "list")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "smpp://smsc.example:2776")
	require.Contains(t, out, "system_id herald, password env SMSC_PASSWORD")
}

func TestProvidersCmd_DisableDrainEnableRoutePast(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	_, stderr, code := execute(t, b.env, "providers", "apply", "-f", writeProviders(t, providersFile), "-reason", "setup")
	require.Zero(t, code, stderr)

	_, stderr, code = execute(t, b.env, "providers", "disable", "sms/acme")
	require.Equal(t, 2, code, "taking a provider out needs a reason")
	require.Contains(t, stderr, "-reason")
	out, stderr, code := execute(t, b.env, "providers", "drain", "sms/acme", "-reason", "maintenance")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "sms/acme: enabled -> draining")
	// herald routing test routes past it, as the dispatcher does.
	out, stderr, code = execute(t, b.env, "routing", "test", "-producer", "shop", "+254712345678")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "sms/backup")
	_, stderr, code = execute(t, b.env, "providers", "disable", "sms/nope", "-reason", "x")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "unknown provider")
	out, stderr, code = execute(t, b.env, "providers", "enable", "sms/acme")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "draining -> enabled")
}
