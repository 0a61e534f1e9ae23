package connstr

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/store"
)

// DefaultMaxLag is how stale an answer read on a replica may be, by
// default, before the read goes to the primary instead.
const DefaultMaxLag = 10 * time.Second

// Where a read went (ReadSource.From).
const (
	FromReplica = "replica"
	FromPrimary = "primary"
)

// DefaultCatchUp is how long a read waits, by default, for a replica
// that is behind the primary to catch up, before judging it by its last
// replayed commit. A replica streaming normally replays what it receives
// within milliseconds; waiting a little gives a fresh answer, and spares a
// spurious fallback where the last commit it replayed is old only because
// the primary was idle until just before.
const DefaultCatchUp = time.Second

// Read says where the reads of a read-only command may go: a streaming
// replica of the primary, as long as it is no more than MaxLag behind.
type Read struct {
	// URL is the replica's connection string; "" sends reads to the
	// primary.
	URL string
	// MaxLag is how stale an answer read on the replica may be; past it,
	// the read goes to the primary.
	MaxLag time.Duration
	// CatchUp is the longest the read waits for the replica to show
	// what the primary had committed when the read began, never more
	// than MaxLag; 0 is DefaultCatchUp.
	CatchUp time.Duration

	maxLag string // as given, parsed by Validate
}

// Bind registers --read-database-url and --read-max-lag on fs, their
// defaults taken with getenv from HERALD_READ_DATABASE_URL and
// HERALD_READ_MAX_LAG. Validate parses them after fs.Parse.
func (r *Read) Bind(fs *flag.FlagSet, getenv func(string) string) {
	r.URL = getenv("HERALD_READ_DATABASE_URL")
	fs.Var((*Flag)(&r.URL), "read-database-url",
		"a streaming replica's PostgreSQL `URL` to read from, sparing the primary (env HERALD_READ_DATABASE_URL); "+
			"the read goes to the primary, said on stderr, when the replica lags more than -read-max-lag or does not answer; "+
			"--json answers then carry read_from and replica_lag_seconds (a list's rows under \"items\")")
	fs.StringVar(&r.maxLag, "read-max-lag", cmp.Or(getenv("HERALD_READ_MAX_LAG"), DefaultMaxLag.String()),
		"how stale a replica's answer may be (env HERALD_READ_MAX_LAG)")
}

// Validate parses what Bind bound: an error names the flag whose value is
// bad (a URL that does not parse, its password masked; a lag that is not
// a duration of zero or more).
func (r *Read) Validate() error {
	if r.URL != "" {
		if _, err := pgxpool.ParseConfig(r.URL); err != nil {
			return fmt.Errorf("invalid -read-database-url: %s", RedactErr(err, r.URL))
		}
	}
	if r.maxLag == "" {
		r.maxLag = cmp.Or(r.MaxLag, DefaultMaxLag).String()
	}
	d, err := time.ParseDuration(r.maxLag)
	if err != nil || d < 0 {
		return fmt.Errorf("invalid -read-max-lag %q: want a duration of 0 or more (10s, 1m)", r.maxLag)
	}
	r.MaxLag = d
	return nil
}

// ReadSource says where a read went, for the command's answer.
type ReadSource struct {
	// From is FromReplica or FromPrimary.
	From string `json:"read_from"`
	// LagSeconds is how stale the replica was found to be, at most: the
	// time it took to show everything the primary had committed when the
	// read began, or, when it had not, the age of the last commit it had
	// replayed. Nil when it could not be told (the replica did not answer,
	// or had replayed nothing).
	LagSeconds *float64 `json:"replica_lag_seconds"`
	// Why says, in one line, why a read meant for the replica went to the
	// primary; "" when it did not.
	Why string `json:"-"`
}

// ConnectRead connects for a read that may leave the primary (whose
// connection string is primary) for the replica r.URL, with tune applied
// to both pools as Connect does. It reads the primary's WAL position,
// then asks the replica how far it has replayed: a replica that shows
// everything the primary had committed by then (waiting up to r.CatchUp
// for it, unless its replay is paused) is read from; one still behind is
// read from when the last transaction it replayed was committed no more
// than r.MaxLag ago, a bound on how stale it is. Otherwise, and when the
// replica does not answer or is not a standby, the read goes to the
// primary, and the ReadSource says why. Judging the replica against the primary's
// position, not by the age of its last replayed commit alone, keeps an
// idle primary from making a caught-up replica look stale.
//
// It fails as Connect does when the primary does not answer. The pool
// returned is the caller's to close; the other is closed.
func ConnectRead(ctx context.Context, primary string, r Read, tune func(*pgxpool.Config)) (*pgxpool.Pool, *ReadSource, error) {
	ppool, err := Connect(ctx, primary, tune)
	if err != nil {
		return nil, nil, err
	}
	q := store.New()
	start := time.Now()
	target, err := q.ReplicationPrimaryPosition(ctx, ppool)
	if err != nil {
		ppool.Close()
		return nil, nil, fmt.Errorf("read the primary's WAL position: %w", err)
	}
	fallback := func(lag *float64, why string) (*pgxpool.Pool, *ReadSource, error) {
		why = strings.Join(strings.Fields(why), " ") // one line
		return ppool, &ReadSource{From: FromPrimary, LagSeconds: lag, Why: why}, nil
	}
	rpool, err := Connect(ctx, r.URL, func(c *pgxpool.Config) {
		if tune != nil {
			tune(c)
		}
		// A replica that does not answer costs the read little.
		if c.ConnConfig.ConnectTimeout == 0 || c.ConnConfig.ConnectTimeout > 5*time.Second {
			c.ConnConfig.ConnectTimeout = 5 * time.Second
		}
	})
	if err != nil {
		return fallback(nil, "the replica is unreachable: "+err.Error())
	}
	onReplica := func(lag float64) (*pgxpool.Pool, *ReadSource, error) {
		ppool.Close()
		return rpool, &ReadSource{From: FromReplica, LagSeconds: seconds(lag)}, nil
	}
	grace := min(r.MaxLag, cmp.Or(r.CatchUp, DefaultCatchUp))
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		st, err := q.ReplicationReplayState(ctx, rpool, target)
		if err != nil {
			rpool.Close()
			if ctx.Err() != nil {
				ppool.Close()
				return nil, nil, ctx.Err()
			}
			return fallback(nil, "the replica did not answer: "+RedactErr(err, r.URL))
		}
		elapsed := time.Since(start)
		age := time.Duration(st.ReplayAgeSeconds * float64(time.Second))
		switch {
		case !st.InRecovery:
			rpool.Close()
			return fallback(nil, "the replica is not a standby: it is not in recovery")
		case st.CaughtUp:
			return onReplica(elapsed.Seconds())
		case (st.Paused || elapsed >= grace) && st.ReplayAgeSeconds >= 0 && age <= r.MaxLag:
			return onReplica(st.ReplayAgeSeconds)
		case st.Paused || elapsed >= grace:
			rpool.Close()
			if st.ReplayAgeSeconds < 0 {
				return fallback(nil, fmt.Sprintf("the replica has not replayed what the primary committed %s ago, and no transaction since it started, so its lag is unknown (-read-max-lag %s)",
					elapsed.Round(time.Millisecond), r.MaxLag))
			}
			return fallback(seconds(st.ReplayAgeSeconds), fmt.Sprintf("the replica lags %s, more than -read-max-lag %s",
				age.Round(time.Millisecond), r.MaxLag))
		}
		select {
		case <-ctx.Done():
			rpool.Close()
			ppool.Close()
			return nil, nil, ctx.Err()
		case <-time.After(min(wait, grace-elapsed)):
		}
	}
}

// seconds returns s rounded to the millisecond.
func seconds(s float64) *float64 {
	s = math.Round(s*1000) / 1000
	return &s
}

// Annotate returns v's JSON with where it was read: read_from and
// replica_lag_seconds first among an object's keys, or, for a value that
// is not an object (a list), beside it under "items".
func (s *ReadSource) Annotate(v any) (json.RawMessage, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	head = head[:len(head)-1] // the closing brace
	body = bytes.TrimSpace(body)
	switch {
	case bytes.Equal(body, []byte("{}")):
		return append(head, '}'), nil
	case len(body) > 0 && body[0] == '{':
		return append(append(head, ','), body[1:]...), nil
	}
	return fmt.Appendf(head, `,"items":%s}`, body), nil
}
