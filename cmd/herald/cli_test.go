package main

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
)

// execute runs one command line in-process as the binary does, outcome
// report and exit status included.
func execute(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	m, out, errb := testMain(env)
	code = m.Execute(context.Background(), args)
	return out.String(), errb.String(), code
}

// subcommands lists the subcommands of the commands that have them.
var subcommands = map[string][]string{
	"api-keys":     {"create", "list", "revoke"},
	"campaigns":    {"list", "show", "cancel"},
	"dead-letters": {"list", "show", "replay", "progress", "count"},
	"malformed":    {"list", "show"},
	"templates":    {"apply", "list", "show", "render"},
	"held":         {"list", "release", "reject"},
	"migrate":      {"up", "down", "status"},
	"senders":      {"list", "approve", "revoke"},
}

// commandLines returns every command line that names one command to run:
// "status", "dead-letters list", ... (and "dead-letters" alone).
func commandLines() [][]string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var out [][]string
	for _, n := range names {
		out = append(out, []string{n})
		for _, s := range subcommands[n] {
			out = append(out, []string{n, s})
		}
	}
	return out
}

// unreachable is a database URL no command can connect to: a command that
// connects when it should not have fails with status 1, not 2.
var unreachable = map[string]string{
	"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1",
	"USER":         "tester",
}

func TestCLI_HelpPrintsUsageExitsZero(t *testing.T) {
	t.Parallel()
	lines := [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}}
	for _, cl := range commandLines() {
		for _, h := range []string{"-h", "--help", "-help"} {
			lines = append(lines, append(append([]string{}, cl...), h))
		}
		lines = append(lines, append([]string{"help"}, cl...))
	}
	// Help wins wherever it stands, as in the flag package.
	lines = append(lines,
		[]string{"dead-letters", "replay", "--reason", "x", "--help"},
		[]string{"status", "--json", "-h", "not-an-id"},
		[]string{"serve", "-metrics-addr", ":0", "--help"},
	)
	for _, args := range lines {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := execute(t, unreachable, args...)
			require.Equal(t, 0, code, stderr)
			require.Empty(t, stderr)
			require.True(t, strings.HasPrefix(stdout, "Usage: ") || strings.HasPrefix(stdout, "herald: "), stdout)
		})
	}

	// A command's usage names its flags and arguments.
	stdout, _, _ := execute(t, unreachable, "dead-letters", "replay", "-h")
	require.Contains(t, stdout, "Usage: herald dead-letters replay [flags] [NOTIFICATION_ID[/ROUTE_ID] ...]")
	require.Contains(t, stdout, "-reason")
	stdout, _, _ = execute(t, unreachable, "help")
	for n := range commands {
		require.Contains(t, stdout, n)
	}
}

// requireUsageError asserts the outcome of a mistake in the command line:
// nothing on stdout, one line on stderr, status 2.
func requireUsageError(t *testing.T, stdout, stderr string, code int, want string) {
	t.Helper()
	require.Equal(t, 2, code, stderr)
	require.Empty(t, stdout)
	require.True(t, strings.HasPrefix(stderr, "herald: "), stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.Contains(t, stderr, want)
}

func TestCLI_UsageErrorOneLineExitTwo(t *testing.T) {
	t.Parallel()
	const id = "0192f1c2-3b4a-7d5e-8f60-123456789abc"
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{}, nil, "no command"},
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, nil, `unknown command "frobnicate"`},
		{[]string{"dead-letters"}, nil, "missing subcommand"},
		{[]string{"dead-letters", "frob"}, nil, `unknown subcommand "frob"`},
		{[]string{"status", id, id}, nil, "takes one argument or none"},
		{[]string{"stats", "extra"}, nil, `unexpected argument "extra"`},
		{[]string{"migrate", "up", "extra"}, nil, `unexpected argument "extra"`},
		{[]string{"dead-letters", "list", "--limit", "x"}, nil, "-limit"},
		// Ids that are not ids.
		{[]string{"status", "not-an-id"}, nil, `invalid notification id "not-an-id"`},
		{[]string{"cancel", "--reason", "x", "not-an-id"}, nil, "invalid notification id"},
		{[]string{"dead-letters", "show", "not-an-id"}, nil, "invalid notification id"},
		{[]string{"dead-letters", "show", id + "/nope"}, nil, `invalid route id "nope"`},
		{[]string{"dead-letters", "replay", "--reason", "x", "not-an-id"}, nil, "invalid notification id"},
		{[]string{"dead-letters", "replay", "--reason", "x", id, "not-an-id"}, nil, "invalid notification id"},
		{[]string{"dead-letters", "progress", "nope"}, nil, `invalid replay id "nope"`},
		{[]string{"malformed", "show", "42"}, nil, `invalid id "42"`},
		// Values the command used to change or ignore.
		{[]string{"dead-letters", "replay", "--all"}, nil, "-reason"},
		{[]string{"dead-letters", "replay", id}, nil, "-reason"},
		{[]string{"dead-letters", "replay", "--reason", "x", "--all", "--batch-size", "0"}, nil, "-batch-size"},
		{[]string{"dead-letters", "replay", "--reason", "x", "--all", "--batch-size", "3000000000"}, nil, "-batch-size"},
		{[]string{"dead-letters", "replay", "--reason", "x", "--all", "--async-threshold", "-1"}, nil, "-async-threshold"},
		{[]string{"dead-letters", "replay", "--reason", "x", "--channel", "emial"}, nil, `invalid -channel "emial"`},
		{[]string{"dead-letters", "list", "--limit", "-5"}, nil, "invalid -limit -5"},
		{[]string{"dead-letters", "list", "--limit", "0"}, nil, "invalid -limit 0"},
		{[]string{"dead-letters", "list", "--limit", "10001"}, nil, "invalid -limit 10001"},
		{[]string{"dead-letters", "list", "--channel", "push"}, nil, "-channel"},
		{[]string{"dead-letters", "list", "--since", "-5m"}, nil, "-since"},
		{[]string{"malformed", "list", "--limit", "-5"}, nil, "invalid -limit -5"},
		{[]string{"malformed", "list", "--code", "missing-field"}, nil, `invalid -code "missing-field"`},
		{[]string{"migrate", "up", "--to", "3"}, nil, "-to"},
		{[]string{"migrate", "status", "--to", "0"}, nil, "-to"},
		{[]string{"migrate", "down", "--to", "-5"}, nil, "invalid -to -5"},
		{[]string{"stats", "--window", "-1m"}, nil, "-window"},
		{[]string{"demo", "--timeout", "0s"}, nil, "-timeout"},
		{[]string{"demo", "--users", "0"}, nil, "-users"},
		{[]string{"bench", "--intents", "0"}, nil, "invalid -intents 0"},
		{[]string{"bench", "--idle-samples", "0"}, nil, "-idle-samples"},
		{[]string{"bench", "--mode", "fast"}, nil, "-mode"},
		{[]string{"bench", "--mode", "retention", "--history", "0"}, nil, "invalid -history 0"},
		{[]string{"bench", "--mode", "retention", "--window", "0s"}, nil, "-window 0s"},
		{[]string{"bench", "--mode", "retention", "--retention-batch", "-3"}, nil, "invalid -retention-batch -3"},
		{[]string{"serve"}, map[string]string{"HERALD_NO_MAINTENANCE": "yes"}, "HERALD_NO_MAINTENANCE"},
		{[]string{"serve", "--max-conns", "-5"}, nil, "invalid -max-conns -5"},
		{[]string{"serve", "--max-conns", "5000000000"}, nil, "invalid -max-conns 5000000000"},
	}
	// A mistyped flag, for every command.
	for _, cl := range commandLines() {
		if _, group := subcommands[cl[0]]; group && len(cl) == 1 {
			continue
		}
		tests = append(tests, struct {
			args []string
			env  map[string]string
			want string
		}{append(append([]string{}, cl...), "--databse-url", "x"), nil, "flag provided but not defined: -databse-url"})
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, "_"), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for k, v := range unreachable {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			stdout, stderr, code := execute(t, env, tt.args...)
			requireUsageError(t, stdout, stderr, code, tt.want)
		})
	}
}

func TestCLI_FailureOneLineExitOne(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	const unknown = "0192f1c2-3b4a-7d5e-8f60-123456789abc"
	for _, args := range [][]string{
		{"status", unknown},
		{"dead-letters", "show", unknown},
		{"dead-letters", "show", unknown + "/email:3f2a9c1b7d4e"},
		{"dead-letters", "progress", "rpl_0123456789abcdef"},
		{"malformed", "show", "intake:99"},
		{"cancel", "--reason", "x", unknown},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := execute(t, b.env, args...)
			require.Equal(t, 1, code, stderr)
			require.Empty(t, stdout)
			require.True(t, strings.HasPrefix(stderr, "herald: "), stderr)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			require.Regexp(t, "not found|no such", stderr)
		})
	}
	// A database that is not there.
	stdout, stderr, code := execute(t, unreachable, "stats")
	require.Equal(t, 1, code, stderr)
	require.Empty(t, stdout)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
}

func TestDeadLettersCmd_ReplayNonIDWritesNothing(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	refs := seed(t, b, operatortest.Spec{N: 2, Dead: true})
	count := func(table string) (n int) {
		t.Helper()
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM herald.`+table).Scan(&n))
		return n
	}
	audited := count("audit_log")

	for _, args := range [][]string{
		{"dead-letters", "replay", "--reason", "x", "not-an-id"},
		{"dead-letters", "replay", "--reason", "x", refs[0].String(), "not-an-id"},
		{"dead-letters", "replay", "--reason", "x", refs[0].NotificationID + "/not-a-route"},
		{"dead-letters", "replay", refs[0].String()},
		{"dead-letters", "replay", "--reason", "", "--all"},
	} {
		stdout, stderr, code := execute(t, b.env, args...)
		requireUsageError(t, stdout, stderr, code, "invalid")
	}
	require.Equal(t, audited, count("audit_log"), "no audit row")
	require.Equal(t, 2, count("dead_letters"), "nothing replayed")

	// A dry run writes nothing either, and needs no reason.
	var dry operator.ReplayResult
	runJSON(t, b.env, &dry, "dead-letters", "replay", "--dry-run", refs[0].String())
	require.Equal(t, int64(1), dry.Matched)
}

// withPassword returns dbURL with user and password set.
func withPassword(t *testing.T, dbURL, user, password string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.UserPassword(user, password)
	return u.String()
}

func TestCLI_OutputNeverShowsPassword(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	refs := seed(t, b, operatortest.Spec{N: 1, Dead: true})
	const secret = "Tr0ub4dor-s3cret"
	// The throwaway server trusts every login, so the password is carried
	// along and ignored: every command runs for real.
	dbURL := withPassword(t, b.env["DATABASE_URL"], "postgres", secret)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " user=postgres password='" + secret + "' dbname=" + strings.TrimPrefix(u.Path, "/") + " sslmode=disable"

	var lines [][]string
	for _, cl := range commandLines() {
		lines = append(lines,
			append(append([]string{}, cl...), "-h"),
			append(append([]string{}, cl...), "--no-such-flag"),
		)
	}
	lines = append(lines,
		[]string{"migrate", "status", "--json"},
		[]string{"migrate", "status"},
		[]string{"stats", "--json"},
		[]string{"dead-letters", "list", "--json", "--log-level", "debug"},
		[]string{"dead-letters", "show", refs[0].String(), "--json"},
		[]string{"dead-letters", "replay", "--dry-run", "--all", "--json"},
		[]string{"dead-letters", "progress", "rpl_0123456789abcdef"},
		[]string{"status", refs[0].NotificationID, "--json"},
		[]string{"malformed", "list", "--json"},
		[]string{"status", "not-an-id"},
		[]string{"demo", "--json", "-users", "10"},
	)
	envs := map[string]map[string]string{
		"URL":             {"DATABASE_URL": dbURL, "USER": "tester"},
		"KeywordValue":    {"HERALD_DATABASE_URL": kv, "USER": "tester"},
		"EscapedPassword": {"DATABASE_URL": withPassword(t, b.env["DATABASE_URL"], "postgres", secret+"/@:"), "USER": "tester"},
	}
	for name, env := range envs {
		t.Run(name, func(t *testing.T) {
			for _, args := range lines {
				if name != "URL" && args[0] == "demo" {
					continue // one demo run is enough
				}
				stdout, stderr, _ := execute(t, env, args...)
				require.NotContains(t, stdout+stderr, secret, "herald %s", strings.Join(args, " "))
			}
		})
	}

	// The password given as a flag, to a server that is not there and as a
	// URL that does not parse.
	for _, args := range [][]string{
		{"stats", "--database-url", "postgres://bob:" + secret + "@127.0.0.1:1/none?connect_timeout=1"},
		{"stats", "--database-url", "postgres://bob:" + secret + "@127.0.0.1:99999999/none"},
		{"stats", "--database-url", "postgres://bob:" + secret + "@%zz/none"},
		{"stats", "--database-url", "host=127.0.0.1 port=1 password=" + secret + " connect_timeout=1"},
		{"stats", "--database-url", "host=127.0.0.1 port=x password=" + secret},
		{"stats", "--database-url", "postgres://bob@127.0.0.1:1/none?password=" + secret + "&sslmode=bogus"},
	} {
		stdout, stderr, code := execute(t, nil, args...)
		require.NotZero(t, code)
		require.NotContains(t, stdout+stderr, secret, "herald %s", strings.Join(args, " "))
	}
}
