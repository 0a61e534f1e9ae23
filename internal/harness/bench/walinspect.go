package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/pause"
)

// IndexCost is the entries one index gained during a phase.
type IndexCost struct {
	Index  string `json:"index"`
	Table  string `json:"table"`
	Method string `json:"method"`
	// Tuples is the index entries written.
	Tuples int64 `json:"tuples"`
	// CountedFrom says how Tuples was counted: "wal" (the WAL records of a
	// B-tree, or of a GIN index without a pending list: exact) or "heap" (one entry per new heap tuple version not
	// HOT-updated: exact for an index without a predicate, an upper bound
	// for a partial one), for indexes of other types and unlogged ones
	// (River's river_leader), which write no WAL to count.
	CountedFrom string `json:"counted_from"`
}

// walInspector counts the index entries a phase wrote from the WAL it
// wrote, with pg_walinspect. It needs the extension (a superuser creates
// it: the bench's own throwaway cluster does) and a replication slot that
// keeps the phase's WAL from being recycled by a checkpoint before it is
// read (the bench checkpoints before every phase; a timed checkpoint may
// come during one).
type walInspector struct {
	pool *pgxpool.Pool
	// url is the database's, for the connection that holds the slot.
	url string
	// slot is this run's slot name; one phase holds it at a time.
	slot string
}

// The statements below use pg_walinspect's functions and the catalogs,
// which sqlc's offline catalog does not know: the commented exception to
// "SQL lives in queries/*.sql".
const (
	walInspectCreateSQL = `CREATE EXTENSION IF NOT EXISTS pg_walinspect`
	// walSlotCreateSQL reserves WAL from now on (immediately_reserve), so
	// nothing the phase writes is removed before walIndexTuplesSQL reads it.
	// The slot is temporary: it goes with its session, so a bench killed
	// mid-phase leaves nothing that would keep WAL on a server forever.
	walSlotCreateSQL = `SELECT pg_create_physical_replication_slot($1, true, true)`
	// walReadOneSQL reads one record (the last checkpoint's redo point,
	// which is on disk), to find out whether the role may read WAL.
	walReadOneSQL = `SELECT pg_get_wal_record_info(redo_lsn) FROM pg_control_checkpoint()`
	// walFlushedSQL: whether the WAL up to $1 is on disk, which
	// pg_walinspect requires of the range it reads.
	walFlushedSQL = `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`
	// walSyncCommitSQL and walForceFlushSQL commit a transaction with an
	// id synchronously: its commit record, written after everything
	// before it, is flushed, and with it the WAL up to there. The WAL
	// writer alone flushes only whole pages when no commit waits, so the
	// last records of an idle database's partial page can stay in the
	// buffers indefinitely.
	walSyncCommitSQL = `SET LOCAL synchronous_commit = on`
	walForceFlushSQL = `SELECT pg_current_xact_id()`
	// walIndexTuplesSQL counts, per B-tree index of this database in the
	// herald schema, the entries written between two WAL positions: a leaf
	// insert (INSERT_LEAF), an insert that splits a posting list
	// (INSERT_POST) and a leaf page split (SPLIT_L or SPLIT_R at level 0,
	// which carries the new entry) each add one. Inserts into upper levels,
	// new roots and deduplication add none. Block 0 of each record is the
	// page written; its relation is tablespace/database/relfilenode, which
	// the phase's indexes keep throughout (TRUNCATE gives new ones before
	// the phase, not during it).
	walIndexTuplesSQL = `
WITH rec AS (
    SELECT regexp_match(block_ref, '^blkref #0: rel \d+/(\d+)/(\d+) ') AS rel
    FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
    WHERE (resource_manager = 'Btree'
      AND (record_type IN ('INSERT_LEAF', 'INSERT_POST')
           OR (record_type IN ('SPLIT_L', 'SPLIT_R') AND description LIKE 'level 0,%')))
      -- A GIN index without a pending list writes one INSERT per entry.
      OR (resource_manager = 'Gin' AND record_type = 'INSERT')
)
SELECT i.relname::text, count(*)
FROM rec
JOIN pg_database d ON d.oid = (rec.rel[1])::oid AND d.datname = current_database()
JOIN pg_class i ON i.relfilenode = (rec.rel[2])::oid AND i.relkind = 'i'
JOIN pg_namespace n ON n.oid = i.relnamespace AND n.nspname = 'herald'
GROUP BY 1`
	// indexListSQL: the herald schema's indexes, their tables and access
	// methods, and whether they are written to the WAL (not unlogged).
	indexListSQL = `
SELECT i.relname::text, t.relname::text, am.amname::text, i.relpersistence = 'p',
    coalesce(i.reloptions @> '{fastupdate=off}', false)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_am am ON am.oid = i.relam
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = 'herald'
ORDER BY 2, 1`
)

// newWALInspector creates pg_walinspect in the database on pool and returns
// an inspector, or an error saying why the index figures cannot be counted
// there (the extension is not installed, or the role may not create it or
// call its functions).
func newWALInspector(ctx context.Context, pool *pgxpool.Pool, url string) (*walInspector, error) {
	if _, err := pool.Exec(ctx, walInspectCreateSQL); err != nil {
		return nil, fmt.Errorf("create extension pg_walinspect: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	w := &walInspector{pool: pool, url: url, slot: "herald_bench_" + hex.EncodeToString(b[:])}
	// Try the whole round once, so a role that may create the extension
	// but not a slot or read WAL is found now, not after a phase.
	release, err := w.reserve(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if _, err := pool.Exec(ctx, walReadOneSQL); err != nil {
		return nil, fmt.Errorf("read wal: %w", err)
	}
	return w, nil
}

// reserve creates the run's temporary replication slot on a connection of
// its own, which keeps WAL from now on, and returns the function that
// closes the connection, which drops the slot.
func (w *walInspector) reserve(ctx context.Context) (func(), error) {
	conn, err := pgx.Connect(ctx, w.url)
	if err != nil {
		return nil, fmt.Errorf("connect for the replication slot: %w", err)
	}
	if _, err := conn.Exec(ctx, walSlotCreateSQL, w.slot); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("create replication slot: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	}, nil
}

// btreeTuples returns the entries each B-tree index of the herald schema
// gained between the WAL positions from and to.
func (w *walInspector) btreeTuples(ctx context.Context, from, to string) (map[string]int64, error) {
	// The phase's last records may still be in WAL buffers (an engine with
	// synchronous_commit off); the WAL writer flushes them within moments.
	for i := 0; ; i++ {
		var flushed bool
		if err := w.pool.QueryRow(ctx, walFlushedSQL, to).Scan(&flushed); err != nil {
			return nil, fmt.Errorf("read wal flush position: %w", err)
		}
		if flushed {
			break
		}
		if i == 100 {
			return nil, errors.New("wal not flushed after 5s")
		}
		if i == 20 {
			if err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, walSyncCommitSQL); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, walForceFlushSQL)
				return err
			}); err != nil {
				return nil, fmt.Errorf("flush wal: %w", err)
			}
		}
		if err := pause.For(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
	rows, err := w.pool.Query(ctx, walIndexTuplesSQL, from, to)
	if err != nil {
		return nil, fmt.Errorf("read wal records: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("read wal records: %w", err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read wal records: %w", err)
	}
	return out, nil
}

// indexCosts returns the entries written into each index of the tables c
// covers between the WAL positions from and to: B-trees and GIN indexes
// without a pending list (fastupdate off) from their WAL, other access
// methods (River's GIN indexes, whose pending-list records do not say how
// many entries they carry) and unlogged indexes from c's heap counters.
func (w *walInspector) indexCosts(ctx context.Context, c *PGCost, from, to string) ([]IndexCost, error) {
	btree, err := w.btreeTuples(ctx, from, to)
	if err != nil {
		return nil, err
	}
	tables := map[string]TableCost{}
	for _, t := range c.Tables {
		tables[t.Table] = t
	}
	rows, err := w.pool.Query(ctx, indexListSQL)
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	defer rows.Close()
	var out []IndexCost
	for rows.Next() {
		var ic IndexCost
		var logged, noPending bool
		if err := rows.Scan(&ic.Index, &ic.Table, &ic.Method, &logged, &noPending); err != nil {
			return nil, fmt.Errorf("list indexes: %w", err)
		}
		t, ok := tables[ic.Table]
		if !ok {
			continue // not the phase's table, or nothing happened to it
		}
		if logged && (ic.Method == "btree" || (ic.Method == "gin" && noPending)) {
			ic.Tuples, ic.CountedFrom = btree[ic.Index], "wal"
		} else {
			ic.Tuples, ic.CountedFrom = t.Inserted+t.Updated-t.HOTUpdated, "heap"
		}
		out = append(out, ic)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	return out, nil
}
