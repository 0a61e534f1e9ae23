package accept

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/wake"
)

// Kind is what became of one intent a Pipeline ran.
type Kind int

// Kinds of Result.
const (
	// KindAccepted: a new notification was stored.
	KindAccepted Kind = iota + 1
	// KindDuplicate: the key was accepted before with the same request;
	// nothing new was stored, and the Result names the original.
	KindDuplicate
	// KindConflict: the key was accepted before with a different request;
	// nothing was stored, and the Result names the notification holding
	// the key.
	KindConflict
	// KindRefused: a refuse rule of the content blocklist matched the
	// intent's text (code content_blocked).
	KindRefused
	// KindHeld: a review rule of the content blocklist matched: the intent
	// waits for an operator (see RunOpts.HoldFunc).
	KindHeld
	// KindInvalid: the intent did not decode, did not validate, names a
	// template it cannot use, has a callback_url while its producer has no
	// callback subscription (code callback_url_needs_subscription), or its
	// campaign refused it.
	KindInvalid
	// KindForbidden: the intent names a producer its submitter may not
	// submit for (Item.Actor), or the database refused the submitter's
	// login the statement (Result.Err holds the database's error then).
	KindForbidden
)

// String returns the kind's name: "accepted", "duplicate", "conflict",
// "refused", "held", "invalid" or "forbidden".
func (k Kind) String() string {
	switch k {
	case KindAccepted:
		return "accepted"
	case KindDuplicate:
		return "duplicate"
	case KindConflict:
		return "conflict"
	case KindRefused:
		return "refused"
	case KindHeld:
		return "held"
	case KindInvalid:
		return "invalid"
	case KindForbidden:
		return "forbidden"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Item is one decoded intent a door hands to a Pipeline.
type Item struct {
	// Intent is the intent to validate (nil is refused as Validate refuses
	// it), unless Validated or Err is set.
	Intent *intake.Intent
	// Validated, when set, is the intent already validated by the door (the
	// SQL door decodes and validates each entry in one step).
	Validated *intake.Validated
	// Err, when set, is why the door could not decode the intent: the item
	// is KindInvalid with this error.
	Err error
	// Actor, when not "", is the only producer the intent may name:
	// another is KindForbidden, and is not sent to the database.
	Actor string
	// Reviewed says an operator released the intent after review: the
	// content blocklist lets it through.
	Reviewed bool
}

// Result is what a Pipeline did with one Item.
type Result struct {
	Kind Kind
	// Validated is the intent as validated; nil for an item refused before
	// or by validation.
	Validated *intake.Validated
	// Err is, for KindInvalid and KindRefused, the refusal (a
	// *heraldtype.ValidationError, or the door's decoding error); for
	// KindForbidden, the database's error when the database refused the
	// login (nil when Item.Actor did).
	Err error
	// NotificationID is the notification stored (KindAccepted, and
	// KindHeld when the engine's vetter holds it), the original
	// (KindDuplicate) or the one holding the key (KindConflict).
	NotificationID string
	// AcceptedAt is when that notification was accepted.
	AcceptedAt time.Time
	// RouteIDs are the intent's routes, when it is stored or a duplicate.
	RouteIDs []string
	// Held is the review rule that matched, for KindHeld, and for a
	// duplicate or conflict of an intent stored for the vetter to hold.
	Held *content.Match
	// Campaign reports, for KindInvalid, that the intent's campaign
	// refused it (when it was accepted): Err is Outcome.Refused.
	Campaign bool
}

// HoldFunc keeps intent i of a run, valid as v, that review rule m
// matched, for an operator, through db; the Result is KindHeld. An error
// fails the whole run.
type HoldFunc func(ctx context.Context, db store.DBTX, i int, v *intake.Validated, m *content.Match) error

// Pipeline is intake's one sequence, the same for every door: validate
// (package intake), check templates and the content blocklist (package
// content), hold what a review rule matched, accept the rest (Accept, one
// statement for the batch) and report one Result per intent. A door only
// decodes its input into Items and translates the Results into its own
// errors. Its fields are set once; a Pipeline is safe for concurrent use.
type Pipeline struct {
	// Limits bound the intents.
	Limits intake.Limits
	// Content checks templates and the content blocklist.
	Content *content.Checker
	// IdempotencyWindow is Params.IdempotencyWindow.
	IdempotencyWindow time.Duration
	// Optimism is Params.Optimism; nil: always ON CONFLICT.
	Optimism *Optimism
	// Waker, when set, debounces the dispatchers' wake-up hint (see
	// wake.Waker.Hint); nil sends it inside each accept statement.
	Waker *wake.Waker
}

// RunOpts are a Run's per-call options; the zero value is valid.
type RunOpts struct {
	// Now is the validation clock; zero means time.Now().
	Now time.Time
	// AcceptAt is Params.Now, the acceptance time written; zero means the
	// database's clock.
	AcceptAt time.Time
	// HintInStatement sends the hint inside the accept statement even with
	// a Waker: in the caller's transaction, a debounced trailing hint
	// could wake the dispatchers before the caller commits.
	HintInStatement bool
	// HoldFunc keeps an intent a review rule matched. Nil stores it all
	// the same, for the engine's vetter to hold (a producer's routes wait
	// in lane '!vet'): its Result is KindHeld with its notification.
	HoldFunc HoldFunc
}

// Run runs items through the pipeline in db (a pool, a connection or a
// transaction) and returns one Result per item, in order, and committed,
// which the door calls once db's work is committed (at once for a pool):
// it schedules the debounced trailing hint, if one is due. The error is
// the database's, or a HoldFunc's: then nothing of the run may be taken
// as stored. When the database refuses the login the accept statement,
// each intent gets KindForbidden; through a pool or a connection outside
// a transaction, the intents of a batch are then accepted one by one, so
// that only those the login may not submit get it. Run costs Accept's
// statements, plus the content checker's reads and the holds, plus one
// query for a batch holding a callback_url (checkCallbackURLs). Errors are
// returned as Accept, the content checker or the HoldFunc returned them.
func (p *Pipeline) Run(ctx context.Context, db store.DBTX, items []Item, opts RunOpts) (results []Result, committed func(), err error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	results = make([]Result, len(items))
	valid, index := p.validate(items, results, now)
	if valid, index, err = p.checkCallbackURLs(ctx, db, valid, index, results); err != nil {
		return nil, nil, err
	}
	if valid, index, err = p.checkSenders(ctx, db, valid, index, results); err != nil {
		return nil, nil, err
	}
	valid, index, held, err := p.check(ctx, db, items, valid, index, results, opts)
	if err != nil {
		return nil, nil, err
	}
	if len(valid) == 0 {
		return results, func() {}, nil
	}
	if committed, err = p.acceptValid(ctx, db, valid, index, held, results, opts); err != nil {
		return nil, nil, err
	}
	return results, committed, nil
}

// validate validates the items the door did not, at now, and returns the
// valid intents whose submitter may submit them, valid[j] being
// items[index[j]]; results gets the others'.
func (p *Pipeline) validate(items []Item, results []Result, now time.Time) (valid []*intake.Validated, index []int) {
	var toValidate []*intake.Intent
	var at []int // toValidate[k] is items[at[k]]
	for i, it := range items {
		if it.Err == nil && it.Validated == nil {
			toValidate = append(toValidate, it.Intent)
			at = append(at, i)
		}
	}
	vs, errs := intake.ValidateMany(toValidate, p.Limits, now)
	validated := make([]*intake.Validated, len(items))
	for k, i := range at {
		if errs[k] != nil {
			results[i] = Result{Kind: KindInvalid, Err: errs[k]}
			continue
		}
		validated[i] = vs[k]
	}
	valid = make([]*intake.Validated, 0, len(items))
	index = make([]int, 0, len(items))
	for i, it := range items {
		v := validated[i]
		switch {
		case it.Err != nil:
			results[i] = Result{Kind: KindInvalid, Err: it.Err}
			continue
		case it.Validated != nil:
			v = it.Validated
		case v == nil:
			continue // refused by validation
		}
		results[i].Validated = v
		if it.Actor != "" && v.Intent.Producer != it.Actor {
			results[i].Kind = KindForbidden
			continue
		}
		valid = append(valid, v)
		index = append(index, i)
	}
	return valid, index
}

// checkCallbackURLs refuses the intents of valid (items[index[j]] each)
// that have a callback_url when their producer has no callback
// subscription: the subscription's secret or bearer token signs the
// callbacks, so without one every callback would only be dead-lettered.
// It costs nothing for a batch without a callback_url, and one query (a
// probe of the subscriptions' primary key per distinct producer) for a
// batch with one. results gets the refused intents'. A subscription
// deleted after this check leaves the callbacks to the callback channel,
// which dead-letters them with a hint.
func (p *Pipeline) checkCallbackURLs(ctx context.Context, db store.DBTX, valid []*intake.Validated, index []int,
	results []Result) (kept []*intake.Validated, keptIndex []int, err error) {
	var producers []string
	for _, v := range valid {
		if v.Intent.CallbackURL != "" && !slices.Contains(producers, v.Intent.Producer) {
			producers = append(producers, v.Intent.Producer)
		}
	}
	if len(producers) == 0 {
		return valid, index, nil
	}
	subscribed, err := store.New().CallbackSubscriptionProducers(ctx, db, producers)
	if err != nil {
		return nil, nil, fmt.Errorf("check callback subscriptions: %w", err)
	}
	kept, keptIndex = refuseEach(valid, index, results, func(v *intake.Validated) *heraldtype.FieldError {
		if v.Intent.CallbackURL == "" || slices.Contains(subscribed, v.Intent.Producer) {
			return nil
		}
		return &heraldtype.FieldError{Field: "callback_url", Code: heraldtype.CodeCallbackURLNeedsSubscription,
			Message: fmt.Sprintf("producer %s has no callback subscription, whose secret or bearer token signs "+
				"the callbacks: subscribe first (SetCallbackSubscription, PUT /v1/callback-subscription, "+
				"or herald.callback_subscription_set), then send callback_url", v.Intent.Producer)}
	})
	return kept, keptIndex, nil
}

// refuseEach marks invalid, in results, each of valid (items[index[j]]
// each) for which refusal returns a field error, and returns the others:
// the admission checks that need one lookup per batch share it.
func refuseEach(valid []*intake.Validated, index []int, results []Result,
	refusal func(*intake.Validated) *heraldtype.FieldError) (kept []*intake.Validated, keptIndex []int) {
	n := 0
	for j, v := range valid {
		if fe := refusal(v); fe != nil {
			results[index[j]].Kind = KindInvalid
			results[index[j]].Err = &heraldtype.ValidationError{Errors: []heraldtype.FieldError{*fe}}
			continue
		}
		valid[n], index[n] = v, index[j]
		n++
	}
	return valid[:n], index[:n]
}

// check checks valid (items[index[j]] each) against their templates and
// the content blocklist, holds through opts.HoldFunc what a review rule
// matched, and returns the intents to accept, with the review rule each
// matched (nil for none: it is stored for the vetter to hold); results
// gets the others'.
func (p *Pipeline) check(ctx context.Context, db store.DBTX, items []Item, valid []*intake.Validated, index []int,
	results []Result, opts RunOpts) (kept []*intake.Validated, keptIndex []int, held []*content.Match, err error) {
	var copts *content.CheckOpts
	if slices.ContainsFunc(index, func(i int) bool { return items[i].Reviewed }) {
		copts = &content.CheckOpts{Reviewed: make([]bool, len(valid))}
		for j, i := range index {
			copts.Reviewed[j] = items[i].Reviewed
		}
	}
	verdicts, err := p.Content.Check(ctx, db, valid, p.Limits, copts)
	if err != nil {
		return nil, nil, nil, err
	}
	held = make([]*content.Match, 0, len(valid))
	n := 0
	for j, v := range valid {
		i, verdict := index[j], verdicts[j]
		switch {
		case verdict.Err != nil:
			results[i].Kind, results[i].Err = KindInvalid, verdict.Err
			var ve *heraldtype.ValidationError
			if errors.As(verdict.Err, &ve) && ve.Code() == heraldtype.CodeContentBlocked {
				results[i].Kind = KindRefused
			}
			continue
		case verdict.Held != nil && opts.HoldFunc != nil:
			if err := opts.HoldFunc(ctx, db, i, v, verdict.Held); err != nil {
				return nil, nil, nil, err
			}
			results[i].Kind, results[i].Held = KindHeld, verdict.Held
			continue
		}
		valid[n], index[n] = v, i
		held = append(held, verdict.Held)
		n++
	}
	return valid[:n], index[:n], held, nil
}

// acceptValid accepts valid (items[index[j]] each, held[j] the review rule it
// matched) in one statement, and fills in their results. It returns the
// door's committed func (see Run).
func (p *Pipeline) acceptValid(ctx context.Context, db store.DBTX, valid []*intake.Validated, index []int, held []*content.Match,
	results []Result, opts RunOpts) (committed func(), err error) {
	committed = func() {}
	ch := HintChannel(valid)
	hint := p.hint(ch, opts)
	outs, err := Accept(ctx, db, valid, p.params(hint, opts))
	switch {
	case insufficientPrivilege(err) && (len(valid) == 1 || !standalone(db)):
		for _, i := range index {
			results[i].Kind, results[i].Err = KindForbidden, err
		}
		return committed, nil
	case insufficientPrivilege(err):
		return committed, p.acceptEach(ctx, db, valid, index, held, results, opts)
	case err != nil:
		return nil, err
	}
	anyFresh := false
	for j, o := range outs {
		p.settle(&results[index[j]], valid[j], o, held[j])
		anyFresh = anyFresh || fresh(o)
	}
	if hint == nil && anyFresh && p.Waker != nil {
		committed = func() { p.Waker.Done(ch) }
	}
	return committed, nil
}

// acceptEach accepts valid one by one through db, a pool or a connection
// outside a transaction, after the database refused the login their
// statement: it refuses only the intents the login may not submit.
func (p *Pipeline) acceptEach(ctx context.Context, db store.DBTX, valid []*intake.Validated, index []int, held []*content.Match,
	results []Result, opts RunOpts) error {
	for j, v := range valid {
		one := []*intake.Validated{v}
		h := p.hint(HintChannel(one), opts)
		o, err := Accept(ctx, db, one, p.params(h, opts))
		switch {
		case insufficientPrivilege(err):
			results[index[j]].Kind, results[index[j]].Err = KindForbidden, err
			continue
		case err != nil:
			return err
		}
		p.settle(&results[index[j]], v, o[0], held[j])
		if h == nil && fresh(o[0]) && p.Waker != nil {
			p.Waker.Done(HintChannel(one)) // committed: db runs each statement on its own
		}
	}
	return nil
}

// hint returns Params.Notify for intents whose routes' hint channel is ch.
func (p *Pipeline) hint(ch string, opts RunOpts) *string {
	if p.Waker == nil || opts.HintInStatement {
		return &ch
	}
	return p.Waker.Hint(ch)
}

func (p *Pipeline) params(hint *string, opts RunOpts) Params {
	return Params{Now: opts.AcceptAt, IdempotencyWindow: p.IdempotencyWindow, Notify: hint, Optimism: p.Optimism}
}

// settle fills r, the Result of v, from Accept's outcome o; m is the
// review rule that matched v, if any (stored for the vetter to hold).
func (p *Pipeline) settle(r *Result, v *intake.Validated, o Outcome, m *content.Match) {
	switch {
	case o.Refused != nil: // its campaign refused it
		r.Kind, r.Err, r.Campaign = KindInvalid, o.Refused, true
		return
	case o.Conflict:
		r.Kind, r.NotificationID, r.AcceptedAt, r.Held = KindConflict, o.NotificationID, o.AcceptedAt, m
		return
	case o.Duplicate:
		r.Kind = KindDuplicate
	case m != nil:
		r.Kind = KindHeld
	default:
		r.Kind = KindAccepted
	}
	r.NotificationID, r.AcceptedAt, r.Held = o.NotificationID, o.AcceptedAt, m
	r.RouteIDs = make([]string, len(v.Routes))
	for k, rt := range v.Routes {
		r.RouteIDs[k] = rt.RouteID
	}
}

// fresh reports whether o stored a new notification.
func fresh(o Outcome) bool { return !o.Duplicate && !o.Conflict && o.Refused == nil }

// insufficientPrivilege reports whether err is the database refusing the
// login (SQLSTATE 42501: a missing grant, or a row-level security policy).
func insufficientPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege
}
