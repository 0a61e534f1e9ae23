package herald_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/pgtemp"
)

// exampleTB is the testing.TB an example lacks, for pgtemp: enough of one
// to create a database and drop it afterwards.
type exampleTB struct {
	testing.TB // nil: only the methods below are called
	name       string
	cleanups   []func()
}

func (t *exampleTB) Helper()                         {}
func (t *exampleTB) Name() string                    { return t.name }
func (t *exampleTB) Failed() bool                    { return false }
func (t *exampleTB) Logf(format string, args ...any) {}
func (t *exampleTB) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// exampleDB returns a pool on a fresh migrated database and a function
// that closes it and drops the database. In a real program the pool comes
// from pgxpool.New(ctx, os.Getenv("DATABASE_URL")) after `herald migrate`.
func exampleDB(name string) (*pgxpool.Pool, func()) {
	tb := &exampleTB{name: name}
	pool, err := pgxpool.New(context.Background(), pgtemp.NewDatabase(tb))
	if err != nil {
		panic(err)
	}
	return pool, func() {
		pool.Close()
		for i := len(tb.cleanups) - 1; i >= 0; i-- {
			tb.cleanups[i]()
		}
	}
}
