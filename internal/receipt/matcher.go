package receipt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/pglisten"
	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/tracing"
)

// Defaults of MatcherConfig.
const (
	DefaultBatchSize    = 500
	DefaultPollInterval = time.Second
)

// NotifyTopic is the NOTIFY topic the inbox's insert trigger wakes the
// matcher on.
const NotifyTopic = "herald_receipts"

// MatcherConfig configures a Matcher.
type MatcherConfig struct {
	// BatchSize bounds the receipts one round matches. Default 500.
	BatchSize int
	// PollInterval is the longest the matcher sleeps without a NOTIFY.
	// Default 1s.
	PollInterval time.Duration
	// ReceiptsFunc returns a provider's receipts settings (its status map,
	// temporary errors, window); nil means the defaults. Required.
	ReceiptsFunc func(provider string) *routing.Receipts
	// Logger receives the matcher's records. Default: discard.
	Logger *slog.Logger
	// Metrics counts decisions; nil counts nothing.
	Metrics *metrics.Metrics
	// NowFunc, if set, is the clock the statements use instead of the
	// database's: for tests.
	NowFunc func() time.Time
	// TracerProvider, when set, makes a span (herald.receipt.match) of
	// each batch that took receipts, with an event per route whose
	// delivery status it set. Nil makes none.
	TracerProvider trace.TracerProvider
}

// Matcher matches stored receipts to their routes, in batches, as many
// matchers at once as there are serve processes (SKIP LOCKED).
type Matcher struct {
	pool *pgxpool.Pool
	cfg  MatcherConfig
	q    *store.Queries
	log  *slog.Logger
	// tracer makes the spans; nil when there are none.
	tracer trace.Tracer
}

// NewMatcher returns a Matcher on pool, or an error naming the invalid
// field.
func NewMatcher(pool *pgxpool.Pool, cfg MatcherConfig) (*Matcher, error) {
	switch {
	case pool == nil:
		return nil, errors.New("new receipts matcher: pool is required")
	case cfg.ReceiptsFunc == nil:
		return nil, errors.New("new receipts matcher: ReceiptsFunc is required")
	case cfg.BatchSize < 0 || cfg.BatchSize > 10000:
		return nil, errors.New("new receipts matcher: BatchSize must be between 1 and 10000")
	case cfg.PollInterval < 0:
		return nil, errors.New("new receipts matcher: PollInterval must not be negative")
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	m := &Matcher{pool: pool, cfg: cfg, q: store.New(), log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
	if cfg.TracerProvider != nil {
		m.tracer = tracing.Tracer(cfg.TracerProvider)
	}
	return m, nil
}

// Run matches until ctx ends: a round whenever receipts arrive (NOTIFY),
// and every PollInterval for the ones waiting for their route. Database
// errors are logged and retried.
func (m *Matcher) Run(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go pglisten.Run(ctx, pglisten.Config{
		ConnConfig:    m.pool.Config().ConnConfig,
		Topic:         NotifyTopic,
		NotifyFunc:    func(string) { poke() },
		ConnectedFunc: func(bool) { poke() },
	})
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-t.C:
		}
		n, err := m.MatchOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			m.log.Error("match receipts", "err", err)
			t.Reset(m.cfg.PollInterval)
		case n == m.cfg.BatchSize:
			t.Reset(0) // more are due
		default:
			t.Reset(m.cfg.PollInterval)
		}
	}
}

// MatchOnce matches one batch in one transaction and returns how many
// receipts it took.
func (m *Matcher) MatchOnce(ctx context.Context) (int, error) {
	var n int
	began := time.Now()
	span := trace.SpanFromContext(context.Background()) // a no-op until a batch is taken
	defer func() { span.End() }()
	var ds []decision
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		clock, now := m.clock()
		rows, err := m.q.ReceiptClaimDue(ctx, tx, store.ReceiptClaimDueParams{Now: now, Max: int32(m.cfg.BatchSize)})
		if err != nil {
			return fmt.Errorf("claim receipts: %w", err)
		}
		n = len(rows)
		if n == 0 {
			return nil
		}
		if m.tracer != nil {
			ctx, span = m.tracer.Start(ctx, "herald.receipt.match", trace.WithNewRoot(), trace.WithTimestamp(began),
				trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(tracing.BatchSize.Int(n)))
		}
		ds, err = m.decide(ctx, tx, rows, clock, now, span)
		if err != nil {
			return err
		}
		if err := m.q.ReceiptMarkMany(ctx, tx, markParams(ds, now)); err != nil {
			return fmt.Errorf("mark receipts: %w", err)
		}
		return nil
	})
	if err != nil {
		span.SetStatus(codes.Error, "receipt batch failed")
		span.RecordError(err)
		return n, err
	}
	m.decided(ds)
	return n, nil
}

// StoreMatched stores receipts that have just arrived and matches them, in
// one transaction: each is inserted with what the matcher decided
// (matched, duplicate, malformed, or new, to be tried again after its
// backoff, when its route is not visible yet or it would change nothing
// while young), so that a receipt that finds its route is written once
// and never queued. It returns once they are committed, or with the error
// that stored none of them (the caller stores them the plain way then,
// for the matcher).
func (m *Matcher) StoreMatched(ctx context.Context, rs []Receipt) error {
	began := time.Now()
	span := trace.SpanFromContext(context.Background())
	defer func() { span.End() }()
	var ds []decision
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		clock, now := m.clock()
		// The receipts arrive now on the database's clock, the clock of
		// the routes' receipt_keyed_at they are compared with.
		at, err := m.q.ReceiptClock(ctx, tx, now)
		if err != nil {
			return fmt.Errorf("read the clock: %w", err)
		}
		if now == nil {
			clock = at
		}
		if m.tracer != nil {
			ctx, span = m.tracer.Start(ctx, "herald.receipt.match", trace.WithNewRoot(), trace.WithTimestamp(began),
				trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(tracing.BatchSize.Int(len(rs))))
		}
		rows := make([]store.ReceiptClaimDueRow, len(rs))
		for i, r := range rs {
			r = r.clipped()
			rs[i] = r
			rows[i] = store.ReceiptClaimDueRow{Provider: r.Provider, ProviderMessageID: r.ProviderMessageID,
				Status: r.Status, ErrorCode: r.ErrorCode, ReceivedAt: at}
		}
		ds, err = m.decide(ctx, tx, rows, clock, now, span)
		if err != nil {
			return err
		}
		if _, err := m.q.ReceiptInsertDecidedMany(ctx, tx, insertDecidedParams(rs, ds, at)); err != nil {
			return fmt.Errorf("store matched receipts: %w", err)
		}
		return nil
	})
	if err != nil {
		span.SetStatus(codes.Error, "receipt batch failed")
		span.RecordError(err)
		return err
	}
	m.decided(ds)
	return nil
}

// clock returns the time a round decides by, and the time its statements
// are given: the test clock when NowFunc is set, else the process's clock
// and nil (the statements use the database's).
func (m *Matcher) clock() (time.Time, *time.Time) {
	if m.cfg.NowFunc != nil {
		t := m.cfg.NowFunc()
		return t, &t
	}
	return time.Now(), nil
}

// decided counts a committed round's decisions.
func (m *Matcher) decided(ds []decision) {
	for _, d := range ds {
		if d.state != "new" {
			m.cfg.Metrics.ReceiptDecided(d.row.Provider, cmp.Or(d.status, "none"), d.state)
		}
	}
}

// decide finds the routes of rows (receipts, in arrival order), sets
// their delivery statuses in tx, and returns what it decided for each
// receipt, in rows' order: matched or duplicate (with the route and its
// attempt), unmatched, malformed, or new with the time to wait before the
// next try (and no route). The decisions are decision.go's; decide runs
// the two statements they need, whatever the batch holds: one read of
// the routes by key and one write of the statuses that changed.
func (m *Matcher) decide(ctx context.Context, tx pgx.Tx, rows []store.ReceiptClaimDueRow, clock time.Time,
	now *time.Time, span trace.Span) ([]decision, error) {
	ds, keys, asked := classify(rows, m.cfg.ReceiptsFunc)
	var found []store.RouteListByReceiptKeysRow
	if len(keys) > 0 {
		var err error
		found, err = m.q.RouteListByReceiptKeys(ctx, tx, keys)
		if err != nil {
			return nil, fmt.Errorf("find routes by receipt key: %w", err)
		}
	}
	order := decideRoutes(ds, asked, keyedRoutes(found), clock, m.cfg.ReceiptsFunc)
	set := statusWrites(order, now)
	changed := map[string]store.RouteDeliveryStatusSetManyRow{}
	if len(set.RouteIds) > 0 {
		out, err := m.q.RouteDeliveryStatusSetMany(ctx, tx, set)
		if err != nil {
			return nil, fmt.Errorf("set delivery statuses: %w", err)
		}
		for _, r := range out {
			changed[routeKey(r.NotificationID, r.RouteID)] = r
		}
	}
	settle(ds, order, changed)
	m.observe(ds, order, changed, span)
	return ds, nil
}

// observe records what a batch's status write changed: an event on span
// per receipt matched, and, per route whose status changed, the time from
// its creation to its delivery status.
func (m *Matcher) observe(ds []decision, order []*routeState, changed map[string]store.RouteDeliveryStatusSetManyRow, span trace.Span) {
	for _, st := range order {
		if st.write == nil {
			continue
		}
		r, ok := changed[routeKey(st.nid, st.rid)]
		if !ok {
			continue
		}
		if span.IsRecording() {
			for _, i := range st.matched {
				d := &ds[i]
				span.AddEvent("herald.receipt.matched", trace.WithAttributes(
					tracing.NotificationID.String(d.notificationID), tracing.RouteID.String(d.route),
					tracing.Provider.String(d.row.Provider), tracing.DeliveryStatus.String(d.status)))
			}
		}
		if st.statusChanged {
			m.cfg.Metrics.ReceiptLagged(st.write.row.Provider, r.DeliveryStatusAt.Sub(r.CreatedAt))
		}
	}
}
