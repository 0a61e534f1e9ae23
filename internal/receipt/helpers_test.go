package receipt_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
)

func secretEnv(name string) config.Secret { return config.Secret{Env: name} }

// acmeEndpoint serves the receipts endpoint, storing into pool, for one
// provider, sms/acme, whose token is s3cret.
func acmeEndpoint(t *testing.T, pool *pgxpool.Pool) *httptest.Server {
	settings := map[string]*routing.Receipts{"sms/acme": {Token: secretEnv("ACME_TOKEN")}}
	srv := httptest.NewServer(receipt.Handler(receipt.HandlerConfig{
		Pool:         pool,
		ReceiptsFunc: func(p string) *routing.Receipts { return settings[p] },
		GetenvFunc:   func(string) string { return "s3cret" },
	}))
	t.Cleanup(srv.Close)
	return srv
}

// refuseInsert makes Postgres refuse, with "refused for the test", every
// row inserted into herald.<table> whose column holds value: as a
// constraint added later, or a full disk for one row, would.
func refuseInsert(t *testing.T, pool *pgxpool.Pool, table, column, value string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), fmt.Sprintf(`
		CREATE FUNCTION public.refuse_%[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.%[2]s = %[3]s THEN
				RAISE EXCEPTION 'refused for the test';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_%[1]s BEFORE INSERT ON herald.%[1]s
			FOR EACH ROW EXECUTE FUNCTION public.refuse_%[1]s()`,
		table, pgx.Identifier{column}.Sanitize(), "'"+strings.ReplaceAll(value, "'", "''")+"'"))
	require.NoError(t, err)
}

// waitInsertBlocked waits until an insert into herald.<table> waits on a
// lock (one the test holds).
func waitInsertBlocked(t *testing.T, pool *pgxpool.Pool, table string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
				AND query LIKE '%INSERT INTO herald.' || $1 || '%'`, table).Scan(&n)
		return err == nil && n >= 1
	}, 10*time.Second, 5*time.Millisecond)
}
