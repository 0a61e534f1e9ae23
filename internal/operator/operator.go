// Package operator is what the people on call for herald use: dead letters
// listed, shown and replayed (at once, or in bulk as a River job), malformed
// intake entries, one notification's timeline, and the engine's backlog,
// lag, throughput and dead letters in figures. `herald dead-letters`,
// `malformed`, `status` and `stats` are thin layers over it; the same facts
// are in the SQL views of schema/00003_create_operator_views.sql for psql.
//
// Every action that changes state writes herald.audit_log: who, when, why,
// the filter, and how many routes it moved.
package operator

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/store"
)

// Defaults for Config.
const (
	// DefaultBatchSize is how many dead letters one replay statement moves.
	DefaultBatchSize = 1000
	// MaxBatchSize is the most dead letters a replay statement should
	// move: one statement moving more holds its row locks, and writes an
	// audit row listing them, out of all proportion; and the statement's
	// limit is an int32.
	MaxBatchSize = 100_000
	// DefaultAsyncThreshold is how many matching dead letters make
	// `herald dead-letters replay` queue a River job (ReplayOrQueue)
	// instead of replaying in the command itself.
	DefaultAsyncThreshold = 50_000
	// DefaultPageSize is how many rows a list returns when no limit is given.
	DefaultPageSize = 50
	// MaxPageSize caps a list's page.
	MaxPageSize = 10_000
)

var (
	// ErrNotFound is returned by DeadLetter, MalformedIntent and Status when
	// nothing has the id asked for.
	ErrNotFound = errors.New("not found")
	// ErrBadCursor is returned by the list methods when the after cursor is
	// not one they handed out.
	ErrBadCursor = errors.New("bad cursor")
	// ErrBadRouteRef is returned by ParseRouteRef for an empty id.
	ErrBadRouteRef = errors.New("bad route id")
)

// Config configures an Operator.
type Config struct {
	// Logger receives a line per replay batch and per replay. Defaults to a
	// logger that discards.
	Logger *slog.Logger
	// BatchSize is how many dead letters one replay statement moves.
	// Defaults to DefaultBatchSize.
	BatchSize int
}

func (c *Config) validate() error {
	if c.BatchSize < 0 {
		return errors.New("BatchSize must not be negative")
	}
	return nil
}

// Operator reads and repairs one herald database.
type Operator struct {
	pool      *pgxpool.Pool
	q         *store.Queries
	logger    *slog.Logger
	batchSize int
}

// New returns an Operator for the database behind pool. It returns an error
// naming the bad Config field.
func New(pool *pgxpool.Pool, cfg *Config) (*Operator, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("operator config: %w", err)
	}
	return &Operator{
		pool:      pool,
		q:         store.New(),
		logger:    cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		batchSize: cmp.Or(cfg.BatchSize, DefaultBatchSize),
	}, nil
}

// RouteRef names one route ("NOTIFICATION_ID/ROUTE_ID") or, with an empty
// RouteID, every route of a notification ("NOTIFICATION_ID").
type RouteRef struct {
	NotificationID string `json:"notification_id"`
	RouteID        string `json:"route_id,omitempty"`
}

// String returns the reference as ParseRouteRef reads it.
func (r RouteRef) String() string {
	if r.RouteID == "" {
		return r.NotificationID
	}
	return r.NotificationID + "/" + r.RouteID
}

// ParseRouteRef reads "NOTIFICATION_ID" or "NOTIFICATION_ID/ROUTE_ID". It
// returns ErrBadRouteRef when the notification id is empty.
func ParseRouteRef(s string) (RouteRef, error) {
	nid, rid, _ := strings.Cut(strings.TrimSpace(s), "/")
	if nid == "" {
		return RouteRef{}, fmt.Errorf("%w: %q", ErrBadRouteRef, s)
	}
	return RouteRef{NotificationID: nid, RouteID: rid}, nil
}

// Filter selects dead letters. Zero fields select everything.
type Filter struct {
	Channel          string `json:"channel,omitempty"`
	Producer         string `json:"producer,omitempty"`
	NotificationType string `json:"type,omitempty"`
	// Provider keeps the dead letters whose last attempt was this
	// provider's.
	Provider       string `json:"provider,omitempty"`
	Classification string `json:"classification,omitempty"`
	// Since keeps the dead letters that died at or after it.
	Since time.Time `json:"since,omitzero"`
	// Until keeps the dead letters that died at or before it. A replay sets
	// it to the time it was requested (if unset), so routes that die again
	// while it runs are not replayed again by it.
	Until time.Time `json:"until,omitzero"`
	// IDs keeps only these routes (or notifications, for an empty RouteID).
	IDs []RouteRef `json:"ids,omitempty"`
}

func (f Filter) idArrays() (nids, rids []string) {
	if len(f.IDs) == 0 {
		return nil, nil
	}
	nids = make([]string, len(f.IDs))
	rids = make([]string, len(f.IDs))
	for i, id := range f.IDs {
		nids[i], rids[i] = id.NotificationID, id.RouteID
	}
	return nids, rids
}

func (f Filter) json() []byte {
	b, _ := json.Marshal(f) // a struct of strings and times always marshals
	return b
}

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// cursor is a keyset position: the sort key of the last row of a page.
type cursor struct {
	At  time.Time `json:"t"`
	ID  string    `json:"i"`
	Sub string    `json:"s,omitempty"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.At.IsZero() || c.ID == "" {
		return nil, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	return &c, nil
}

func pageSize(limit int) int32 {
	if limit <= 0 {
		return DefaultPageSize
	}
	return int32(min(limit, MaxPageSize))
}

func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return err
}
