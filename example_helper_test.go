package herald_test

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/schema/heraldtest"
)

// exampleDB returns a pool on a fresh migrated database and a function
// that closes it and drops the database: heraldtest, as a producer's own
// tests use it. In a real program the pool comes from pgxpool.New(ctx,
// os.Getenv("DATABASE_URL")) after `herald migrate`.
func exampleDB(name string) (*pgxpool.Pool, func()) {
	db, err := heraldtest.NewDatabase(context.Background(), &heraldtest.Opts{Name: name})
	if err != nil {
		panic(err)
	}
	return db.Pool, func() { _ = db.Close() }
}
