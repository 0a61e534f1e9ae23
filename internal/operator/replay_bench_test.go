package operator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
)

// BenchmarkReplay measures a replay by filter of 10,000 dead letters in
// batches of DefaultBatchSize; it reports routes moved per second.
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench Replay -benchtime 5x ./internal/operator/
func BenchmarkReplay(b *testing.B) {
	const n = 10_000
	pool := pgtemp.NewPool(b)
	op, err := operator.New(pool, nil)
	require.NoError(b, err)
	ctx := context.Background()
	moved := 0
	for b.Loop() {
		b.StopTimer()
		operatortest.Seed(b, pool, operatortest.Spec{N: n, Channel: "sms", Dead: true})
		b.StartTimer()
		res, err := op.Replay(ctx, operator.Filter{Channel: "sms"}, operator.ReplayOpts{Actor: "bench"})
		require.NoError(b, err)
		require.Equal(b, n, res.Moved)
		moved += res.Moved
	}
	b.ReportMetric(float64(moved)/b.Elapsed().Seconds(), "routes/s")
}
