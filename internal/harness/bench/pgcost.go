package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TableCost is what one table cost Postgres during a phase: the tuple
// counters' deltas from pg_stat_user_tables, the dead tuples left, and the
// table's and its indexes' size afterwards.
type TableCost struct {
	Table       string `json:"table"`
	Inserted    int64  `json:"inserted"`
	Updated     int64  `json:"updated"`
	HOTUpdated  int64  `json:"hot_updated"`
	Deleted     int64  `json:"deleted"`
	DeadTuples  int64  `json:"dead_tuples"`
	TableBytes  int64  `json:"table_bytes"`
	IndexBytes  int64  `json:"index_bytes"`
	IndexScans  int64  `json:"index_scans"`
	SeqScans    int64  `json:"seq_scans"`
	Autovacuums int64  `json:"autovacuums"`
}

// PGCost is what a phase cost Postgres.
type PGCost struct {
	// WALBytes is the WAL written between the phase's start and end
	// (pg_current_wal_lsn difference); it covers the whole cluster, so each
	// phase runs alone.
	WALBytes int64 `json:"wal_bytes"`
	// Tables are the phase's tables.
	Tables []TableCost `json:"tables"`
	// IndexTuples is the number of index entries the phase wrote into its
	// tables' indexes, counted from the WAL (see IndexCost); nil when it
	// could not be counted (no pg_walinspect on the server, or the role
	// may not use it).
	IndexTuples *int64 `json:"index_tuples_written"`
	// Indexes are the phase's indexes and the entries each gained, when
	// IndexTuples is counted.
	Indexes []IndexCost `json:"indexes,omitempty"`
}

// HOTUpdates returns the updates that were HOT (heap-only: no index
// entries written) over all tables.
func (c PGCost) HOTUpdates() int64 {
	var n int64
	for _, t := range c.Tables {
		n += t.HOTUpdated
	}
	return n
}

// Rows returns the tuples written (inserted + updated + deleted) over all
// tables.
func (c PGCost) Rows() int64 {
	var n int64
	for _, t := range c.Tables {
		n += t.Inserted + t.Updated + t.Deleted
	}
	return n
}

// DeadCreated returns the dead tuple versions the phase created: every
// update and every delete leaves one behind for vacuum.
func (c PGCost) DeadCreated() int64 {
	var n int64
	for _, t := range c.Tables {
		n += t.Updated + t.Deleted
	}
	return n
}

// NonHOT returns the updates that were not HOT, each of which also wrote a
// new entry into every index of its table.
func (c PGCost) NonHOT() int64 {
	var n int64
	for _, t := range c.Tables {
		n += t.Updated - t.HOTUpdated
	}
	return n
}

// Bytes returns the tables' and indexes' total size afterwards.
func (c PGCost) Bytes() (table, index int64) {
	for _, t := range c.Tables {
		table += t.TableBytes
		index += t.IndexBytes
	}
	return table, index
}

// snapshot is the raw counters at one moment.
type snapshot struct {
	wal int64
	// lsn is the same WAL position as pg_lsn text.
	lsn    string
	tables map[string]TableCost
}

// The statements below read Postgres's catalogs and statistics views, which
// sqlc cannot type without a live database (its offline catalog knows
// neither pg_stat_user_tables nor pg_class); they are the commented
// exception to "SQL lives in queries/*.sql". They also touch River's
// tables, which are created by River's migrator and unknown to sqlc.
const (
	// walPositionSQL: the WAL insert position (the end of the last record
	// written, so a record boundary pg_walinspect can start at), as bytes
	// of WAL since the cluster began and as pg_lsn text.
	walPositionSQL = `SELECT pg_wal_lsn_diff(lsn, '0/0')::bigint, lsn::text FROM pg_current_wal_insert_lsn() AS lsn`
	// tableStatsSQL: the cumulative counters of the herald schema's tables
	// (herald's and River's). A table dropped while the statement runs (a
	// finished week's partition, dropped by retention) is still in the
	// statement's catalog snapshot, but its sizes are NULL: it is left out.
	tableStatsSQL = `
SELECT * FROM (
    SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, n_dead_tup,
        pg_table_size(relid) AS table_bytes, pg_indexes_size(relid) AS index_bytes,
        coalesce(idx_scan, 0), seq_scan, autovacuum_count
    FROM pg_stat_user_tables
    WHERE schemaname = 'herald'
) AS t
WHERE table_bytes IS NOT NULL AND index_bytes IS NOT NULL
ORDER BY relname`
	// flushStatsSQL flushes this backend's pending statistics; the workload's
	// own backends flush theirs when their connections close.
	flushStatsSQL = `SELECT pg_stat_force_next_flush()`
	checkpointSQL = `CHECKPOINT`
)

func takeSnapshot(ctx context.Context, pool *pgxpool.Pool) (snapshot, error) {
	s := snapshot{tables: map[string]TableCost{}}
	if _, err := pool.Exec(ctx, flushStatsSQL); err != nil {
		return s, fmt.Errorf("flush statistics: %w", err)
	}
	if err := pool.QueryRow(ctx, walPositionSQL).Scan(&s.wal, &s.lsn); err != nil {
		return s, fmt.Errorf("read wal position: %w", err)
	}
	rows, err := pool.Query(ctx, tableStatsSQL)
	if err != nil {
		return s, fmt.Errorf("read table statistics: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t TableCost
		if err := rows.Scan(&t.Table, &t.Inserted, &t.Updated, &t.HOTUpdated, &t.Deleted, &t.DeadTuples,
			&t.TableBytes, &t.IndexBytes, &t.IndexScans, &t.SeqScans, &t.Autovacuums); err != nil {
			return s, fmt.Errorf("read table statistics: %w", err)
		}
		s.tables[t.Table] = t
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read table statistics: %w", err)
	}
	return s, nil
}

// table returns name's counters and sizes; for routes and records, the
// sum over their partitions (routes_live and the finished weeks'; the
// accepted weeks', the kept ones' and records_default).
func (s snapshot) table(name string) TableCost {
	var part func(string) bool
	switch name {
	case "routes":
		part = func(n string) bool { return n == "routes_live" || strings.HasPrefix(n, "routes_f") }
	case "records":
		part = func(n string) bool { return strings.HasPrefix(n, "records_") }
	default:
		return s.tables[name]
	}
	sum := TableCost{Table: name}
	for n, t := range s.tables {
		if part(n) {
			sum.Inserted += t.Inserted
			sum.Updated += t.Updated
			sum.HOTUpdated += t.HOTUpdated
			sum.Deleted += t.Deleted
			sum.DeadTuples += t.DeadTuples
			sum.TableBytes += t.TableBytes
			sum.IndexBytes += t.IndexBytes
			sum.IndexScans += t.IndexScans
			sum.SeqScans += t.SeqScans
			sum.Autovacuums += t.Autovacuums
		}
	}
	return sum
}

// cost returns what happened between before and after to the tables whose
// names include accepts: counter deltas, and the dead tuples and
// sizes as they are after. Tables nothing happened to are left out.
func cost(before, after snapshot, include func(table string) bool) PGCost {
	c := PGCost{WALBytes: after.wal - before.wal}
	names := make([]string, 0, len(after.tables))
	for name := range after.tables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a, b := after.tables[name], before.tables[name]
		if !include(name) || a.Inserted+a.Updated+a.Deleted == b.Inserted+b.Updated+b.Deleted {
			continue
		}
		c.Tables = append(c.Tables, TableCost{
			Table:       name,
			Inserted:    a.Inserted - b.Inserted,
			Updated:     a.Updated - b.Updated,
			HOTUpdated:  a.HOTUpdated - b.HOTUpdated,
			Deleted:     a.Deleted - b.Deleted,
			DeadTuples:  a.DeadTuples,
			TableBytes:  a.TableBytes,
			IndexBytes:  a.IndexBytes,
			IndexScans:  a.IndexScans - b.IndexScans,
			SeqScans:    a.SeqScans - b.SeqScans,
			Autovacuums: a.Autovacuums - b.Autovacuums,
		})
	}
	return c
}
