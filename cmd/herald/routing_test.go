package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
)

// routingBundle is a database with providersFile applied.
func routingBundle(t *testing.T) *opBundle {
	t.Helper()
	b := opSetup(t)
	_, stderr, code := execute(t, b.env, "providers", "apply", "-f", writeProviders(t, providersFile))
	require.Equal(t, 0, code, stderr)
	return b
}

func TestRoutingCmd_ListShowsRulesInOrder(t *testing.T) {
	t.Parallel()
	b := routingBundle(t)
	out, stderr, code := execute(t, b.env, "routing", "list")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `sms\s+1\s+kenya\s+prefix \+254; producer shop\s+failover\s+sms/acme, sms/backup`, out)
	require.Regexp(t, `sms\s+2\s+default\s+any\s+weighted\s+sms/acme 80, sms/backup 20`, out)

	var list struct {
		Version int64                     `json:"version"`
		Rules   map[string][]routing.Rule `json:"rules"`
	}
	runJSON(t, b.env, &list, "routing", "list")
	require.Equal(t, int64(1), list.Version)
	require.Equal(t, []string{"kenya", "default"}, []string{list.Rules["sms"][0].Name, list.Rules["sms"][1].Name})
	require.Equal(t, []int{80, 20}, list.Rules["sms"][1].Weights)
}

type routingTestOutput struct {
	Channel    string                `json:"channel"`
	Provider   string                `json:"provider"`
	Rule       string                `json:"rule"`
	NoRules    bool                  `json:"no_rules"`
	NoRoute    bool                  `json:"no_route"`
	AllOpen    bool                  `json:"all_open"`
	Skipped    []routing.SkippedRule `json:"skipped"`
	Candidates []routing.Candidate   `json:"candidates"`
	Reason     string                `json:"reason"`
}

func TestRoutingCmd_TestSaysProviderAndWhy(t *testing.T) {
	t.Parallel()
	b := routingBundle(t)
	out, stderr, code := execute(t, b.env, "routing", "test", "+254712345678", "--producer", "shop")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "channel sms, routing version 1")
	require.Contains(t, out, "rule kenya: matched (failover)")
	require.Contains(t, out, "provider: sms/acme\n")

	var res routingTestOutput
	runJSON(t, b.env, &res, "routing", "test", "+254712345678", "--producer", "web")
	require.Equal(t, "sms", res.Channel, "guessed from the destination")
	require.Equal(t, "default", res.Rule)
	require.Equal(t, []routing.SkippedRule{{Rule: "kenya", Reason: `producer "web" is not one of shop`}}, res.Skipped)
	require.Len(t, res.Candidates, 2)

	// After a failure on acme: backup.
	runJSON(t, b.env, &res, "routing", "test", "+254712345678", "--producer", "shop", "--tried", "sms/acme")
	require.Equal(t, "sms/backup", res.Provider)

	// An open circuit is skipped (the test opens it, as serve would).
	_, err := b.pool.Exec(context.Background(), `UPDATE herald.provider_circuits SET state = 'open', open_until = now() + interval '1 minute' WHERE provider = 'sms/acme'`)
	require.NoError(t, err)
	out, _, code = execute(t, b.env, "routing", "test", "+254712345678", "--producer", "shop")
	require.Equal(t, 0, code)
	require.Contains(t, out, "sms/acme (circuit open until")
	require.Contains(t, out, "provider: sms/backup\n")
	_, err = b.pool.Exec(context.Background(), `UPDATE herald.provider_circuits SET state = 'open', open_until = now() + interval '1 minute'`)
	require.NoError(t, err)
	runJSON(t, b.env, &res, "routing", "test", "+254712345678", "--producer", "shop")
	require.True(t, res.AllOpen)

	// A channel without rules keeps serve's driver.
	runJSON(t, b.env, &res, "routing", "test", "ann@example.com")
	require.Equal(t, "email", res.Channel)
	require.True(t, res.NoRules)
}

func TestRoutingCmd_TestFailsWithoutMatch(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	file := writeProviders(t, "providers:\n  - {name: sms/a, driver: log}\nrules:\n  sms:\n    - {name: kenya, match: {prefixes: [\"+254\"]}, providers: [sms/a]}\n")
	_, _, code := execute(t, b.env, "providers", "apply", "-f", file)
	require.Equal(t, 0, code)

	out, stderr, code := execute(t, b.env, "routing", "test", "+441234567890")
	require.Equal(t, 1, code)
	require.Contains(t, out, "rule kenya: skipped")
	require.Equal(t, "herald: no rule of channel sms matches +4412******90: add a rule (or a catch-all rule without matchers) with herald providers apply\n", stderr)

	out, _, code = execute(t, b.env, "routing", "test", "+441234567890", "--json")
	require.Equal(t, 1, code)
	var res routingTestOutput
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.True(t, res.NoRoute)
	require.Contains(t, res.Reason, "no rule of channel sms")
}

func TestRoutingCmd_TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"routing", "test"}, "takes one argument: DESTINATION"},
		{[]string{"routing", "test", "somebody"}, "cannot tell the channel"},
		{[]string{"routing", "test", "+254712345678", "--channel", "fax"}, "invalid -channel"},
		{[]string{"routing", "test", "+254712345678", "--priority", "urgent"}, "invalid -priority"},
		{[]string{"routing", "frob"}, `unknown subcommand "frob"`},
		{[]string{"providers"}, "missing subcommand"},
	} {
		stdout, stderr, code := execute(t, unreachable, tc.args...)
		requireUsageError(t, stdout, stderr, code, tc.want)
	}
}
