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
	attempt               int32
	errCode               string
	permanent             bool
	// resend: the route goes back for another attempt (retry_temporary).
	resend bool
	// retry is when a receipt kept new is tried again.
	retry time.Duration
}

// DuplicateSettle is how young a receipt that would change nothing (a
// duplicate) is kept for another try rather than decided: the route that
// was given its id most recently may not be visible yet (its completion
// commits after the provider's receipt arrived), and a provider's ids
// repeat, so the route found may be an older one with the same id.
const DuplicateSettle = time.Second

// routeState is one route's delivery status as a round reads and changes
// it, over every receipt of the batch that belongs to it.
type routeState struct {
	nid, rid string
	status   *string
	// parts holds each part's status ('' while none) for a route sent in
	// parts; nil for one part. oldParts is as read, comma-joined.
	parts    []string
	oldParts string
	// write is the decision whose status, error and resend are written;
	// nil while no receipt changed anything.
	write *decision
	// statusChanged: the route's delivery status changed in this batch.
	statusChanged bool
	// matched are the decisions marked matched by this route's write.
	matched []int
}

// rank orders delivery statuses for a route of several parts: its status
// is the highest any part reported.
func rank(status string) int {
	switch status {
	case routing.DeliveryUnknown:
		return 1
	case routing.DeliveryDelivered:
		return 2
	case routing.DeliveryExpired:
		return 3
	case routing.DeliveryUndelivered:
		return 4
	}
	return 0
}

// PartsStatus returns the delivery status of a message sent in parts,
// from what each part's receipts reported (empty for a part with none yet):
// undelivered when any part is, else expired when any part is, else
// delivered when any part is (so every part that reported a final status
// is delivered), else unknown when any part reported, else empty (none did).
func PartsStatus(parts []string) string {
	best := ""
	for _, p := range parts {
		if rank(p) > rank(best) {
			best = p
		}
	}
	return best
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
		mark := store.ReceiptMarkManyParams{Now: now}
		for i := range ds {
			d := &ds[i]
			mark.Ids = append(mark.Ids, d.row.ID)
			mark.States = append(mark.States, d.state)
			mark.DeliveryStatuses = append(mark.DeliveryStatuses, d.status)
			mark.NotificationIds = append(mark.NotificationIds, d.notificationID)
			mark.RouteIds = append(mark.RouteIds, d.route)
			mark.RetrySeconds = append(mark.RetrySeconds, d.retry.Seconds())
			mark.Attempts = append(mark.Attempts, d.attempt)
		}
		if err := m.q.ReceiptMarkMany(ctx, tx, mark); err != nil {
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
		p := store.ReceiptInsertDecidedManyParams{ReceivedAt: at}
		for i := range ds {
			d, r := &ds[i], rs[i]
			p.Providers = append(p.Providers, r.Provider)
			p.ProviderMessageIds = append(p.ProviderMessageIds, r.ProviderMessageID)
			p.Statuses = append(p.Statuses, r.Status)
			p.ErrorCodes = append(p.ErrorCodes, r.ErrorCode)
			p.Raws = append(p.Raws, r.Raw)
			p.Sources = append(p.Sources, r.Source)
			p.States = append(p.States, d.state)
			p.DeliveryStatuses = append(p.DeliveryStatuses, d.status)
			p.NotificationIds = append(p.NotificationIds, d.notificationID)
			p.RouteIds = append(p.RouteIds, d.route)
			p.RetrySeconds = append(p.RetrySeconds, d.retry.Seconds())
			p.Attempts = append(p.Attempts, d.attempt)
		}
		if _, err := m.q.ReceiptInsertDecidedMany(ctx, tx, p); err != nil {
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
// next try (and no route).
func (m *Matcher) decide(ctx context.Context, tx pgx.Tx, rows []store.ReceiptClaimDueRow, clock time.Time,
	now *time.Time, span trace.Span) ([]decision, error) {
	ds := make([]decision, len(rows))
	var keys []string
	var asked []int // the receipts with a key, in order
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
		asked = append(asked, i)
	}
	var found []store.RouteListByReceiptKeysRow
	if len(keys) > 0 {
		var err error
		found, err = m.q.RouteListByReceiptKeys(ctx, tx, keys)
		if err != nil {
			return nil, fmt.Errorf("find routes by receipt key: %w", err)
		}
	}
	byKey := keyedRoutes(found)
	// Per route, the receipts in arrival order: each that moves its
	// status (or, for a route of several parts, its part's status) is
	// matched; the others change nothing.
	states := map[string]*routeState{}
	var order []*routeState
	for _, i := range asked {
		d := &ds[i]
		rt, ok := newestBefore(byKey[key(d.row.Provider, d.row.ProviderMessageID)], d.row.ReceivedAt)
		if !ok {
			window := m.cfg.ReceiptsFunc(d.row.Provider).WindowOrDefault()
			if clock.Sub(d.row.ReceivedAt) >= window {
				d.state = "unmatched"
			} else {
				d.state, d.retry = "new", backoff(d.row.MatchAttempts)
			}
			continue
		}
		d.notificationID, d.route, d.attempt = rt.NotificationID, rt.RouteID, rt.AttemptCount
		rk := rt.NotificationID + "\x00" + rt.RouteID
		parts := len(rt.ReceiptParts)
		st := states[rk]
		if st == nil {
			st = &routeState{nid: rt.NotificationID, rid: rt.RouteID, status: rt.DeliveryStatus}
			if parts > 1 {
				st.oldParts = rt.PartStatuses
				st.parts = make([]string, parts)
				if old := strings.Split(rt.PartStatuses, ","); len(old) == len(st.parts) {
					copy(st.parts, old)
				}
			}
			states[rk] = st
			order = append(order, st)
		}
		if st.parts == nil {
			cur := st.status
			if cur == nil || (*cur == routing.DeliveryUnknown && d.status != routing.DeliveryUnknown) {
				s := d.status
				st.status = &s
				if len(st.matched) > 0 {
					ds[st.matched[0]].state = "duplicate" // superseded in this batch by a final status
				}
				st.write, st.matched, st.statusChanged = d, []int{i}, true
				d.state = "matched"
				continue
			}
		} else if part := rt.part; part >= 0 && part < len(st.parts) &&
			(st.parts[part] == "" || (st.parts[part] == routing.DeliveryUnknown && d.status != routing.DeliveryUnknown)) {
			st.parts[part] = d.status
			agg := PartsStatus(st.parts)
			if st.status == nil || *st.status != agg {
				st.status, st.statusChanged = &agg, true
				st.write = d
			} else if st.write == nil {
				st.write = d // the parts change; the status, error and time stay
			}
			st.matched = append(st.matched, i)
			d.state = "matched"
			continue
		}
		// It changes nothing: a duplicate, unless it is young enough
		// that a newer route with its id may not be visible yet.
		if clock.Sub(d.row.ReceivedAt) < DuplicateSettle {
			d.state, d.retry = "new", backoff(d.row.MatchAttempts)
			continue
		}
		d.state = "duplicate"
	}
	var set store.RouteDeliveryStatusSetManyParams
	set.Now = now
	for _, st := range order {
		if st.write == nil {
			continue
		}
		d := st.write
		set.NotificationIds = append(set.NotificationIds, st.nid)
		set.RouteIds = append(set.RouteIds, st.rid)
		set.DeliveryStatuses = append(set.DeliveryStatuses, *st.status)
		set.DeliveryErrors = append(set.DeliveryErrors, d.errCode)
		set.Permanents = append(set.Permanents, d.permanent)
		set.Retries = append(set.Retries, d.resend && st.statusChanged && *st.status == d.status)
		set.PartStatuses = append(set.PartStatuses, strings.Join(st.parts, ","))
		set.OldPartStatuses = append(set.OldPartStatuses, st.oldParts)
	}
	changed := map[string]store.RouteDeliveryStatusSetManyRow{}
	if len(set.RouteIds) > 0 {
		out, err := m.q.RouteDeliveryStatusSetMany(ctx, tx, set)
		if err != nil {
			return nil, fmt.Errorf("set delivery statuses: %w", err)
		}
		for _, r := range out {
			changed[r.NotificationID+"\x00"+r.RouteID] = r
		}
	}
	for _, st := range order {
		if st.write == nil {
			continue
		}
		r, ok := changed[st.nid+"\x00"+st.rid]
		for _, i := range st.matched {
			d := &ds[i]
			switch {
			case !ok && st.parts != nil:
				// Another matcher changed the parts first: try again.
				d.state, d.retry = "new", 0
			case !ok:
				d.state = "duplicate" // another matcher set it first
			case span.IsRecording():
				span.AddEvent("herald.receipt.matched", trace.WithAttributes(
					tracing.NotificationID.String(d.notificationID), tracing.RouteID.String(d.route),
					tracing.Provider.String(d.row.Provider), tracing.DeliveryStatus.String(d.status)))
			}
		}
		if ok && st.statusChanged {
			m.cfg.Metrics.ReceiptLagged(st.write.row.Provider, r.DeliveryStatusAt.Sub(r.CreatedAt))
		}
	}
	for i := range ds {
		d := &ds[i]
		switch d.state {
		case "matched", "duplicate":
		case "new":
			d.notificationID, d.route, d.attempt = "", "", 0 // not decided: it belongs to no route yet
		default:
			d.attempt = 0
		}
	}
	return ds, nil
}

// keyedRoute is a route a receipt key names, and which part's key it is
// (0 for a route of one part).
type keyedRoute struct {
	store.RouteListByReceiptKeysRow
	part int
}

// keyedRoutes indexes routes by each of their receipt keys: a route of
// several parts under each part's.
func keyedRoutes(routes []store.RouteListByReceiptKeysRow) map[string][]keyedRoute {
	out := make(map[string][]keyedRoute, len(routes))
	for _, r := range routes {
		if len(r.ReceiptParts) < 2 {
			out[r.ReceiptKey] = append(out[r.ReceiptKey], keyedRoute{r, 0})
			continue
		}
		for i, k := range r.ReceiptParts {
			out[k] = append(out[k], keyedRoute{r, i})
		}
	}
	return out
}

// newestBefore returns, of the routes given a receipt's key, the one keyed
// most recently at or before the receipt arrived (a route keyed before
// receipt_keyed_at was recorded counts as keyed long ago); false when
// there is none.
func newestBefore(routes []keyedRoute, arrived time.Time) (keyedRoute, bool) {
	var best keyedRoute
	found := false
	for _, r := range routes {
		at := r.ReceiptKeyedAt
		if at != nil && at.After(arrived) {
			continue
		}
		if !found || (at != nil && (best.ReceiptKeyedAt == nil || at.After(*best.ReceiptKeyedAt))) {
			best, found = r, true
		}
	}
	return best, found
}

// key is a route's receipt key: its provider and the provider's message id.
func key(provider, id string) string { return provider + " " + strings.TrimSpace(id) }
