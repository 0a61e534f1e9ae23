package maintenance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/pause"
)

// weekLockTries is how many times making, dropping or retiring a week
// tries for its lock (weekLockWait each) before the run leaves it to the
// next, and lockRetryPause how long it waits between tries: the engine's
// statements come and go in milliseconds.
const (
	weekLockTries  = 5
	lockRetryPause = 250 * time.Millisecond
)

// swapTries is how many times a staged week's swap tries for its lock: a
// try costs bringing the staged rows up to date, little.
const swapTries = 20

// lockTries runs fn until it does not fail on its lock_timeout (55P03), at
// most weekLockTries times, waiting lockRetryPause between tries.
func (m *Maintenance) lockTries(ctx context.Context, fn func(context.Context) error) error {
	return m.tries(ctx, weekLockTries, fn)
}

// swapTries is lockTries for a week's swap, swapTries times.
func (m *Maintenance) swapTries(ctx context.Context, fn func(context.Context) error) error {
	return m.tries(ctx, swapTries, fn)
}

// tries runs fn until it does not fail on its lock_timeout, at most n
// times, waiting lockRetryPause between tries.
func (m *Maintenance) tries(ctx context.Context, n int, fn func(context.Context) error) error {
	var err error
	for try := 0; try < n; try++ {
		if try > 0 {
			if err := pause.For(ctx, lockRetryPause); err != nil {
				return err
			}
		}
		var pgErr *pgconn.PgError
		if err = fn(ctx); !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.LockNotAvailable {
			return err
		}
	}
	// Say who held the partitioned tables: a session's open transaction (a
	// producer's read of its routes, say) holds the default partitions,
	// which attaching or detaching a week locks in ACCESS EXCLUSIVE mode.
	holders, herr := m.queries.LockHolders(ctx, m.pool, partitionedTables)
	if herr != nil {
		holders = "holders unknown: " + herr.Error()
	}
	return fmt.Errorf("gave up after %d tries: %s: %w", n, holders, err)
}

// partitionedTables are the tables, and their default partitions, whose
// locks making and retiring weeks wait for.
var partitionedTables = []string{"herald.routes", "herald.routes_live", "herald.records", "herald.records_default"}

// dropGone drops the partitions detached so far (PartitionsDropGone), in a
// transaction of their own: a drop goes over the whole buffer cache and
// unlinks files, which must not hold the parent's lock.
func (m *Maintenance) dropGone(ctx context.Context) error {
	return m.lockTries(ctx, func(ctx context.Context) error {
		_, err := m.queries.PartitionsDropGone(ctx, m.pool, weekLockWait.Seconds()*10)
		if err != nil {
			return fmt.Errorf("drop detached partitions: %w", err)
		}
		return nil
	})
}
