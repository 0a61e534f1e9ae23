package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// readFrom is where a --json answer says it was read.
type readFrom struct {
	ReadFrom          string   `json:"read_from"`
	ReplicaLagSeconds *float64 `json:"replica_lag_seconds"`
}

// TestReadDatabaseURL_ReadsGoToAFreshReplicaWritesToThePrimary runs the
// CLI against a real streaming replica of a cluster of its own (its replay
// is paused and it is stopped, so no other test shares it).
func TestReadDatabaseURL_ReadsGoToAFreshReplicaWritesToThePrimary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, err := pgtemp.Start(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Stop() })
	dbURL, drop, err := pgtemp.CreateDatabase(ctx, &pgtemp.DatabaseOpts{ServerURL: primary.URL("postgres"), Label: "replica"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = drop(context.Background()) })
	replica, err := primary.StartReplica(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = replica.Stop() })
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.Host = "127.0.0.1:" + strconv.Itoa(replica.Port())
	replicaURL := u.String()

	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	operatortest.Seed(t, pool, operatortest.Spec{N: 2, Dead: true})
	ops, _ := pgtemp.Login(t, pool, "ops", "herald_operator")
	require.NoError(t, replica.WaitReplayed(ctx, primary))
	// as returns u, a URL of the test's database, for login.
	as := func(u, login string) string {
		v, err := url.Parse(u)
		require.NoError(t, err)
		v.User = url.User(login)
		return v.String()
	}

	env := map[string]string{"DATABASE_URL": dbURL, "HERALD_READ_DATABASE_URL": replicaURL, "USER": "tester"}
	// answer runs a command with --json and returns its answer, where it
	// was read, and its stderr.
	answer := func(t *testing.T, v any, args ...string) (readFrom, string) {
		t.Helper()
		stdout, stderr, code := execute(t, env, append(args, "--json")...)
		require.Equal(t, 0, code, stderr)
		var rf readFrom
		require.NoError(t, json.Unmarshal([]byte(stdout), &rf), stdout)
		require.NoError(t, json.Unmarshal([]byte(stdout), v), stdout)
		return rf, stderr
	}
	deadLetters := func(t *testing.T, args ...string) (int, readFrom, string) {
		t.Helper()
		var page struct {
			DeadLetters []json.RawMessage `json:"dead_letters"`
		}
		rf, stderr := answer(t, &page, append([]string{"dead-letters", "list"}, args...)...)
		return len(page.DeadLetters), rf, stderr
	}

	t.Run("CaughtUpReplicaAnswers", func(t *testing.T) {
		n, rf, stderr := deadLetters(t)
		require.Equal(t, 2, n)
		require.Equal(t, "replica", rf.ReadFrom)
		require.NotNil(t, rf.ReplicaLagSeconds)
		require.Empty(t, stderr)

		// A list's rows go under "items" beside where they were read.
		var list struct{ Items []json.RawMessage }
		rf, _ = answer(t, &list, "campaigns", "list")
		require.Equal(t, "replica", rf.ReadFrom)
		require.NotNil(t, list.Items)

		// An operator's login reads on the replica as on the primary: the
		// commands, and the views from psql.
		stdout, stderr, code := execute(t, map[string]string{
			"DATABASE_URL": as(dbURL, ops), "HERALD_READ_DATABASE_URL": as(replicaURL, ops),
		}, "dead-letters", "list", "--json")
		require.Equal(t, 0, code, stderr)
		require.NoError(t, json.Unmarshal([]byte(stdout), &rf))
		require.Equal(t, "replica", rf.ReadFrom)
		opsReplica, err := pgx.Connect(ctx, as(replicaURL, ops))
		require.NoError(t, err)
		defer opsReplica.Close(ctx)
		var views int
		require.NoError(t, opsReplica.QueryRow(ctx, "SELECT count(*) FROM herald.dead_letter_view").Scan(&views))
		require.Equal(t, 2, views)

		// Text answers are as ever.
		stdout, stderr, code = execute(t, env, "stats")
		require.Equal(t, 0, code, stderr)
		require.Empty(t, stderr)
		require.Contains(t, stdout, "permanent")
	})

	exec := func(c *pgtemp.Cluster, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec(replica, "SELECT pg_wal_replay_pause()")
	operatortest.Seed(t, pool, operatortest.Spec{N: 1, Dead: true})

	t.Run("StaleWithinTheBoundStillReadsTheReplica", func(t *testing.T) {
		n, rf, stderr := deadLetters(t, "--read-max-lag", "1h")
		require.Equal(t, 2, n, "replay is paused: the replica has not seen the third dead letter")
		require.Equal(t, "replica", rf.ReadFrom)
		require.Positive(t, *rf.ReplicaLagSeconds)
		require.Empty(t, stderr)
	})

	t.Run("StaleBeyondTheBoundReadsThePrimary", func(t *testing.T) {
		n, rf, stderr := deadLetters(t, "--read-max-lag", "1ms")
		require.Equal(t, 3, n)
		require.Equal(t, "primary", rf.ReadFrom)
		require.Greater(t, *rf.ReplicaLagSeconds, 0.001)
		require.True(t, strings.HasPrefix(stderr, "herald: read from the primary: the replica lags "), stderr)
		require.Contains(t, stderr, "more than -read-max-lag 1ms")
		require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	})

	t.Run("WritesGoToThePrimary", func(t *testing.T) {
		// The replica, paused, would refuse the replay's writes (and show
		// two dead letters, not three): the replay moves all three on the
		// primary.
		var out struct {
			Replayed int64 `json:"replayed"`
		}
		stdout, stderr, code := execute(t, env, "dead-letters", "replay", "--all", "--reason", "fixed", "--json")
		require.Equal(t, 0, code, stderr)
		require.NotContains(t, stderr, "read from")
		require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
		require.NotContains(t, stdout, "read_from")
		var left int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.dead_letters").Scan(&left))
		require.Zero(t, left)

		// A write has no replica to be sent to.
		stdout, stderr, code = execute(t, env, "dead-letters", "replay", "--all", "--reason", "x", "--read-database-url", replicaURL)
		requireUsageError(t, stdout, stderr, code, "flag provided but not defined: -read-database-url")
	})

	exec(replica, "SELECT pg_wal_replay_resume()")
	require.NoError(t, replica.Halt())

	t.Run("DownReplicaReadsThePrimary", func(t *testing.T) {
		var st struct {
			Backlog []json.RawMessage `json:"backlog"`
		}
		rf, stderr := answer(t, &st, "stats")
		require.Equal(t, "primary", rf.ReadFrom)
		require.Nil(t, rf.ReplicaLagSeconds)
		require.Len(t, st.Backlog, 1, "the three replayed routes wait to be delivered again")
		require.True(t, strings.HasPrefix(stderr, "herald: read from the primary: the replica is unreachable: connect to postgres://"), stderr)
		require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	})
}
