package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/schema"
)

// dueEntryBytes is what one routes_due_idx entry costs in a compact B-tree
// page: an 8-byte index tuple header, the key (a short channel name, a
// smallint priority, an 8-byte timestamptz, with alignment) and a 4-byte
// line pointer, at the default 90% leaf fill factor.
const dueEntryBytes = 48

// minExpectedIndexBytes is the size an almost empty index has anyway (its
// meta page and a few levels of pages); ratios against less mean nothing.
const minExpectedIndexBytes = 64 << 10

// reindexDueIndex rebuilds routes_due_idx without blocking claims or
// completions. It is SQL in a Go string, the rare exception: sqlc cannot
// parse REINDEX against an index. A failed run leaves an invalid
// routes_due_idx_ccnew index behind, which the next check drops.
const reindexDueIndex = "REINDEX INDEX CONCURRENTLY herald.routes_due_idx"

// BloatReport is what one bloat check measured and did.
type BloatReport struct {
	// TableLiveTuples and TableDeadTuples are herald.routes_live's counts from
	// pg_stat_user_tables (estimates, refreshed as autovacuum runs).
	TableLiveTuples int64 `json:"table_live_tuples"`
	TableDeadTuples int64 `json:"table_dead_tuples"`
	// TableBytes is herald.routes_live's size on disk.
	TableBytes int64 `json:"table_bytes"`
	// IndexBytes is routes_due_idx's size on disk.
	IndexBytes int64 `json:"index_bytes"`
	// IndexTuples is the planner's estimate of routes_due_idx's entries.
	IndexTuples int64 `json:"index_tuples"`
	// ExpectedIndexBytes is what IndexTuples entries need in a freshly built
	// index.
	ExpectedIndexBytes int64 `json:"expected_index_bytes"`
	// Ratio is IndexBytes / ExpectedIndexBytes.
	Ratio float64 `json:"ratio"`
	// Reindexed says the index was rebuilt (REINDEX INDEX CONCURRENTLY).
	Reindexed bool `json:"reindexed"`
	// IndexBytesAfter is routes_due_idx's size after the rebuild.
	IndexBytesAfter int64 `json:"index_bytes_after,omitempty"`
	// DroppedLeftovers names the invalid indexes of an earlier failed
	// rebuild that this check dropped.
	DroppedLeftovers []string `json:"dropped_leftovers,omitempty"`
}

// DeadTupleRatio is the share of dead tuples in herald.routes_live.
func (r BloatReport) DeadTupleRatio() float64 {
	if total := r.TableLiveTuples + r.TableDeadTuples; total > 0 {
		return float64(r.TableDeadTuples) / float64(total)
	}
	return 0
}

// CheckBloat estimates the bloat of routes_due_idx from the statistics views
// (pgstattuple is an extension that may be missing): its size against what
// its live entries need. When the index is at least Config.BloatMinBytes and
// Config.BloatRatio times larger than needed, it is rebuilt with REINDEX
// INDEX CONCURRENTLY, which blocks neither claims nor completions. The
// table's own dead tuples are vacuum's business; they are reported and
// logged.
func (m *Maintenance) CheckBloat(ctx context.Context) (BloatReport, error) {
	start := time.Now()
	rep, err := m.checkBloat(ctx)
	var rows int64
	if rep.Reindexed {
		rows = 1
	}
	m.metrics.Maintenance(JobBloatCheck, rows, err)
	if err != nil {
		m.logger.Error("maintenance job failed", "job", JobBloatCheck, "err", err)
		return rep, fmt.Errorf("%s: %w", JobBloatCheck, err)
	}
	m.logger.Info("maintenance job done", "job", JobBloatCheck,
		"index_bytes", rep.IndexBytes, "expected_index_bytes", rep.ExpectedIndexBytes,
		"ratio", fmt.Sprintf("%.1f", rep.Ratio), "reindexed", rep.Reindexed,
		"index_bytes_after", rep.IndexBytesAfter, "dropped_leftovers", rep.DroppedLeftovers,
		"table_dead_tuples", rep.TableDeadTuples, "table_live_tuples", rep.TableLiveTuples,
		"duration", time.Since(start).Round(time.Millisecond))
	return rep, nil
}

func (m *Maintenance) checkBloat(ctx context.Context) (BloatReport, error) {
	var rep BloatReport
	leftovers, err := m.queries.RouteDueIndexLeftoverList(ctx, m.pool)
	if err != nil {
		return rep, fmt.Errorf("list leftover indexes: %w", err)
	}
	for _, name := range leftovers {
		// A dynamic name sqlc cannot express: the rare SQL in a Go string,
		// quoted as an identifier. Like REINDEX CONCURRENTLY, it must run
		// outside a transaction block.
		stmt := "DROP INDEX CONCURRENTLY IF EXISTS " + pgx.Identifier{schema.Name, name}.Sanitize()
		if _, err := m.pool.Exec(ctx, stmt); err != nil {
			return rep, fmt.Errorf("drop leftover index %s: %w", name, err)
		}
		rep.DroppedLeftovers = append(rep.DroppedLeftovers, name)
	}
	st, err := m.queries.RouteBloatStats(ctx, m.pool)
	if err != nil {
		return rep, fmt.Errorf("read route bloat stats: %w", err)
	}
	rep = BloatReport{
		DroppedLeftovers:   rep.DroppedLeftovers,
		TableLiveTuples:    st.TableLiveTuples,
		TableDeadTuples:    st.TableDeadTuples,
		TableBytes:         st.TableBytes,
		IndexBytes:         st.IndexBytes,
		IndexTuples:        st.IndexTuples,
		ExpectedIndexBytes: max(st.IndexTuples*dueEntryBytes, minExpectedIndexBytes),
	}
	rep.Ratio = float64(rep.IndexBytes) / float64(rep.ExpectedIndexBytes)
	if rep.IndexBytes < m.cfg.BloatMinBytes || rep.Ratio < m.cfg.BloatRatio {
		return rep, nil
	}
	// REINDEX CONCURRENTLY cannot run inside a transaction block: the pool
	// runs it as a statement of its own.
	if _, err := m.pool.Exec(ctx, reindexDueIndex); err != nil {
		return rep, fmt.Errorf("reindex routes_due_idx: %w", err)
	}
	rep.Reindexed = true
	after, err := m.queries.RouteBloatStats(ctx, m.pool)
	if err != nil {
		return rep, fmt.Errorf("read route bloat stats: %w", err)
	}
	rep.IndexBytesAfter = after.IndexBytes
	return rep, nil
}
