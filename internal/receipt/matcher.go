package receipt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
// matcher on (migration 00009).
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

// decision is what one round decided for one receipt.
type decision struct {
	row                   store.ReceiptClaimDueRow
	state, status         string
	notificationID, route string
	errCode               string
	permanent             bool
	// resend: the route goes back for another attempt (retry_temporary).
	resend bool
	// retry is when an unmatched receipt is tried again.
	retry time.Duration
}

// MatchOnce matches one batch in one transaction and returns how many
// receipts it took.
func (m *Matcher) MatchOnce(ctx context.Context) (int, error) {
	var n int
	began := time.Now()
	span := trace.SpanFromContext(context.Background()) // a no-op until a batch is taken
	defer func() { span.End() }()
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		var now *time.Time
		clock := time.Now()
		if m.cfg.NowFunc != nil {
			clock = m.cfg.NowFunc()
			now = &clock
		}
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
		ds := make([]decision, len(rows))
		var keys []string
		for i, r := range rows {
			d := &ds[i]
			d.row = r
			rc := m.cfg.ReceiptsFunc(r.Provider)
			if r.ProviderMessageID == "" || r.Status == "" {
				d.state = "malformed"
				continue
			}
			d.status = rc.MapStatus(r.Status)
			d.errCode = r.ErrorCode
			d.permanent = rc.Permanent(r.ErrorCode)
			d.resend = rc.Retries(d.status, r.ErrorCode)
			keys = append(keys, key(r.Provider, r.ProviderMessageID))
		}
		routes, err := m.q.RouteListByReceiptKeys(ctx, tx, keys)
		if err != nil {
			return fmt.Errorf("find routes by receipt key: %w", err)
		}
		byKey := make(map[string]store.RouteListByReceiptKeysRow, len(routes))
		for _, r := range routes {
			byKey[r.ReceiptKey] = r
		}
		// Per route, the receipts in arrival order: the first that moves
		// its status (none yet, or unknown to a final one) is the one
		// written; the others change nothing.
		current := map[string]*string{}
		pick := map[string]int{} // route key → index of the decision written
		var set store.RouteDeliveryStatusSetManyParams
		set.Now = now
		for i := range ds {
			d := &ds[i]
			if d.state != "" {
				continue
			}
			k := key(d.row.Provider, d.row.ProviderMessageID)
			rt, ok := byKey[k]
			if !ok {
				window := m.cfg.ReceiptsFunc(d.row.Provider).WindowOrDefault()
				if clock.Sub(d.row.ReceivedAt) >= window {
					d.state = "unmatched"
				} else {
					d.state, d.retry = "new", backoff(d.row.MatchAttempts)
				}
				continue
			}
			d.notificationID, d.route = rt.NotificationID, rt.RouteID
			cur, seen := current[k]
			if !seen {
				cur = rt.DeliveryStatus
			}
			if cur == nil || (*cur == routing.DeliveryUnknown && d.status != routing.DeliveryUnknown) {
				s := d.status
				current[k] = &s
				if j, had := pick[k]; had {
					ds[j].state = "duplicate" // superseded in this batch by a final status
				}
				pick[k] = i
				d.state = "matched"
				continue
			}
			current[k] = cur
			d.state = "duplicate"
		}
		for k, i := range pick {
			d := ds[i]
			_ = k
			set.NotificationIds = append(set.NotificationIds, d.notificationID)
			set.RouteIds = append(set.RouteIds, d.route)
			set.DeliveryStatuses = append(set.DeliveryStatuses, d.status)
			set.DeliveryErrors = append(set.DeliveryErrors, d.errCode)
			set.Permanents = append(set.Permanents, d.permanent)
			set.Retries = append(set.Retries, d.resend)
		}
		changed := map[string]store.RouteDeliveryStatusSetManyRow{}
		if len(set.RouteIds) > 0 {
			out, err := m.q.RouteDeliveryStatusSetMany(ctx, tx, set)
			if err != nil {
				return fmt.Errorf("set delivery statuses: %w", err)
			}
			for _, r := range out {
				changed[r.NotificationID+"\x00"+r.RouteID] = r
			}
		}
		mark := store.ReceiptMarkManyParams{Now: now}
		for i := range ds {
			d := &ds[i]
			if d.state == "matched" {
				if r, ok := changed[d.notificationID+"\x00"+d.route]; ok {
					m.cfg.Metrics.ReceiptLagged(d.row.Provider, r.DeliveryStatusAt.Sub(r.CreatedAt))
					if span.IsRecording() {
						span.AddEvent("herald.receipt.matched", trace.WithAttributes(
							tracing.NotificationID.String(d.notificationID), tracing.RouteID.String(d.route),
							tracing.Provider.String(d.row.Provider), tracing.DeliveryStatus.String(d.status)))
					}
				} else {
					d.state = "duplicate" // another matcher set it first
				}
			}
			mark.Ids = append(mark.Ids, d.row.ID)
			mark.States = append(mark.States, d.state)
			mark.DeliveryStatuses = append(mark.DeliveryStatuses, d.status)
			mark.NotificationIds = append(mark.NotificationIds, d.notificationID)
			mark.RouteIds = append(mark.RouteIds, d.route)
			mark.RetrySeconds = append(mark.RetrySeconds, d.retry.Seconds())
		}
		if err := m.q.ReceiptMarkMany(ctx, tx, mark); err != nil {
			return fmt.Errorf("mark receipts: %w", err)
		}
		for _, d := range ds {
			if d.state != "new" {
				m.cfg.Metrics.ReceiptDecided(d.row.Provider, cmp.Or(d.status, "none"), d.state)
			}
		}
		return nil
	})
	if err != nil {
		span.SetStatus(codes.Error, "receipt batch failed")
		span.RecordError(err)
	}
	return n, err
}

// key is a route's receipt key: its provider and the provider's message id.
func key(provider, id string) string { return provider + " " + strings.TrimSpace(id) }
