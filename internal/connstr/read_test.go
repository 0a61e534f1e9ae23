package connstr_test

import (
	"context"
	"flag"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestReadSource_AnnotateAddsWhereItWasRead(t *testing.T) {
	t.Parallel()
	lag := 0.25
	s := &connstr.ReadSource{From: connstr.FromReplica, LagSeconds: &lag, Why: "not printed"}
	for _, tt := range []struct {
		v    any
		want string
	}{
		{map[string]int{"a": 1}, `{"read_from":"replica","replica_lag_seconds":0.25,"a":1}`},
		{struct{}{}, `{"read_from":"replica","replica_lag_seconds":0.25}`},
		{[]int{1, 2}, `{"read_from":"replica","replica_lag_seconds":0.25,"items":[1,2]}`},
		{[]int{}, `{"read_from":"replica","replica_lag_seconds":0.25,"items":[]}`},
	} {
		got, err := s.Annotate(tt.v)
		require.NoError(t, err)
		require.JSONEq(t, tt.want, string(got))
	}
	got, err := (&connstr.ReadSource{From: connstr.FromPrimary}).Annotate(map[string]int{"a": 1})
	require.NoError(t, err)
	require.JSONEq(t, `{"read_from":"primary","replica_lag_seconds":null,"a":1}`, string(got))
}

func TestRead_BindTakesFlagsOverEnvironment(t *testing.T) {
	t.Parallel()
	parse := func(env map[string]string, args ...string) (connstr.Read, error) {
		var r connstr.Read
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		r.Bind(fs, func(k string) string { return env[k] })
		require.NoError(t, fs.Parse(args))
		return r, r.Validate()
	}
	r, err := parse(nil)
	require.NoError(t, err)
	require.Equal(t, connstr.Read{URL: "", MaxLag: connstr.DefaultMaxLag}, withoutRaw(r))

	env := map[string]string{"HERALD_READ_DATABASE_URL": "postgres://r@replica/herald", "HERALD_READ_MAX_LAG": "30s"}
	r, err = parse(env)
	require.NoError(t, err)
	require.Equal(t, "postgres://r@replica/herald", r.URL)
	require.Equal(t, 30*time.Second, r.MaxLag)
	r, err = parse(env, "-read-database-url", "postgres://o@other/herald", "-read-max-lag", "0s")
	require.NoError(t, err)
	require.Equal(t, "postgres://o@other/herald", r.URL)
	require.Zero(t, r.MaxLag)

	_, err = parse(nil, "-read-max-lag", "-1s")
	require.ErrorContains(t, err, `invalid -read-max-lag "-1s"`)
	_, err = parse(map[string]string{"HERALD_READ_MAX_LAG": "soon"})
	require.ErrorContains(t, err, `invalid -read-max-lag "soon"`)
	_, err = parse(nil, "-read-database-url", "postgres://r:s3cret@replica:99999999/herald")
	require.ErrorContains(t, err, "invalid -read-database-url")
	require.NotContains(t, err.Error(), "s3cret")
}

// withoutRaw returns r as Validate leaves it, less what Bind keeps as
// given.
func withoutRaw(r connstr.Read) connstr.Read { return connstr.Read{URL: r.URL, MaxLag: r.MaxLag} }

// TestConnectRead_ChoosesReplicaOrPrimary runs against a real streaming
// replica of a cluster of its own: the replica is paused and stopped, so
// no other test shares them.
func TestConnectRead_ChoosesReplicaOrPrimary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, err := pgtemp.Start(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Stop() })
	replica, err := primary.StartReplica(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = replica.Stop() })

	admin := func(c *pgtemp.Cluster, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	// An ordinary login reads: the replication functions ConnectRead
	// calls need no privilege.
	admin(primary, "CREATE ROLE reader LOGIN; CREATE TABLE seen (v int); GRANT SELECT ON seen TO reader")
	require.NoError(t, replica.WaitReplayed(ctx, primary))
	as := func(c *pgtemp.Cluster) string {
		u, err := url.Parse(c.URL("postgres"))
		require.NoError(t, err)
		u.User = url.User("reader")
		return u.String()
	}
	count := func(r connstr.Read) (int, *connstr.ReadSource) {
		t.Helper()
		pool, src, err := connstr.ConnectRead(ctx, as(primary), r, nil)
		require.NoError(t, err)
		defer pool.Close()
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM seen").Scan(&n))
		var inRecovery bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery))
		require.Equal(t, src.From == connstr.FromReplica, inRecovery, "the pool is on the server the source names")
		return n, src
	}
	// A minute to catch up: this machine may be slow, and the wait ends
	// as soon as the replica has.
	bound := connstr.Read{URL: as(replica), MaxLag: time.Hour, CatchUp: time.Minute}

	t.Run("CaughtUpReplicaShowsThePrimarysCommits", func(t *testing.T) {
		admin(primary, "INSERT INTO seen VALUES (1)")
		n, src := count(bound)
		require.Equal(t, connstr.FromReplica, src.From)
		require.Equal(t, 1, n, "the replica caught up with the write before the read")
		require.NotNil(t, src.LagSeconds)
		require.Empty(t, src.Why)
	})

	t.Run("NotAStandbyGoesToThePrimary", func(t *testing.T) {
		n, src := count(connstr.Read{URL: as(primary), MaxLag: time.Hour})
		require.Equal(t, connstr.FromPrimary, src.From)
		require.Equal(t, 1, n)
		require.Contains(t, src.Why, "not a standby")
	})

	admin(replica, "SELECT pg_wal_replay_pause()")
	admin(primary, "INSERT INTO seen VALUES (2)")

	t.Run("StaleWithinTheBoundReadsTheReplica", func(t *testing.T) {
		n, src := count(bound)
		require.Equal(t, connstr.FromReplica, src.From)
		require.Equal(t, 1, n, "replay is paused: the replica does not show the second row")
		require.Positive(t, *src.LagSeconds)
	})

	t.Run("StaleBeyondTheBoundGoesToThePrimary", func(t *testing.T) {
		n, src := count(connstr.Read{URL: as(replica), MaxLag: time.Millisecond})
		require.Equal(t, connstr.FromPrimary, src.From)
		require.Equal(t, 2, n)
		require.Contains(t, src.Why, "the replica lags ")
		require.Contains(t, src.Why, "more than -read-max-lag 1ms")
		require.Greater(t, *src.LagSeconds, 0.001)
	})

	admin(replica, "SELECT pg_wal_replay_resume()")

	t.Run("ResumedReplicaCatchesUp", func(t *testing.T) {
		n, src := count(bound)
		require.Equal(t, connstr.FromReplica, src.From)
		require.Equal(t, 2, n)
	})

	t.Run("DownReplicaGoesToThePrimary", func(t *testing.T) {
		require.NoError(t, replica.Halt())
		n, src := count(bound)
		require.Equal(t, connstr.FromPrimary, src.From)
		require.Equal(t, 2, n)
		require.Contains(t, src.Why, "the replica is unreachable: connect to postgres://reader@127.0.0.1:")
		require.Nil(t, src.LagSeconds)
	})

	t.Run("DownPrimaryFails", func(t *testing.T) {
		require.NoError(t, primary.Halt())
		_, _, err := connstr.ConnectRead(ctx, as(primary), bound, nil)
		require.ErrorContains(t, err, "connect to postgres://reader@127.0.0.1:")
	})
}
