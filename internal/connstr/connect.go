package connstr

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PingTimeout is how long Connect waits for the database's first answer.
const PingTimeout = 10 * time.Second

// Connect returns a pool for the connection string s (empty: pgx reads
// libpq's PG* variables), with tune, if not nil, applied to the parsed
// configuration, once the database has answered a ping within PingTimeout.
// Its errors hold no password: "database url: ..." (RedactErr) for a string
// that does not parse, "connect to postgres://USER@HOST:PORT/DB: ..." for a
// database that does not answer.
func Connect(ctx context.Context, s string, tune func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(s)
	if err != nil {
		return nil, fmt.Errorf("database url: %s", RedactErr(err, s))
	}
	if tune != nil {
		tune(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		c := cfg.ConnConfig
		return nil, fmt.Errorf("connect to postgres://%s@%s:%d/%s: %w", c.User, c.Host, c.Port, c.Database, err)
	}
	return pool, nil
}
