package pgtemp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartReplica starts a streaming replica of c: a hot standby made from a
// base backup that pg_basebackup takes over c's loopback port (-R writes
// primary_conninfo and standby.signal, -X stream brings the WAL written
// meanwhile), in a directory of its own, listening on a free loopback port
// of its own, with c's settings. It streams from c until Stop, Halt or
// Crash; stop it before c. Reads on it see c's commits once it has
// replayed them; writes are refused there, as on any standby.
//
// c must accept replication connections: a wal_level of replica or
// logical, max_wal_senders above zero, and a replication line in pg_hba.conf
// for loopback, all of which initdb's defaults give.
func (c *Cluster) StartReplica(ctx context.Context) (*Cluster, error) {
	if err := c.checkReplicable(ctx); err != nil {
		return nil, err
	}
	r := &Cluster{cfg: c.cfg, bindir: c.bindir, cred: c.cred}
	var err error
	r.dir, err = os.MkdirTemp(c.cfg.Dir, "herald-pgtemp-")
	if err != nil {
		return nil, fmt.Errorf("create replica directory: %w", err)
	}
	if err := r.chown(r.dir); err != nil {
		r.remove()
		return nil, err
	}
	r.logPath = filepath.Join(r.dir, "postgres.log")
	args := []string{
		"-D", filepath.Join(r.dir, "data"),
		"-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=pgtemp_replica", c.port),
		"-R", "-X", "stream", "-c", "fast",
	}
	if !c.cfg.Durable {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.bindir, "pg_basebackup"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.Dir = r.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		r.remove()
		return nil, fmt.Errorf("pg_basebackup: %w: %s", err, strings.TrimSpace(string(out)))
	}
	for range 5 { // a free port can be taken between choosing and binding
		r.port, err = freePort()
		if err != nil {
			break
		}
		if err = r.start(ctx); err == nil {
			return r, nil
		}
	}
	r.remove()
	return nil, err
}

// checkReplicable says, in one error, what c lacks to stream to a replica.
func (c *Cluster) checkReplicable(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("replica of 127.0.0.1:%d: %w", c.port, err)
	}
	defer conn.Close(ctx)
	var level, senders string
	if err := conn.QueryRow(ctx, "SELECT current_setting('wal_level'), current_setting('max_wal_senders')").Scan(&level, &senders); err != nil {
		return fmt.Errorf("replica of 127.0.0.1:%d: %w", c.port, err)
	}
	if n, _ := strconv.Atoi(senders); level == "minimal" || n < 1 {
		return fmt.Errorf("replica of 127.0.0.1:%d: the primary has wal_level=%s and max_wal_senders=%s: "+
			"a replica needs wal_level=replica (or logical) and max_wal_senders of 1 or more", c.port, level, senders)
	}
	return nil
}

// WaitReplayed waits until the replica r has replayed everything its
// primary had written to its WAL when it was called (its insert
// position, which an asynchronous commit has passed before it is
// flushed): what was committed on the primary before is then visible on
// r. It returns ctx's error if that
// does not happen first, and an error if either server does not answer.
func (r *Cluster) WaitReplayed(ctx context.Context, primary *Cluster) error {
	p, err := pgx.Connect(ctx, primary.URL("postgres"))
	if err != nil {
		return fmt.Errorf("wait for replay: primary: %w", err)
	}
	defer p.Close(ctx)
	var target string
	if err := p.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&target); err != nil {
		return fmt.Errorf("wait for replay: primary: %w", err)
	}
	s, err := pgx.Connect(ctx, r.URL("postgres"))
	if err != nil {
		return fmt.Errorf("wait for replay: replica: %w", err)
	}
	defer s.Close(ctx)
	for {
		var done bool
		if err := s.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", target).Scan(&done); err != nil {
			return fmt.Errorf("wait for replay: replica: %w", err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for replay of %s: %w", target, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
