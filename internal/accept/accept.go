// Package accept stores validated intents: Accept writes each as one
// record plus its routes, idempotently (the primary key (producer,
// idempotency_key) of herald.idempotency_keys decides), in one statement
// that may also send the dispatchers' wake-up hint. It is the one way into
// the records and routes tables, for every door: the Go client at the
// module root, the HTTP API (internal/api) and the SQL door's worker
// (internal/sqldoor) each decode their input and hand it to a Pipeline,
// which validates it with package intake, checks its content with package
// content, holds what a review rule matched, accepts the rest through
// Accept and returns one Result per intent; the door only translates the
// results into its own errors. Load reads a notification back, for every
// door that shows one.
package accept

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/pgarray"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/tracing"
)

// DefaultIdempotencyWindow is how long an idempotency key stays reserved
// when Params.IdempotencyWindow is zero: 48 hours, as the SMS
// orchestrator kept its Redis keys.
const DefaultIdempotencyWindow = 48 * time.Hour

// Params configures one Accept call.
type Params struct {
	// Now is the acceptance time written to records and routes; zero means
	// the database's now().
	Now time.Time
	// IdempotencyWindow is how long the keys stay reserved
	// (records.idempotency_expires_at); zero means
	// DefaultIdempotencyWindow.
	IdempotencyWindow time.Duration
	// Notify, when non-nil, makes the insert statement itself send the
	// wake.RoutesTopic hint with payload *Notify, delivered when the
	// transaction commits (see wake.Waker.Hint). Nil sends none.
	Notify *string
	// Optimism, when non-nil, lets Accept insert without ON CONFLICT
	// first when db commits each statement on its own (see Optimism).
	// Nil: always ON CONFLICT.
	Optimism *Optimism
}

// DefaultPessimism is how long an Optimism stays pessimistic after an
// insert met a key that existed.
const DefaultPessimism = 10 * time.Second

// Optimism lets Accept store a batch with RecordInsertManyFresh, a plain
// insert, instead of RecordInsertMany's ON CONFLICT DO NOTHING, whose
// speculative insertion costs a descent of the unique index and a
// confirmation per key (about a quarter of the insert's buffer
// accesses). The primary key of idempotency_keys is the check either way: a key that exists fails the plain insert as a whole,
// nothing written, and Accept runs the ON CONFLICT insert instead. That
// is tried only where the failed statement aborts no transaction: db a
// *pgxpool.Pool, or a connection (*pgx.Conn, *pgxpool.Conn) outside one.
// A failed attempt wastes part of a batch's work, so after one the
// Optimism goes pessimistic for DefaultPessimism (ON CONFLICT only) and
// then tries again: a producer that resends keys pays for one failure per
// period, not one per batch. pgx drops a cached statement that failed, so
// the first plain insert after a failure is prepared again on its
// connection. One Optimism serves one door (a Client); its zero value is
// ready, and it is safe for concurrent use.
type Optimism struct {
	pessimisticUntil atomic.Int64 // unix nanoseconds
	fresh            atomic.Int64
	fellBack         atomic.Int64
}

// Counts returns how many batches the plain insert stored, and how many
// it failed on a key that existed (each then stored by ON CONFLICT).
func (o *Optimism) Counts() (fresh, fellBack int64) {
	return o.fresh.Load(), o.fellBack.Load()
}

// tryFresh reports whether Accept, at now, through db, may try the plain
// insert.
func (o *Optimism) tryFresh(db store.DBTX, now time.Time) bool {
	return now.UnixNano() >= o.pessimisticUntil.Load() && standalone(db)
}

// standalone reports whether each statement through db commits on its
// own: a pool, or a connection that is not in a transaction. A pgx.Tx,
// and anything else, is taken to be in one.
func standalone(db store.DBTX) bool {
	switch c := db.(type) {
	case *pgxpool.Pool:
		return true
	case *pgxpool.Conn:
		return c.Conn().PgConn().TxStatus() == 'I'
	case *pgx.Conn:
		return c.PgConn().TxStatus() == 'I'
	}
	return false
}

// keyTaken reports whether err is the plain insert's failure on a key
// that exists.
func keyTaken(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UniqueViolation &&
		pgErr.ConstraintName == "idempotency_keys_pkey"
}

// Outcome is what Accept did with one validated intent.
type Outcome struct {
	// NotificationID is the new notification's id; for a duplicate or a
	// conflict, the id of the notification that holds the key.
	NotificationID string
	// AcceptedAt is when that notification was accepted.
	AcceptedAt time.Time
	// Duplicate reports that the key was accepted before with the same
	// fingerprint: nothing new was stored.
	Duplicate bool
	// Conflict reports that the key was accepted before with a different
	// fingerprint: nothing new was stored, and NotificationID names the
	// notification holding the key.
	Conflict bool

	// Campaigns.

	// Refused, when not nil, says why a valid intent of a campaign was not
	// stored: the campaign's cancel was requested (code campaign_canceled,
	// field campaign), or the campaign is scheduled for another send_at
	// (invalid_field, field send_at). NotificationID is "" then.
	Refused *heraldtype.ValidationError
}

// idemKey is the idempotency scope of an intent.
type idemKey struct{ producer, key string }

// keyHolder is the notification that holds an idempotency key.
type keyHolder struct {
	id          string
	fingerprint string
	acceptedAt  time.Time
	insertedBy  int // index into vs of the intent that inserted it; -1 if it existed
}

// Accept stores validated intents idempotently through db (a pool, a
// connection or the caller's transaction), each as one record plus its
// routes, all in one statement, and returns one Outcome per intent in the
// order of vs. The primary key (producer, idempotency_key) of
// herald.idempotency_keys decides: the first intent with a key is stored;
// the others with the same key get the stored notification, as a
// Duplicate if their fingerprint matches it and as a Conflict if not. A
// key whose window is over is free: Accept releases it and stores the
// intent as a new notification. It costs one round trip, plus one more
// only when a key is held already (a duplicate or conflict), two more for
// an expired key, and one more again when p.Optimism tried the plain
// insert and the key made it fail. Under
// REPEATABLE READ or SERIALIZABLE such a race fails with a serialization
// error instead, which the caller retries. An error means
// nothing was accepted by this call (in a transaction, the transaction is
// then aborted). An intent without a trace_id is stored with the W3C
// traceparent of ctx's span, if ctx has one (see tracing.Traceparent).
func Accept(ctx context.Context, db store.DBTX, vs []*intake.Validated, p Params) ([]Outcome, error) {
	if slices.ContainsFunc(vs, func(v *intake.Validated) bool { return v.Intent.Campaign != "" }) {
		return acceptCampaigns(ctx, db, vs, p)
	}
	return accept(ctx, db, vs, p)
}

// releaseRounds bounds how many times one Accept releases expired keys
// and inserts their intents again: each round follows another accept
// taking a key over and letting it expire in between.
const releaseRounds = 3

// accept is Accept of intents that it does not check against their
// campaigns.
func accept(ctx context.Context, db store.DBTX, vs []*intake.Validated, p Params) ([]Outcome, error) {
	return acceptRound(ctx, db, vs, p, 0)
}

// acceptRound is accept's round round: the intents whose keys it finds
// expired it releases and accepts again, in round round+1.
func acceptRound(ctx context.Context, db store.DBTX, vs []*intake.Validated, p Params, round int) ([]Outcome, error) {
	out := make([]Outcome, len(vs))
	if len(vs) == 0 {
		return out, nil
	}
	holders := make(map[idemKey]*keyHolder, len(vs))
	var firsts []int // the first intent of each key: the ones sent to the insert
	for i, v := range vs {
		k := idemKey{v.Intent.Producer, v.Intent.IdempotencyKey}
		if _, ok := holders[k]; !ok {
			holders[k] = nil
			firsts = append(firsts, i)
		}
	}

	// Insert in (producer, key) order: two accepts that share keys then
	// take the keys' locks in the same order and cannot deadlock.
	slices.SortFunc(firsts, func(a, b int) int {
		return cmp.Or(cmp.Compare(vs[a].Intent.Producer, vs[b].Intent.Producer),
			cmp.Compare(vs[a].Intent.IdempotencyKey, vs[b].Intent.IdempotencyKey))
	})
	params, err := insertParams(vs, firsts, p, tracing.Traceparent(ctx))
	if err != nil {
		return nil, err
	}
	rows, err := insert(ctx, db, params, p)
	if err != nil {
		return nil, fmt.Errorf("insert records: %w", err)
	}
	firstOf := make(map[string]int, len(firsts)) // notification id → intent index
	for j, i := range firsts {
		firstOf[params.NotificationIds[j]] = i
	}
	for _, r := range rows {
		holders[idemKey{r.Producer, r.IdempotencyKey}] = &keyHolder{
			id: r.NotificationID, fingerprint: r.RequestFingerprint, acceptedAt: r.AcceptedAt,
			insertedBy: firstOf[r.NotificationID],
		}
	}

	// Keys not inserted are held already: committed before the statement,
	// or by a racing transaction it waited for (whose row its snapshot
	// cannot show). A new statement reads both. A key whose window is over
	// is free: it is released, and its intents go in again.
	var now *time.Time // nil: the database's clock
	if !p.Now.IsZero() {
		now = &p.Now
	}
	missing := store.RecordGetByKeysParams{Now: now}
	for k, h := range holders {
		if h == nil {
			missing.Producers = append(missing.Producers, k.producer)
			missing.IdempotencyKeys = append(missing.IdempotencyKeys, k.key)
		}
	}
	released := map[idemKey]bool{}
	if len(missing.Producers) > 0 {
		found, err := store.New().RecordGetByKeys(ctx, db, missing)
		if err != nil {
			return nil, fmt.Errorf("get records by idempotency key: %w", err)
		}
		release := store.IdempotencyKeysReleaseParams{Now: now}
		for _, r := range found {
			k := idemKey{r.Producer, r.IdempotencyKey}
			switch {
			case r.Expired:
				released[k] = true
				release.Producers = append(release.Producers, r.Producer)
				release.IdempotencyKeys = append(release.IdempotencyKeys, r.IdempotencyKey)
				release.NotificationIds = append(release.NotificationIds, r.NotificationID)
			case !r.Found:
				return nil, fmt.Errorf("accept intent: idempotency key of producer %q is held by notification %s, which is not found",
					r.Producer, r.NotificationID)
			default:
				holders[k] = &keyHolder{
					id: r.NotificationID, fingerprint: r.RequestFingerprint, acceptedAt: r.AcceptedAt, insertedBy: -1,
				}
			}
		}
		if len(released) > 0 {
			if round+1 >= releaseRounds {
				return nil, fmt.Errorf("accept intent: idempotency keys found expired %d times over", releaseRounds)
			}
			if _, err := store.New().IdempotencyKeysRelease(ctx, db, release); err != nil {
				return nil, fmt.Errorf("release expired idempotency keys: %w", err)
			}
			// The intents of the released keys go in again, with ON
			// CONFLICT: a key another accept took meanwhile is its
			// duplicate or conflict.
			var again []*intake.Validated
			var at []int
			for i, v := range vs {
				if released[idemKey{v.Intent.Producer, v.Intent.IdempotencyKey}] {
					again = append(again, v)
					at = append(at, i)
				}
			}
			q := p
			q.Optimism = nil
			outs, err := acceptRound(ctx, db, again, q, round+1)
			if err != nil {
				return nil, err
			}
			for j, i := range at {
				out[i] = outs[j]
			}
		}
	}

	for i, v := range vs {
		k := idemKey{v.Intent.Producer, v.Intent.IdempotencyKey}
		if released[k] {
			continue
		}
		h := holders[k]
		if h == nil {
			return nil, fmt.Errorf("accept intent: idempotency key of producer %q neither inserted nor found", v.Intent.Producer)
		}
		out[i] = Outcome{NotificationID: h.id, AcceptedAt: h.acceptedAt}
		switch {
		case h.insertedBy == i:
		case h.fingerprint == v.Fingerprint:
			out[i].Duplicate = true
		default:
			out[i].Conflict = true
		}
	}
	return out, nil
}

// insert runs RecordInsertManyFresh when p.Optimism allows it, and
// RecordInsertMany when not, or when the plain insert met a key that
// exists, on a connection of db whose []string parameters pgarray
// encodes (withArrays).
func insert(ctx context.Context, db store.DBTX, params store.RecordInsertManyParams, p Params) (rows []store.RecordInsertManyRow, err error) {
	err = withArrays(ctx, db, func(db store.DBTX) error {
		rows, err = insertOn(ctx, db, params, p)
		return err
	})
	return rows, err
}

// withArrays runs fn on db, or for a pool on a connection of it, having
// made the connection's type map encode []string parameters with
// pgarray: the insert's columns are a dozen text arrays of a thousand
// elements, which pgx's generic array path encoded at about a tenth of
// the bench process's CPU. pgarray sends the bytes pgx would, and leaves
// every other value to pgx, so the connection behaves as before for its
// other users. A db of another type runs fn as it is.
func withArrays(ctx context.Context, db store.DBTX, fn func(store.DBTX) error) error {
	switch c := db.(type) {
	case *pgxpool.Pool:
		conn, err := c.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		pgarray.Register(conn.Conn().TypeMap())
		return fn(conn)
	case *pgxpool.Conn:
		pgarray.Register(c.Conn().TypeMap())
	case *pgx.Conn:
		pgarray.Register(c.TypeMap())
	case pgx.Tx:
		pgarray.Register(c.Conn().TypeMap())
	}
	return fn(db)
}

// insertOn is insert on db, a connection or a transaction when a pool
// was given.
func insertOn(ctx context.Context, db store.DBTX, params store.RecordInsertManyParams, p Params) ([]store.RecordInsertManyRow, error) {
	if o := p.Optimism; o != nil {
		now := p.Now
		if now.IsZero() {
			now = time.Now()
		}
		if o.tryFresh(db, now) {
			rows, err := store.New().RecordInsertManyFresh(ctx, db, store.RecordInsertManyFreshParams(params))
			if err == nil {
				o.fresh.Add(1)
				out := make([]store.RecordInsertManyRow, len(rows))
				for i, r := range rows {
					out[i] = store.RecordInsertManyRow(r)
				}
				return out, nil
			}
			if !keyTaken(err) {
				return nil, err
			}
			o.fellBack.Add(1)
			o.pessimisticUntil.Store(now.Add(DefaultPessimism).UnixNano())
		}
	}
	return store.New().RecordInsertMany(ctx, db, params)
}

// insertParams lays out the intents vs[firsts] as RecordInsertMany's
// column arrays, with a fresh UUIDv7 notification id each. traceparent
// (the W3C traceparent of the accepting span, or "") is the trace_id of
// the intents that carry none: their delivery attempts then link back to
// the span that accepted them.
func insertParams(vs []*intake.Validated, firsts []int, p Params, traceparent string) (store.RecordInsertManyParams, error) {
	n := len(firsts)
	nRoutes := 0
	for _, i := range firsts {
		nRoutes += len(vs[i].Routes)
	}
	window := cmp.Or(p.IdempotencyWindow, DefaultIdempotencyWindow)
	var now *time.Time // nil: the database's clock
	if !p.Now.IsZero() {
		now = &p.Now
	}
	a := store.RecordInsertManyParams{
		NotificationIds:          make([]string, 0, n),
		NotificationTypes:        make([]string, 0, n),
		Producers:                make([]string, 0, n),
		AudienceKinds:            make([]string, 0, n),
		RecipientUserIds:         make([][]byte, 0, n),
		PayloadJsons:             make([]string, 0, n),
		IdempotencyKeys:          make([]string, 0, n),
		RequestFingerprints:      make([]string, 0, n),
		RequestIds:               make([]string, 0, n),
		TraceIds:                 make([]string, 0, n),
		OccurredAts:              make([]time.Time, 0, n),
		ChannelLists:             make([]string, 0, n),
		Priorities:               make([]int16, 0, n),
		SendAts:                  make([]time.Time, 0, n),
		ExpiresAts:               make([]time.Time, 0, n),
		CallbackUrls:             make([]string, 0, n),
		Campaigns:                make([]string, 0, n),
		Metadatas:                make([]string, 0, n),
		Now:                      now,
		IdempotencyWindowSeconds: window.Seconds(),
		RouteNotificationIds:     make([]string, 0, nRoutes),
		RouteIds:                 make([]string, 0, nRoutes),
		RouteChannels:            make([]string, 0, nRoutes),
		RouteRecipientRefs:       make([]string, 0, nRoutes),
		RouteMaxAttempts:         make([]int32, 0, nRoutes),
		RoutePriorities:          make([]int16, 0, nRoutes),
		RouteSendAts:             make([]time.Time, 0, nRoutes),
		RouteExpiresAts:          make([]time.Time, 0, nRoutes),
		RouteSmsEncodings:        make([]string, 0, nRoutes),
		RouteSmsSegments:         make([]int16, 0, nRoutes),
		HintPayload:              p.Notify,
	}
	for _, i := range firsts {
		v := vs[i]
		in := &v.Intent
		id, err := uuid.NewV7()
		if err != nil {
			return a, fmt.Errorf("generate notification id: %w", err)
		}
		nid := id.String()
		users := noUserIDs // the column holds [], not null
		if len(in.Audience.UserIDs) > 0 {
			if users, err = json.Marshal(in.Audience.UserIDs); err != nil {
				return a, fmt.Errorf("marshal user ids: %w", err)
			}
		}
		// The zero time stands for NULL (not set): see RecordInsertMany.
		sendAt, expiresAt := in.SendAt, in.ExpiresAt
		a.NotificationIds = append(a.NotificationIds, nid)
		a.NotificationTypes = append(a.NotificationTypes, in.NotificationType)
		a.Producers = append(a.Producers, in.Producer)
		a.AudienceKinds = append(a.AudienceKinds, v.AudienceKind)
		a.RecipientUserIds = append(a.RecipientUserIds, users)
		a.PayloadJsons = append(a.PayloadJsons, string(v.PayloadJSON))
		a.IdempotencyKeys = append(a.IdempotencyKeys, in.IdempotencyKey)
		a.RequestFingerprints = append(a.RequestFingerprints, v.Fingerprint)
		a.RequestIds = append(a.RequestIds, in.RequestID)
		a.TraceIds = append(a.TraceIds, cmp.Or(in.TraceID, traceparent))
		a.OccurredAts = append(a.OccurredAts, in.OccurredAt)
		a.ChannelLists = append(a.ChannelLists, strings.Join(in.Channels, ","))
		a.Priorities = append(a.Priorities, v.Priority)
		a.SendAts = append(a.SendAts, sendAt)
		a.ExpiresAts = append(a.ExpiresAts, expiresAt)
		a.CallbackUrls = append(a.CallbackUrls, in.CallbackURL)
		a.Campaigns = append(a.Campaigns, in.Campaign)
		a.Metadatas = append(a.Metadatas, string(v.MetadataJSON)) // "" stores NULL
		for _, r := range v.Routes {
			a.RouteNotificationIds = append(a.RouteNotificationIds, nid)
			a.RouteIds = append(a.RouteIds, r.RouteID)
			a.RouteChannels = append(a.RouteChannels, r.Channel)
			a.RouteRecipientRefs = append(a.RouteRecipientRefs, r.RecipientRef)
			a.RouteMaxAttempts = append(a.RouteMaxAttempts, int32(in.MaxAttempts))
			a.RoutePriorities = append(a.RoutePriorities, v.Priority)
			a.RouteSendAts = append(a.RouteSendAts, sendAt)
			a.RouteExpiresAts = append(a.RouteExpiresAts, expiresAt)
			a.RouteSmsEncodings = append(a.RouteSmsEncodings, r.SMSEncoding)
			a.RouteSmsSegments = append(a.RouteSmsSegments, int16(r.SMSSegments))
		}
	}
	thinDefaults(&a)
	return a, nil
}

// noUserIDs is records.recipient_user_ids of an intent without user ids,
// shared by all of them (nothing writes into it).
var noUserIDs = []byte("[]")

// thinDefaults sets to nil (a NULL array) each optional array of a whose
// every element is the default, which RecordInsertMany reads as the
// default: a batch of plain intents does not send, and Postgres does not
// decode, a thousand empty strings or zero times per array.
func thinDefaults(a *store.RecordInsertManyParams) {
	a.RequestIds = nilIfZero(a.RequestIds)
	a.TraceIds = nilIfZero(a.TraceIds)
	a.SendAts = nilIfZero(a.SendAts)
	a.ExpiresAts = nilIfZero(a.ExpiresAts)
	a.CallbackUrls = nilIfZero(a.CallbackUrls)
	a.Campaigns = nilIfZero(a.Campaigns)
	a.Metadatas = nilIfZero(a.Metadatas)
	a.RouteSendAts = nilIfZero(a.RouteSendAts)
	a.RouteExpiresAts = nilIfZero(a.RouteExpiresAts)
	a.RouteSmsEncodings = nilIfZero(a.RouteSmsEncodings)
	a.RouteSmsSegments = nilIfZero(a.RouteSmsSegments)
	if !slices.ContainsFunc(a.RecipientUserIds, func(u []byte) bool { return string(u) != "[]" }) {
		a.RecipientUserIds = nil
	}
}

// nilIfZero returns nil when every element of xs is its type's zero value
// (for a time, the zero time.Time{} that stands for "not set"), else xs.
func nilIfZero[T comparable](xs []T) []T {
	var zero T
	if slices.ContainsFunc(xs, func(x T) bool { return x != zero }) {
		return xs
	}
	return nil
}

// HintChannel returns the payload of the wake.RoutesTopic hint for the
// routes of vs: their delivery channel if they share one, else "".
func HintChannel(vs []*intake.Validated) string {
	ch := ""
	for _, v := range vs {
		for _, r := range v.Routes {
			switch ch {
			case "":
				ch = r.Channel
			case r.Channel:
			default:
				return ""
			}
		}
	}
	return ch
}
