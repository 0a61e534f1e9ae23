package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/schema"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// testMain returns a Main whose output is captured and whose environment is
// only env.
func testMain(env map[string]string) (*Main, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	m := &Main{
		Stdin:  bytes.NewReader(nil),
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) string { return env[k] },
	}
	return m, &out, &errb
}

// run runs one command line in-process, as the binary would.
func run(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	m, out, errb := testMain(env)
	err := m.Run(context.Background(), args)
	m.Close()
	return out.String(), errb.String(), err
}

func TestMigrateCmd_UpStatusDownReport(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	// Start from an empty schema so `up` has work to do.
	{
		m, _, _ := testMain(nil)
		p, err := m.pool(context.Background(), &globalFlags{DatabaseURL: dbURL})
		require.NoError(t, err)
		_, err = schema.NewMigrator(p, nil).Down(context.Background(), 0)
		require.NoError(t, err)
		m.Close()
	}
	env := map[string]string{"DATABASE_URL": dbURL}

	out, _, err := run(t, env, "migrate", "up", "--json")
	require.NoError(t, err)
	var up struct{ Steps []schema.Step }
	require.NoError(t, json.Unmarshal([]byte(out), &up))
	require.NotEmpty(t, up.Steps)
	require.Equal(t, "herald", up.Steps[0].Component)
	require.Equal(t, int64(1), up.Steps[0].Version)

	out, _, err = run(t, env, "migrate", "up")
	require.NoError(t, err)
	require.Contains(t, out, "nothing to do")

	out, _, err = run(t, env, "migrate", "status", "--json")
	require.NoError(t, err)
	var sts []schema.Status
	require.NoError(t, json.Unmarshal([]byte(out), &sts))
	require.Len(t, sts, 2)
	for _, s := range sts {
		require.Empty(t, s.Pending)
	}

	out, _, err = run(t, env, "migrate", "down")
	require.NoError(t, err)
	require.Contains(t, out, "herald down")
}

func TestCLI_FlagsWinOverEnvironment(t *testing.T) {
	t.Parallel()
	good := pgtemp.NewDatabase(t)
	// The environment names a database that does not exist; the flag wins.
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	_, _, err := run(t, env, "migrate", "status", "--database-url", good)
	require.NoError(t, err)
}

func TestCLI_BadValuesStopNamingThem(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"-log-level":    {"migrate", "status", "--log-level", "loud"},
		"-log-format":   {"migrate", "status", "--log-format", "xml"},
		"-database-url": {"migrate", "status", "--database-url", "postgres://%zz"},
		"subcommand":    {"migrate", "sideways"},
		"command":       {"frobnicate"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, err := run(t, nil, args...)
			require.Error(t, err)
			require.Equal(t, 2, exitCode(err))
			require.NotContains(t, err.Error(), "\n")
			if name != "command" && name != "subcommand" {
				require.Contains(t, err.Error(), name)
			}
		})
	}
}
