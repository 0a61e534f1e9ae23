package pgtemp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Login creates a LOGIN role of its own for test t, named prefix plus a
// random suffix and granted roles (herald_producer, herald_operator, ...),
// and returns its name and a pool connected as it to admin's database. The
// pool is closed and the role dropped when the test ends. admin must be
// allowed to create roles (the throwaway cluster's superuser is). The
// cluster's local connections need no password.
func Login(t testing.TB, admin *pgxpool.Pool, prefix string, roles ...string) (string, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	name := prefix + "_" + hex.EncodeToString(tag[:])
	stmt := "CREATE ROLE " + pgx.Identifier{name}.Sanitize() + " LOGIN"
	if len(roles) > 0 {
		quoted := make([]string, len(roles))
		for i, r := range roles {
			quoted[i] = pgx.Identifier{r}.Sanitize()
		}
		stmt += " IN ROLE " + strings.Join(quoted, ", ")
	}
	// DDL: the rare SQL that has no place in queries/.
	if _, err := admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("create login %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	})
	cfg := admin.Config().Copy()
	cfg.ConnConfig.User = name
	cfg.ConnConfig.Password = ""
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	t.Cleanup(pool.Close) // runs before the DROP ROLE above
	return name, pool
}
