package herald

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/tracing"
	"github.com/heraldhq/herald/internal/wake"
)

// Defaults of Config.
const (
	// DefaultIdempotencyWindow is the default Config.IdempotencyWindow.
	DefaultIdempotencyWindow = accept.DefaultIdempotencyWindow
	// DefaultNotifyDebounce is the default Config.NotifyDebounce.
	DefaultNotifyDebounce = wake.DefaultDebounce
	// DefaultActor is the default Config.Actor.
	DefaultActor = "herald-client"
)

// Limits bounds what an intent may carry. Zero fields take the defaults.
type Limits struct {
	// MaxPayloadBytes caps the content as canonical JSON. Default 64 KiB.
	MaxPayloadBytes int
	// MaxSMSSegments caps the segments an SMS body may need. Default 10.
	MaxSMSSegments int
	// MaxScheduleAhead caps how far ahead SendAt may be. Default 90 days.
	MaxScheduleAhead time.Duration
	// MaxRoutes caps the routes one intent may fan out to. Default 1000.
	MaxRoutes int
}

// Config configures a Client. The zero value is valid.
type Config struct {
	// Logger receives debug lines about submits and cancels; nil discards.
	Logger *slog.Logger
	// IdempotencyWindow is how long an idempotency key stays reserved
	// after its notification is accepted. Default 48 hours; at least one
	// second.
	IdempotencyWindow time.Duration
	// Limits bounds intents; zero fields take the defaults.
	Limits Limits
	// NotifyDebounce is the window of the dispatchers' wake-up hint: the
	// first submit of a quiet period sends a NOTIFY herald_routes inside its
	// own statement, later submits within the window send none, and one
	// trailing NOTIFY follows at the window's end. Default 5 ms; negative
	// sends one per submit.
	NotifyDebounce time.Duration
	// Actor names this client in the audit log (Cancel). Default
	// "herald-client".
	Actor string
	// ResultFunc, if set, is called once per submitted intent with its
	// producer (as given, "" for a nil intent) and its result: "accepted",
	// "duplicate", "conflict", "invalid", "forbidden" or "held" (the
	// herald_intents_total labels). It is not called for intents of a submit whose statement
	// failed, and for SubmitTx it is called before the caller commits.
	ResultFunc func(producer, result string)
	// NowFunc, if set, replaces the clock for validation and is written as
	// the acceptance time; for tests. Nil means time.Now for validation and
	// the database's now() for acceptance.
	NowFunc func() time.Time
	// ContentRulesMaxAge is how long the client uses the content
	// blocklist (herald.content_rules) it read before reading it again,
	// with the submit that finds it stale: one query at most this often.
	// Default 5s; negative reads it for every submit.
	ContentRulesMaxAge time.Duration
	// TracerProvider makes the spans of Submit, SubmitTx, SubmitMany and
	// SubmitManyTx, each a child of the caller's context's span. Nil means
	// OpenTelemetry's global provider (a no-op unless the program set
	// one). An intent without a TraceID is stored with its submit span's
	// W3C traceparent, so that its delivery attempts link back to it.
	TracerProvider trace.TracerProvider
}

func (c *Config) validate() error {
	if c.IdempotencyWindow != 0 && c.IdempotencyWindow < time.Second {
		return errors.New("IdempotencyWindow must be at least 1s")
	}
	switch {
	case c.Limits.MaxPayloadBytes < 0:
		return errors.New("Limits.MaxPayloadBytes must not be negative")
	case c.Limits.MaxSMSSegments < 0:
		return errors.New("Limits.MaxSMSSegments must not be negative")
	case c.Limits.MaxScheduleAhead < 0:
		return errors.New("Limits.MaxScheduleAhead must not be negative")
	case c.Limits.MaxRoutes < 0:
		return errors.New("Limits.MaxRoutes must not be negative")
	}
	return nil
}

// Client submits intents to herald and reads and cancels notifications. It
// is safe for concurrent use; make one per process and share it.
type Client struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	actor  string
	now    func() time.Time
	result func(producer, result string)
	waker  *wake.Waker
	tracer trace.Tracer
	// pipeline validates, checks content (templates, the blocklist),
	// holds and accepts, as for every door. Its Optimism lets SubmitMany
	// and Submit insert without ON CONFLICT while their keys turn out new
	// (see accept.Optimism); the Tx forms never do.
	pipeline accept.Pipeline
	optimism accept.Optimism
}

// NewClient returns a Client storing into the herald schema of pool's
// database (migrated with `herald migrate`). A nil cfg means the defaults.
// It returns an error naming the Config field that is invalid.
func NewClient(pool *pgxpool.Pool, cfg *Config) (*Client, error) {
	if pool == nil {
		return nil, errors.New("new client: pool is nil")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		pool:   pool,
		logger: logger,
		actor:  cmp.Or(cfg.Actor, DefaultActor),
		now:    cfg.NowFunc,
		result: cfg.ResultFunc,
		waker:  wake.NewWaker(pool, cfg.NotifyDebounce, logger),
		tracer: tracing.Tracer(cfg.TracerProvider),
	}
	c.pipeline = accept.Pipeline{
		Limits: intake.Limits{
			MaxPayloadBytes:  cfg.Limits.MaxPayloadBytes,
			MaxSMSSegments:   cfg.Limits.MaxSMSSegments,
			MaxScheduleAhead: cfg.Limits.MaxScheduleAhead,
			MaxRoutes:        cfg.Limits.MaxRoutes,
		}.WithDefaults(),
		Content:           content.NewChecker(&content.CheckerConfig{RulesMaxAge: cfg.ContentRulesMaxAge, Logger: logger}),
		IdempotencyWindow: cmp.Or(cfg.IdempotencyWindow, DefaultIdempotencyWindow),
		Optimism:          &c.optimism,
		Waker:             c.waker,
	}
	return c, nil
}

// Close stops the client's pending trailing wake-up hint. It does not close
// the pool. The client must not be used afterwards.
func (c *Client) Close() { c.waker.Close() }

// Submit validates in and stores it, with its routes, in one statement
// committed on its own. It returns the receipt; for an intent accepted
// before with the same idempotency key and the same request, the original
// notification's receipt with Duplicate set. It returns a *ValidationError
// if in is refused, a *ConflictError (errors.Is ErrIdempotencyConflict)
// if the key holds a different request, and a *ForbiddenError (errors.Is
// ErrForbidden) if in names a producer other than the client's login.
func (c *Client) Submit(ctx context.Context, in *Intent) (*Receipt, error) {
	return c.submitOne(ctx, "herald.Submit", c.pool, in, false)
}

// SubmitTx is Submit inside the caller's transaction tx: the notification
// and its routes commit or roll back with the caller's own writes (the
// outbox pattern), and the wake-up hint goes out at commit. SubmitTx always
// sends its hint inside tx rather than through the debounce: a debounced
// trailing hint could reach the dispatchers before the caller commits, and
// the routes would wait for their poll. Every statement names the herald schema, so tx's
// search_path does not matter. A conflict or database error inside tx
// leaves tx usable only for rollback, as any failed statement does; a
// *ValidationError is returned before anything is sent.
func (c *Client) SubmitTx(ctx context.Context, tx pgx.Tx, in *Intent) (*Receipt, error) {
	if tx == nil {
		return nil, errors.New("submit intent: tx is nil")
	}
	return c.submitOne(ctx, "herald.SubmitTx", tx, in, true)
}

func (c *Client) submitOne(ctx context.Context, op string, db store.DBTX, in *Intent, inTx bool) (*Receipt, error) {
	res, err := c.submitTraced(ctx, op, db, []*Intent{in}, inTx)
	if err != nil {
		return nil, err
	}
	return res[0].Receipt, res[0].Err
}

// submitTraced is submit inside a span named op, a child of ctx's.
func (c *Client) submitTraced(ctx context.Context, op string, db store.DBTX, ins []*Intent, inTx bool) ([]SubmitResult, error) {
	ctx, span := c.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	res, err := c.submit(ctx, db, ins, inTx)
	if !span.IsRecording() {
		return res, err
	}
	if err != nil {
		span.SetStatus(codes.Error, "submit failed")
		span.RecordError(err)
		return res, err
	}
	var accepted, dup, refused int
	for _, r := range res {
		switch {
		case r.Err != nil:
			refused++
		case r.Receipt.Duplicate:
			dup++
		default:
			accepted++
		}
	}
	span.SetAttributes(tracing.BatchSize.Int(len(ins)), tracing.Accepted.Int(accepted),
		tracing.Duplicates.Int(dup), tracing.Refused.Int(refused))
	if len(res) == 1 && res[0].Receipt != nil {
		span.SetAttributes(tracing.NotificationID.String(res[0].Receipt.NotificationID))
	}
	return res, nil
}

// SubmitMany validates and stores many intents in one statement, one round
// trip, committed on its own. It returns one result per intent, in order:
// a refused intent (a *ValidationError, a *ConflictError, or a
// *ForbiddenError for an intent in a producer's name the client's login may
// not submit for, in its SubmitResult.Err) does not keep the others from
// being stored. Intents of
// the same producer and idempotency key within one call behave as if
// submitted one after the other. The error is non-nil only when the
// statement itself failed, and then nothing was stored. A call whose keys
// are all new costs one statement; one that meets keys stored before
// costs up to three (the plain insert, which fails on them and writes
// nothing, the same batch with ON CONFLICT, and the lookup of the
// existing notifications), and for ten seconds after that the client
// starts with ON CONFLICT (see accept.Optimism).
func (c *Client) SubmitMany(ctx context.Context, ins []*Intent) ([]SubmitResult, error) {
	return c.submitTraced(ctx, "herald.SubmitMany", c.pool, ins, false)
}

// SubmitManyTx is SubmitMany inside the caller's transaction tx (the
// outbox pattern for a batch): the notifications commit or roll back with
// the caller's own writes, and the wake-up hint goes out at commit. Results
// are SubmitMany's, one per intent; a conflict or database error leaves tx
// usable only for rollback, as any failed statement does (for intents in
// another producer's name every valid intent of the call gets the
// refusal, since tx can no longer be used to tell them apart).
func (c *Client) SubmitManyTx(ctx context.Context, tx pgx.Tx, ins []*Intent) ([]SubmitResult, error) {
	if tx == nil {
		return nil, errors.New("submit intents: tx is nil")
	}
	return c.submitTraced(ctx, "herald.SubmitManyTx", tx, ins, true)
}

// submit runs ins through the intake pipeline in db. inTx says db is the
// caller's transaction: its hint then always rides that transaction's
// commit.
func (c *Client) submit(ctx context.Context, db store.DBTX, ins []*Intent, inTx bool) ([]SubmitResult, error) {
	opts := accept.RunOpts{HintInStatement: inTx}
	if c.now != nil {
		opts.Now = c.now()
		opts.AcceptAt = opts.Now
	}
	items := make([]accept.Item, len(ins))
	for i, in := range ins {
		items[i].Intent = in
	}
	opts.HoldFunc = func(ctx context.Context, db store.DBTX, i int, _ *intake.Validated, _ *content.Match) error {
		return hold(ctx, db, ins[i])
	}
	res, committed, err := c.pipeline.Run(ctx, db, items, opts)
	if err != nil {
		if f := forbidden(err); f != err {
			return nil, f // a hold the database refused the login
		}
		return nil, fmt.Errorf("submit intents: %w", err)
	}
	committed() // through the pool, committed; in tx, HintInStatement left nothing to schedule
	results := make([]SubmitResult, len(ins))
	for i, r := range res {
		results[i] = c.submitResult(ctx, r)
	}
	c.report(ins, results)
	return results, nil
}

// submitResult translates the pipeline's result r into the client's.
func (c *Client) submitResult(ctx context.Context, r accept.Result) SubmitResult {
	switch r.Kind {
	case accept.KindInvalid, accept.KindRefused:
		if r.Validated != nil {
			c.logger.DebugContext(ctx, "intent refused", slog.String("campaign", r.Validated.Intent.Campaign), slog.Any("err", r.Err))
		}
		return SubmitResult{Err: r.Err}
	case accept.KindForbidden:
		err := forbidden(r.Err)
		var f *ForbiddenError
		if errors.As(err, &f) && r.Validated != nil {
			f.Producer = r.Validated.Intent.Producer
		}
		return SubmitResult{Err: err}
	case accept.KindConflict:
		c.logger.DebugContext(ctx, "intent refused: idempotency conflict", slog.String("notification_id", r.NotificationID))
		return SubmitResult{Err: &ConflictError{
			ExistingID: r.NotificationID, Producer: r.Validated.Intent.Producer, IdempotencyKey: r.Validated.Intent.IdempotencyKey,
		}}
	case accept.KindHeld:
		c.logger.DebugContext(ctx, "intent sent to the engine to be held for review", slog.Int64("rule_id", r.Held.Rule.ID))
		return SubmitResult{Receipt: &Receipt{Held: true, HeldRule: r.Held.Rule.String()}}
	}
	if c.logger.Enabled(ctx, slog.LevelDebug) { // its attributes cost allocations per intent even unlogged
		c.logger.DebugContext(ctx, "intent accepted", slog.String("notification_id", r.NotificationID),
			slog.Bool("duplicate", r.Kind == accept.KindDuplicate), slog.Int("routes", len(r.RouteIDs)))
	}
	return SubmitResult{Receipt: &Receipt{
		NotificationID: r.NotificationID,
		Duplicate:      r.Kind == accept.KindDuplicate,
		AcceptedAt:     r.AcceptedAt,
		RouteIDs:       r.RouteIDs,
	}}
}

// hold has in, which a review rule of the content blocklist matched, held
// for an operator by the engine: it goes on the SQL intake (herald.intake)
// as the client's login, in db (inside the caller's transaction for
// SubmitTx), and the intake worker checks it again and keeps it in
// herald.held_intents, where only the engine writes. Its receipt is Held,
// naming the rule the client found; HeldID is 0, since the engine assigns
// it when it holds the intent. A retry of a held intent finds the same
// held entry.
func hold(ctx context.Context, db store.DBTX, in *Intent) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("hold intent for review: %w", err)
	}
	if err := store.New().IntakeInsert(ctx, db, string(body)); err != nil {
		if f := forbidden(err); f != err {
			return f
		}
		return fmt.Errorf("hold intent for review: %w", err)
	}
	return nil
}

// report passes each result to Config.ResultFunc.
func (c *Client) report(ins []*Intent, results []SubmitResult) {
	if c.result == nil {
		return
	}
	for i, r := range results {
		producer := ""
		if ins[i] != nil {
			producer = ins[i].Producer
		}
		var verr *ValidationError
		switch {
		case errors.Is(r.Err, ErrIdempotencyConflict):
			c.result(producer, "conflict")
		case errors.As(r.Err, &verr):
			c.result(producer, "invalid")
		case errors.Is(r.Err, ErrForbidden):
			c.result(producer, "forbidden")
		case r.Receipt != nil && r.Receipt.Duplicate:
			c.result(producer, "duplicate")
		case r.Receipt != nil && r.Receipt.Held:
			c.result(producer, "held")
		case r.Receipt != nil:
			c.result(producer, "accepted")
		}
	}
}

// Get returns the notification id with every route's state, attempts,
// last error and the providers that took its attempts. It returns
// ErrNotFound if there is no such notification (including one removed by
// retention).
func (c *Client) Get(ctx context.Context, id string) (*Notification, error) {
	return c.get(ctx, c.pool, id)
}

// GetTx is Get inside the caller's transaction tx: it sees tx's own
// uncommitted notifications (a SubmitTx earlier in tx) and reads in tx's
// snapshot.
func (c *Client) GetTx(ctx context.Context, tx pgx.Tx, id string) (*Notification, error) {
	if tx == nil {
		return nil, errors.New("get notification: tx is nil")
	}
	return c.get(ctx, tx, id)
}

func (c *Client) get(ctx context.Context, db store.DBTX, id string) (*Notification, error) {
	l, err := accept.Load(ctx, db, id)
	if errors.Is(err, accept.ErrNotFound) {
		return nil, fmt.Errorf("get notification: %w", ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &l.Notification, nil
}

// Cancel moves every route of notification id that is not yet terminal
// (pending, claimed or failed) to canceled, and writes an audit_log row
// (action "cancel") in the same statement. A route a dispatcher is
// delivering right now is canceled too, though that delivery may still
// reach the recipient. It returns what it canceled (nothing if every route
// was terminal already), or ErrNotFound if there is no such notification or
// it is another producer's (a producer's login may cancel only its own; an
// operator's or the engine's, any). The audit row records opts.Actor (or
// Config.Actor) and, whatever the actor says, the database login.
// opts may be nil.
func (c *Client) Cancel(ctx context.Context, id string, opts *CancelOpts) (*CancelResult, error) {
	return c.cancel(ctx, c.pool, id, opts)
}

// CancelTx is Cancel inside the caller's transaction tx: the routes are
// canceled, and the audit row written, only if tx commits.
func (c *Client) CancelTx(ctx context.Context, tx pgx.Tx, id string, opts *CancelOpts) (*CancelResult, error) {
	if tx == nil {
		return nil, errors.New("cancel notification: tx is nil")
	}
	return c.cancel(ctx, tx, id, opts)
}

func (c *Client) cancel(ctx context.Context, db store.DBTX, id string, opts *CancelOpts) (*CancelResult, error) {
	if opts == nil {
		opts = &CancelOpts{}
	}
	var sqlNow *time.Time // nil: the database's clock
	if c.now != nil {
		t := c.now()
		sqlNow = &t
	}
	res := &CancelResult{NotificationID: id, Canceled: []CanceledRoute{}}
	rows, err := store.New().RouteCancelByNotification(ctx, db, store.RouteCancelByNotificationParams{
		NotificationID: id,
		Actor:          cmp.Or(opts.Actor, c.actor),
		Reason:         opts.Reason,
		Now:            sqlNow,
	})
	if err != nil {
		return nil, fmt.Errorf("cancel notification: %w", notFound(err))
	}
	for _, r := range rows {
		res.Canceled = append(res.Canceled, CanceledRoute{RouteID: r.RouteID, Channel: Channel(r.Channel)})
	}
	c.logger.DebugContext(ctx, "notification canceled", slog.String("notification_id", id), slog.Int("routes", len(res.Canceled)))
	return res, nil
}

// UpsertRecipient creates or replaces r's entry in the connecting producer's
// own recipient directory: the entries routes of this producer's
// notifications resolve through first. The entry belongs to the database
// login the client is connected as; no other producer can read or change
// it. Addresses are validated with the intent's rules and stored
// normalized; it returns a *ValidationError naming the field otherwise.
func (c *Client) UpsertRecipient(ctx context.Context, r Recipient) error {
	return c.upsertRecipient(ctx, r, nil)
}

// UpsertSharedRecipient creates or replaces r's entry in the shared
// directory, which routes of every producer fall back to when their
// producer has no entry of its own for the user. Only a login granted
// herald_directory (a service that owns user data) or the engine's own login
// may write it; any other gets an error matching ErrForbidden. Validation is
// UpsertRecipient's.
func (c *Client) UpsertSharedRecipient(ctx context.Context, r Recipient) error {
	shared := ""
	return c.upsertRecipient(ctx, r, &shared)
}

func (c *Client) upsertRecipient(ctx context.Context, r Recipient, owner *string) error {
	v, err := intake.ValidateRecipient(r)
	if err != nil {
		return err
	}
	var sqlNow *time.Time // nil: the database's clock
	if c.now != nil {
		t := c.now()
		sqlNow = &t
	}
	err = store.New().RecipientUpsert(ctx, c.pool, store.RecipientUpsertParams{
		Owner:      owner,
		UserID:     v.UserID,
		Email:      v.Email,
		Phone:      v.Phone,
		WebhookUrl: v.WebhookURL,
		Locale:     v.Locale,
		OptedOut:   v.OptedOut,
		Now:        sqlNow,
	})
	if err != nil {
		return fmt.Errorf("upsert recipient: %w", forbidden(err))
	}
	return nil
}

// DeleteRecipient removes the connecting producer's own entry for userID
// and reports whether there was one.
func (c *Client) DeleteRecipient(ctx context.Context, userID string) (bool, error) {
	return c.deleteRecipient(ctx, userID, false)
}

// DeleteSharedRecipient removes the shared directory's entry for userID and
// reports whether there was one. As for UpsertSharedRecipient, the login
// must be granted herald_directory (or be the engine's); otherwise the
// error matches ErrForbidden.
func (c *Client) DeleteSharedRecipient(ctx context.Context, userID string) (bool, error) {
	return c.deleteRecipient(ctx, userID, true)
}

func (c *Client) deleteRecipient(ctx context.Context, userID string, shared bool) (bool, error) {
	deleted, err := store.New().RecipientDelete(ctx, c.pool, store.RecipientDeleteParams{UserID: userID, Shared: shared})
	if err != nil {
		return false, fmt.Errorf("delete recipient: %w", forbidden(err))
	}
	return deleted, nil
}

// notFound maps what accept.NotFound maps to accept.ErrNotFound (a row
// not found, or an id the caller may not see) to ErrNotFound.
func notFound(err error) error {
	if errors.Is(accept.NotFound(err), accept.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

// forbidden wraps a Postgres insufficient_privilege error (a missing grant,
// or a row-level security policy refusing the row) so that it matches
// ErrForbidden: the one place that maps it.
func forbidden(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege {
		return &ForbiddenError{err: pgErr}
	}
	return err
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
