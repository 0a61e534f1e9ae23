package bench

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/schema"
)

// Database is a freshly created and migrated database for one run, on a
// server given by URL or on a throwaway cluster of its own.
type Database struct {
	// URL is the run's database.
	URL string
	// Durable reports whether the server keeps fsync on (always true for a
	// given server, which the bench does not inspect beyond `SHOW fsync`).
	Durable bool
	// Version is the server's version string.
	Version string
	// SharedBuffers is the server's shared_buffers setting.
	SharedBuffers string
	// Cluster is the throwaway cluster, nil for a given server.
	Cluster *pgtemp.Cluster
	// Pool is a small pool for measurements, separate from the workload's.
	Pool *pgxpool.Pool

	// wal counts index entries from the WAL; nil when it cannot, and
	// walErr then says why.
	wal    *walInspector
	walErr error

	admin string
	name  string
}

// OpenDatabase creates a database named herald_bench_<time> on the server
// at serverURL (any database on it; the role needs CREATEDB), or, when
// serverURL is empty, on a throwaway cluster started with fsync on if
// durable; and migrates it. Close drops it.
func OpenDatabase(ctx context.Context, serverURL string, durable bool, settings map[string]string) (*Database, error) {
	d := &Database{Durable: durable}
	if serverURL == "" {
		// Configured as a production server on this machine would be: WAL
		// kept for recycling and no size-triggered checkpoint inside a
		// phase (the bench checkpoints before each phase itself), and
		// shared_buffers at a quarter of the machine's memory, the usual
		// rule. Postgres's default of 128 MB, which no production server
		// keeps, cannot hold a million-route backlog with its records and
		// indexes (about 1.1 GB): the scale mode's million-route point
		// lost 30-45% of its throughput with 128 MB or 1 GB, none with
		// 2 GB. -pg-set overrides.
		all := map[string]string{"min_wal_size": "1GB", "max_wal_size": "4GB", "shared_buffers": sharedBuffers()}
		maps.Copy(all, settings)
		c, err := pgtemp.Start(ctx, &pgtemp.Config{Durable: durable, Settings: all})
		if err != nil {
			return nil, fmt.Errorf("start throwaway cluster: %w", err)
		}
		d.Cluster = c
		serverURL = c.URL("postgres")
	}
	d.admin = serverURL
	d.name = fmt.Sprintf("herald_bench_%d", time.Now().UnixNano())
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("connect to server: %w", err)
	}
	var fsync string
	err = conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync) // exception: server setting, no table
	if err == nil {
		err = conn.QueryRow(ctx, "SHOW server_version").Scan(&d.Version)
	}
	if err == nil {
		err = conn.QueryRow(ctx, "SHOW shared_buffers").Scan(&d.SharedBuffers)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{d.name}.Sanitize()) // exception: DDL on a generated name
	}
	_ = conn.Close(ctx)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("create bench database: %w", err)
	}
	d.Durable = fsync == "on"
	d.URL = pgtemp.WithDatabase(serverURL, d.name)
	d.Pool, err = pgxpool.New(ctx, d.URL)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("connect to bench database: %w", err)
	}
	if _, err := schema.NewMigrator(d.Pool, nil).Up(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("migrate bench database: %w", err)
	}
	d.inspectWAL(ctx)
	return d, nil
}

// inspectWAL sets the database up to count index entries from the WAL, or
// records in walErr why it cannot (the index figures then read n/a).
func (d *Database) inspectWAL(ctx context.Context) {
	d.wal, d.walErr = newWALInspector(ctx, d.Pool, d.URL)
}

// Close drops the database and stops the throwaway cluster, if any.
func (d *Database) Close() {
	if d.Pool != nil {
		d.Pool.Close()
	}
	if d.name != "" && d.Cluster == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, d.admin); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
	}
	if d.Cluster != nil {
		_ = d.Cluster.Stop()
	}
}

// checkpoint forces a checkpoint, so every phase starts without pending
// full-page images and pays the same WAL price for first touches.
func (d *Database) checkpoint(ctx context.Context) error {
	if _, err := d.Pool.Exec(ctx, checkpointSQL); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// sharedBuffers returns a quarter of the machine's memory (MemTotal in
// /proc/meminfo), between 128 MB and 8 GB, as a shared_buffers setting; 128
// MB, Postgres's default, where the memory cannot be read.
func sharedBuffers() string {
	const floor, ceiling = 128 << 20, 8 << 30
	total := procMeminfo("MemTotal:")
	return fmt.Sprintf("%dMB", min(max(total/4, floor), ceiling)>>20)
}
