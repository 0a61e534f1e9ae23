package receipt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtemp"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
)

// BenchmarkReceiptStoreAndMatch measures what a provider's receipts cost
// per route: storing each receipt (one INSERT, as the endpoint does) and
// matching it (the matcher's batch: its share of one lock, one index probe
// of the route, one route UPDATE and one receipt UPDATE). It reports WAL
// bytes per receipt beside the time.
//
//	go run ./internal/pgtemp/withpg go test -run '^$' -bench ReceiptStoreAndMatch -benchtime 2000x ./internal/receipt
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
