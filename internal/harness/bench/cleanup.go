package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Cleanup is what a VACUUM of an engine's tables cost right after its
// phase: the removal of the dead tuples the phase left behind.
//
// Autovacuum visits a database about once a minute (autovacuum_naptime),
// so whether it cleans up during a phase of seconds, and is counted in
// the phase's figures, is chance: one engine's phase may pay for a vacuum
// of its table and the next not. With a VACUUM after every phase, the
// phase's figures plus its Cleanup's are the whole of its cost whichever
// way that chance fell.
type Cleanup struct {
	// PostgresCPUSeconds is the CPU time the cluster's processes used
	// over the VACUUM (0 when they cannot be read).
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
	// WALBytes is the WAL the VACUUM wrote.
	WALBytes int64 `json:"wal_bytes"`
	// DeadBefore and DeadAfter are the dead tuples of the tables
	// (pg_stat_user_tables.n_dead_tup) before and after it.
	DeadBefore int64 `json:"dead_tuples_before"`
	DeadAfter  int64 `json:"dead_tuples_after"`
}

// vacuumAfter runs VACUUM on each of tables (the herald schema's tables
// a phase wrote: the engine's own) and measures it from before, the
// phase's closing snapshot.
func vacuumAfter(ctx context.Context, pool *pgxpool.Pool, before snapshot, tables []TableCost) (Cleanup, error) {
	var c Cleanup
	cpuBefore, err := readCPU(ctx, pool)
	if err != nil {
		return c, err
	}
	for _, t := range tables {
		name := pgx.Identifier{"herald", t.Table}.Sanitize()
		if _, err := pool.Exec(ctx, "VACUUM "+name); err != nil {
			return c, fmt.Errorf("vacuum %s after the phase: %w", name, err)
		}
	}
	cpuAfter, err := readCPU(ctx, pool)
	if err != nil {
		return c, err
	}
	after, err := takeSnapshot(ctx, pool)
	if err != nil {
		return c, err
	}
	if cpuBefore.postgresOK && cpuAfter.postgresOK {
		c.PostgresCPUSeconds = (cpuAfter.postgres - cpuBefore.postgres).Seconds()
	}
	c.WALBytes = after.wal - before.wal
	for _, t := range tables {
		c.DeadBefore += before.tables[t.Table].DeadTuples
		c.DeadAfter += after.tables[t.Table].DeadTuples
	}
	return c, nil
}
