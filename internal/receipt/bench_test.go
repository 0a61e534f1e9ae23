package receipt_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
)

// BenchmarkReceiptStoreAndMatch measures what a provider's receipts cost
// per route: storing each receipt (one INSERT, as the endpoint does) and
// matching it (the matcher's batch: its share of one lock, one index probe
// of the route, one route UPDATE and one receipt UPDATE). It reports WAL
// bytes per receipt beside the time.
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench ReceiptStoreAndMatch -benchtime 2000x ./internal/receipt
func BenchmarkReceiptStoreAndMatch(b *testing.B) {
	bundle := &testBundle{pool: pgtemp.NewPool(b)}
	ctx := context.Background()
	ids := make([]string, b.N)
	for i := range b.N {
		ids[i] = fmt.Sprintf("bench-%d", i)
		bundle.publishedRoute(b, "sms/bench", ids[i])
	}
	now := time.Now().Add(time.Hour)
	m, err := receipt.NewMatcher(bundle.pool, receipt.MatcherConfig{
		ReceiptsFunc: func(string) *routing.Receipts { return nil },
		NowFunc:      func() time.Time { return now },
	})
	require.NoError(b, err)
	var walBefore, walAfter int64
	require.NoError(b, bundle.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&walBefore))
	b.ResetTimer()
	for i := range b.N {
		if _, err := receipt.Store(ctx, bundle.pool, receipt.Receipt{Provider: "sms/bench", ProviderMessageID: ids[i],
			Status: "DELIVRD", Source: receipt.SourceHTTP}); err != nil {
			b.Fatal(err)
		}
	}
	stored := b.Elapsed()
	for {
		n, err := m.MatchOnce(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	b.StopTimer()
	require.NoError(b, bundle.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&walAfter))
	var delivered int
	require.NoError(b, bundle.pool.QueryRow(ctx,
		`SELECT count(*) FROM herald.routes WHERE delivery_status = 'delivered'`).Scan(&delivered))
	require.Equal(b, b.N, delivered)
	b.ReportMetric(float64(walAfter-walBefore)/float64(b.N), "WAL-bytes/receipt")
	b.ReportMetric(float64(stored.Microseconds())/float64(b.N), "µs-store/receipt")
	b.ReportMetric(float64((b.Elapsed()-stored).Microseconds())/float64(b.N), "µs-match/receipt")
}

// BenchmarkConcurrentReceiptStore stores receipts from 64 callers at once
// (an SMPP client's handlers: smpp's maxHandlers; or the endpoint's
// requests), each waiting for its own receipt to be stored, as a sender's
// answer does: one at a time (receipt.Store, a commit each) against the
// group commit (receipt.Group) the endpoint and the SMPP driver use.
// ns/op is per receipt; the two run side by side in one process.
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench ConcurrentReceiptStore -benchtime 20000x ./internal/receipt
func BenchmarkConcurrentReceiptStore(b *testing.B) {
	const callers = 64
	for _, mode := range []string{"one-at-a-time", "group"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(pgtemp.NewDatabase(b))
			require.NoError(b, err)
			cfg.MaxConns = callers
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(b, err)
			b.Cleanup(pool.Close)
			grp := receipt.NewGroup(pool)
			store := func(r receipt.Receipt) error {
				_, err := receipt.Store(ctx, pool, r)
				return err
			}
			if mode == "group" {
				store = func(r receipt.Receipt) error { return grp.Store(ctx, r) }
			}
			var walBefore, walAfter int64
			require.NoError(b, pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&walBefore))
			var seq atomic.Int64
			b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("c-%d", seq.Add(1))
					if err := store(receipt.Receipt{Provider: "sms/bench", ProviderMessageID: id,
						Status: "DELIVRD", Raw: "id:" + id + " stat:DELIVRD", Source: receipt.SourceSMPP}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			require.NoError(b, pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&walAfter))
			var stored int
			require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM herald.delivery_receipts`).Scan(&stored))
			require.Equal(b, b.N, stored)
			b.ReportMetric(float64(walAfter-walBefore)/float64(b.N), "WAL-bytes/receipt")
		})
	}
}

// BenchmarkReceiptStoreMatched stores receipts for published routes from
// 16 callers at once through a Group with a matcher, as the receipts
// endpoint does under the bench's sink, and reports Postgres's CPU per
// receipt (the cluster's processes, from /proc) beside the receipts per
// group.
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench ReceiptStoreMatched -benchtime 20000x ./internal/receipt
func BenchmarkReceiptStoreMatched(b *testing.B) {
	for _, callers := range []int{4, 16, 64} {
		b.Run(fmt.Sprintf("callers-%d", callers), func(b *testing.B) {
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(pgtemp.NewDatabase(b))
			require.NoError(b, err)
			cfg.MaxConns = 8
			engine.ConfigurePool(cfg) // serve's connections
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(b, err)
			b.Cleanup(pool.Close)
			bundle := &testBundle{pool: pool}
			ids := make([]string, b.N)
			for i := range b.N {
				ids[i] = fmt.Sprintf("bench-%d", i)
			}
			bundle.publishedRoutes(b, "sms/bench", ids)
			m, err := receipt.NewMatcher(pool, receipt.MatcherConfig{ReceiptsFunc: func(string) *routing.Receipts { return nil }})
			require.NoError(b, err)
			grp := receipt.NewGroup(pool)
			grp.MatchWith(m)
			before := clusterCPU(b, pool)
			var seq atomic.Int64
			b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := ids[seq.Add(1)-1]
					if err := grp.Store(ctx, receipt.Receipt{Provider: "sms/bench", ProviderMessageID: id,
						Status: "DELIVRD", Raw: `{"id":"` + id + `","status":"DELIVRD"}`, Source: receipt.SourceHTTP}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			after := clusterCPU(b, pool)
			var delivered, groups int
			require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'matched'), count(DISTINCT xmin::text)
				FROM herald.delivery_receipts`).Scan(&delivered, &groups))
			require.Equal(b, b.N, delivered)
			b.ReportMetric(float64((after-before).Microseconds())/float64(b.N), "µs-pg-cpu/receipt")
			b.ReportMetric(float64(b.N)/float64(groups), "receipts/group")
		})
	}
}
