package pgtemp_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// BenchmarkClusterStart measures initdb + start + ready + stop of a cluster:
// go test -run '^$' -bench ClusterStart -benchtime 3x ./internal/harness/pgtemp
func BenchmarkClusterStart(b *testing.B) {
	for b.Loop() {
		c, err := pgtemp.Start(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Stop()
	}
}

// BenchmarkNewDatabase measures one test database cloned from the migrated
// template (create, then drop at cleanup).
func BenchmarkNewDatabase(b *testing.B) {
	if _, _, err := pgtemp.Server(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		pgtemp.NewDatabase(b) // dropped when the benchmark ends
	}
}
