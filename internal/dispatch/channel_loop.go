package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store"
)

// Classifications the dispatcher itself gives outcomes.
const (
	// ClassExpired: the intent's expires_at passed before the route could
	// be delivered; dead-lettered without an attempt.
	ClassExpired = "expired"
	// ClassAttemptsExhausted: the route was claimed more times than its
	// budget allows without any attempt completing (its dispatchers died or
	// stalled past their leases); dead-lettered without a further attempt.
	ClassAttemptsExhausted = "attempts_exhausted"
	// ClassUnknownRecipient: a "user:<id>" route whose user is not in
	// herald.recipients; skipped.
	ClassUnknownRecipient = "unknown_recipient"
	// ClassOptedOut: the user opted out of the route's channel; skipped.
	ClassOptedOut = "opted_out"
	// ClassDelivererPanic: the channel's Deliverer panicked; dead-lettered.
	ClassDelivererPanic = "deliverer_panic"
	// ClassTemplateError: a templated notification's template version is
	// gone or no longer renders (dead_letter).
	ClassTemplateError = "template_error"
)

// userRefPrefix marks a recipient_ref resolved through herald.recipients.
const userRefPrefix = "user:"

// channelLoop claims and delivers the routes of one channel's lane: the
// channel's own queue (lane ”), or a capped provider's paced queue (lane
// is the provider's name; see lane.go).
type channelLoop struct {
	d    *Dispatcher
	name string
	lane string
	cfg  ChannelConfig
	// stop ends a lane loop whose provider lost its cap or was removed.
	stop context.CancelFunc
	// slots holds one token per delivery in flight: its capacity is the
	// channel's Concurrency.
	slots chan struct{}
	// freed is signaled (without blocking) whenever a slot is given back.
	freed chan struct{}
	// wake is signaled by NOTIFY and Wake.
	wake     chan struct{}
	inflight sync.WaitGroup
	// work hands a delivery to an idle worker (see handOff).
	work chan *job
	// prog tracks the loop's rounds: a claim, then the recipient lookup of
	// what it claimed.
	prog *progress
	// turn and claimTime are running means (nanoseconds) of how long a
	// launched delivery holds its slot and how long a claim takes; gather
	// compares them (see quick).
	turn      atomic.Int64
	claimTime time.Duration
}

func newChannelLoop(d *Dispatcher, name, lane string, cfg ChannelConfig) *channelLoop {
	part := "channel loop"
	if lane != "" {
		part = "lane loop " + lane
	}
	return &channelLoop{
		d:     d,
		name:  name,
		lane:  lane,
		cfg:   cfg,
		slots: make(chan struct{}, cfg.Concurrency),
		freed: make(chan struct{}, 1),
		wake:  make(chan struct{}, 1),
		work:  make(chan *job),
		prog:  newProgress(d, part, name),
	}
}

func (l *channelLoop) wakeUp() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// minDueWait is the shortest sleep when the next due route is due already
// but was not claimed: another dispatcher holds it locked in its own claim,
// which is about to move it to its lease's end.
const minDueWait = 20 * time.Millisecond

// Backoff of a loop whose claim or recipient lookup failed: doubling from
// minErrDelay up to maxErrDelay, on top of the failed statement's own time
// (up to the lock or statement timeout).
const (
	minErrDelay = 100 * time.Millisecond
	maxErrDelay = 5 * time.Second
)

// run claims until ctx ends. Deliveries it starts run under deliverCtx.
func (l *channelLoop) run(ctx, deliverCtx context.Context) {
	errDelay := minErrDelay
	backoff := func() bool {
		ok := pause.For(ctx, errDelay) == nil
		errDelay = min(2*errDelay, maxErrDelay)
		return ok
	}
	backlog := false // the last claim was full: more routes are due
	racedLast := false
	for ctx.Err() == nil {
		free := cap(l.slots) - len(l.slots)
		if free == 0 {
			select {
			case <-ctx.Done():
				return
			case <-l.freed:
			}
			continue
		}
		if backlog {
			want, wait := l.lowWater(), gatherWait
			if l.quick() {
				want, wait = l.full(), min(l.claimTime/quickShare, gatherWait)
			}
			free = l.gather(ctx, want, wait)
		}
		want := min(free, l.d.batchSize)
		// The claim is not canceled with ctx: a claim interrupted by
		// shutdown might commit with its answer lost, leaving routes
		// leased to no one until their leases end. A finished claim seen
		// after shutdown began is released instead (start).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Lease)
		began := time.Now()
		l.prog.begin()
		var claimed []store.RouteClaimDueRow
		var jobs []job
		var err error
		if l.lane == "" && l.d.plane.cur.Load().hasCappedProvider(l.name) {
			jobs, err = l.claimRouted(cctx, want)
			for i := range jobs {
				claimed = append(claimed, jobs[i].row)
			}
		} else {
			claimed, err = l.d.q.RouteClaimDue(cctx, l.d.pool, store.RouteClaimDueParams{
				Now:          l.d.now(),
				LeaseSeconds: l.cfg.Lease.Seconds(),
				Max:          int32(want),
				Channel:      l.name,
				Lane:         l.lane,
			})
		}
		cancel()
		l.claimTime = ewma(l.claimTime, time.Since(began))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// A claim that raced a route's move is run again at once,
			// once: it changed nothing (raced).
			if raced(err) && !racedLast {
				racedLast = true
				l.d.log.Debug("claim raced a route's move; claiming again", "channel", l.name, "lane", l.lane)
				continue
			}
			racedLast = false
			l.prog.fail(opClaim, err, errDelay)
			if !backoff() {
				return
			}
			continue
		}
		l.d.stats.claimed.Add(int64(len(claimed)))
		l.d.stats.inHand.Add(int64(len(claimed)))
		l.d.metrics.InFlight(l.name, len(claimed))
		if l.d.afterClaim != nil {
			l.d.afterClaim(len(claimed))
		}
		sctx, span := l.claimSpan(ctx, began, len(claimed))
		if jobs != nil {
			err = l.startRouted(sctx, deliverCtx, jobs)
		} else {
			err = l.start(sctx, deliverCtx, claimed)
		}
		if err != nil {
			span.SetStatus(codes.Error, "claimed routes not started")
		}
		span.End()
		if err != nil {
			if !backoff() {
				return
			}
			continue
		}
		l.prog.done()
		errDelay = minErrDelay
		racedLast = false
		if backlog = len(claimed) == want; backlog {
			continue // more may be due: claim again at once
		}
		l.idle(ctx)
	}
}

// gatherWait bounds how long a saturated loop waits for more slots to
// free before it claims for the few it has.
const gatherWait = 5 * time.Millisecond

// full is the most one claim can take: the channel's concurrency, at most
// a batch.
func (l *channelLoop) full() int {
	return min(cap(l.slots), l.d.batchSize)
}

// quick reports whether the channel's deliveries give their slots back
// in less than a quarter of a claim's time (running means): then a
// saturated loop waits, up to that quarter, for a full claim's worth of
// slots (gather) rather than claiming for the slots that happen to be
// free. With deliveries that fast, the slots a claim finds taken are held
// by the batch the loop has just launched, whose deliveries are about to
// end: claiming at once took about half a batch per statement (the
// loop's claims alternated between the two halves of its slots), and
// every claim and completion statement pays a fixed cost (the due scan's
// walk over routes in flight, the round trip, the commit) that a full one
// shares among twice the routes. With slower deliveries (a provider's
// round trip), waiting would leave the slots already free idle while
// the deliveries it waits for still run: the loop gathers only a quarter
// of its slots (lowWater), claiming while the rest deliver.
func (l *channelLoop) quick() bool {
	return l.claimTime > 0 && time.Duration(l.turn.Load()) < l.claimTime/quickShare
}

// quickShare is the share of a claim's time (its inverse) under which
// deliveries are quick, and the longest a loop waits for them.
const quickShare = 4

// ewma moves a running mean an eighth of the way to sample.
func ewma(mean, sample time.Duration) time.Duration {
	if mean == 0 {
		return sample
	}
	return mean + (sample-mean)/8
}

// lowWater is how many free slots a saturated loop gathers before
// claiming: a quarter of its concurrency (at most a batch), so a slow
// channel under a backlog claims a few routes per statement rather than one
// per finished delivery.
func (l *channelLoop) lowWater() int {
	return max(1, min(cap(l.slots)/4, l.d.batchSize))
}

// gather waits until want slots are free, wait has passed or ctx ends,
// and returns the free slots.
func (l *channelLoop) gather(ctx context.Context, want int, wait time.Duration) int {
	if free := cap(l.slots) - len(l.slots); free >= want {
		return free
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		free := cap(l.slots) - len(l.slots)
		if free >= want {
			return free
		}
		select {
		case <-ctx.Done():
			return free
		case <-t.C:
			return cap(l.slots) - len(l.slots)
		case <-l.freed:
		}
	}
}

// idle sleeps until a wake-up, the next due route, or the poll interval.
func (l *channelLoop) idle(ctx context.Context) {
	wait := l.d.poll
	secs, err := l.d.q.RouteNextDue(ctx, l.d.pool, store.RouteNextDueParams{Now: l.d.now(), Channel: l.name, Lane: l.lane})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		// Counted, but no episode of its own: the loop polls instead, and
		// the claim that follows reports whatever keeps failing (it reads
		// the same index) without a line per poll.
		kind := l.prog.count(opNextDue, err, []string{l.name})
		l.d.log.Debug("read next due route; polling instead", "channel", l.name, "err", err, "timeout", kind)
	} else if !math.IsInf(secs, 1) {
		due := time.Duration(min(secs, wait.Seconds()) * float64(time.Second))
		wait = min(wait, max(due, minDueWait))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-l.wake:
	case <-t.C:
	}
}

// job is one claimed route on its way through delivery.
type job struct {
	row     store.RouteClaimDueRow
	maxAtt  int32
	msg     channel.Message
	email   string
	locale  string
	outcome *completion // set when the route is settled without delivery
	// provider delivers the route; nil on a channel without providers
	// (the channel's Deliverer does).
	provider *Provider
	// park, when set, moves the route into a lane instead (park.go).
	park *parking
	// slotAt is when a capped provider's paced send may go (lane loops).
	slotAt time.Time
	// launched is when the job took its slot.
	launched time.Time
	// claim is the span of the claim that took the route (trace.go).
	claim trace.SpanContext
}

// start resolves a claimed batch and starts its deliveries; routes that
// need no delivery (expired, exhausted, skipped) go straight to the
// completer. If ctx ended meanwhile, or the lookup failed, the batch is
// released instead; the lookup's error is returned, so that the loop backs
// off.
func (l *channelLoop) start(ctx, deliverCtx context.Context, claimed []store.RouteClaimDueRow) error {
	if len(claimed) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Lease)
	jobs, err := l.resolve(rctx, claimed)
	cancel()
	if err != nil || ctx.Err() != nil {
		if err != nil && ctx.Err() == nil {
			l.prog.fail(opResolve, err, 0)
		}
		if rerr := l.d.release(l.name, claimed); rerr != nil {
			l.prog.fail(opRelease, rerr, 0)
		}
		if err == nil {
			err = ctx.Err() // shutdown: the loop stops, the round is not done
		}
		return err
	}
	l.route(jobs)
	l.parkAll(jobs)
	return l.launch(ctx, deliverCtx, jobs)
}

// launch paces (lane loops) and starts the deliveries of a resolved,
// routed batch; settled routes go to the completer. On a pacing error the
// deliverable routes are released.
func (l *channelLoop) launch(ctx, deliverCtx context.Context, jobs []job) error {
	if err := l.pace(ctx, jobs); err != nil {
		l.prog.fail(opPace, err, 0)
		var back []store.RouteClaimDueRow
		for i := range jobs {
			if jobs[i].outcome == nil && jobs[i].park == nil {
				back = append(back, jobs[i].row)
			}
		}
		if rerr := l.d.release(l.name, back); rerr != nil {
			l.prog.fail(opRelease, rerr, 0)
		}
		for i := range jobs {
			if jobs[i].outcome != nil {
				l.d.completer.add(*jobs[i].outcome)
			}
		}
		return err
	}
	claim := trace.SpanContextFromContext(ctx)
	for i := range jobs {
		j := &jobs[i]
		if j.outcome != nil {
			l.d.completer.add(*j.outcome)
			continue
		}
		j.claim = claim
		if j.park != nil {
			continue
		}
		l.slots <- struct{}{} // never blocks: the claim took at most the free slots
		j.launched = time.Now()
		l.inflight.Add(1)
		l.handOff(deliverCtx, j)
	}
	return nil
}

// resolve turns claimed rows into jobs: the effective attempt budget, the
// channel's content, and the address from the recipient directory for
// "user:<id>" routes (one lookup for the whole batch).
func (l *channelLoop) resolve(ctx context.Context, claimed []store.RouteClaimDueRow) ([]job, error) {
	return l.resolveIn(ctx, l.d.pool, claimed)
}

// resolveIn is resolve on db: the pool, or claimRouted's transaction.
func (l *channelLoop) resolveIn(ctx context.Context, db store.DBTX, claimed []store.RouteClaimDueRow) ([]job, error) {
	// A user id is looked up in its notification's producer's directory,
	// then in the shared one: user "42" of one producer is not another's.
	var lookup store.RecipientGetManyParams
	for _, r := range claimed {
		if id, ok := strings.CutPrefix(r.RecipientRef, userRefPrefix); ok {
			lookup.Producers = append(lookup.Producers, r.Producer)
			lookup.UserIds = append(lookup.UserIds, id)
		}
	}
	type userKey struct{ producer, id string }
	users := map[userKey]store.RecipientGetManyRow{}
	if len(lookup.UserIds) > 0 {
		rows, err := l.d.q.RecipientGetMany(ctx, db, lookup)
		if err != nil {
			return nil, fmt.Errorf("look up recipients: %w", err)
		}
		for _, u := range rows {
			users[userKey{u.Producer, u.UserID}] = u
		}
	}
	jobs := make([]job, len(claimed))
	for i, r := range claimed {
		j := &jobs[i]
		j.row = r
		j.maxAtt = r.MaxAttempts
		if j.maxAtt <= 0 {
			j.maxAtt = int32(l.cfg.MaxAttempts)
		}
		switch {
		case r.Expired:
			j.outcome = l.settle(j, "dead_letter", ClassExpired, "the intent expired before the route could be delivered",
				"nothing to do unless the notification still matters: then submit a new intent with a later expires_at")
			continue
		case r.AttemptCount > j.maxAtt:
			j.outcome = l.settle(j, "dead_letter", ClassAttemptsExhausted,
				fmt.Sprintf("claimed %d times without a completed attempt (budget %d): its dispatchers stopped before finishing", r.AttemptCount, j.maxAtt),
				"check why herald serve processes died or stalled on this route (logs, OOM kills), then replay it with `herald dead-letters replay`")
			continue
		}
		address := r.RecipientRef
		if id, ok := strings.CutPrefix(r.RecipientRef, userRefPrefix); ok {
			u, found := users[userKey{r.Producer, id}]
			if !found {
				j.outcome = l.settle(j, "skipped", ClassUnknownRecipient, "user is not in the recipient directory", "")
				continue
			}
			j.locale = u.Locale
			for _, ch := range u.OptedOut {
				if ch == l.name {
					j.outcome = l.settle(j, "skipped", ClassOptedOut, "user opted out of "+l.name, "")
					break
				}
			}
			if j.outcome != nil {
				continue
			}
			switch l.name {
			case channel.Email:
				address = u.Email
			case channel.SMS:
				address = u.Phone
			case channel.Webhook:
				address = u.WebhookUrl
			default:
				address = ""
			}
			if address == "" {
				no := channel.NoAddress(l.name)
				j.outcome = l.settle(j, "skipped", no.Classification, no.Message, "")
				continue
			}
		}
		if l.name == channel.Email {
			j.email = address
		}
		body := contentFor(r.PayloadJson, l.name)
		if body == nil && isTemplated(r.PayloadJson) {
			// Only a templated notification pays for rendering: an intent
			// with content has its channel's entry, found above.
			var err error
			if body, err = l.render(ctx, db, j); err != nil {
				return nil, err
			}
			if j.outcome != nil {
				continue
			}
		}
		j.msg = channel.Message{
			NotificationID:   r.NotificationID,
			RouteID:          r.RouteID,
			NotificationType: r.NotificationType,
			Attempt:          int(r.AttemptCount),
			Address:          address,
			Locale:           j.locale,
			Content:          body,
			TraceID:          r.TraceID,
			RequestID:        r.RequestID,
			AcceptedAt:       r.AcceptedAt,
		}
	}
	return jobs, nil
}

// contentFor picks the channel's entry out of records.payload_json (the
// intent's content, keyed by channel); nil if absent, or if the payload is
// not a valid JSON object, which the channel reports as bad content. It
// scans the payload (gjson) rather than decoding every channel's content
// into a map: this runs once per route claimed, and decoding cost more than
// the rest of resolving a claimed batch.
func contentFor(payload, ch string) json.RawMessage {
	if !gjson.Valid(payload) {
		return nil
	}
	doc := gjson.Parse(payload)
	if !doc.IsObject() {
		return nil
	}
	v := doc.Get(gjson.Escape(ch))
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	return json.RawMessage(v.Raw)
}

// isTemplated reports whether payload is a templated notification's
// ({"data", "template"}); checked only when the payload has no entry for
// the route's channel.
func isTemplated(payload string) bool {
	return gjson.Get(payload, "template.name").Exists()
}

// render renders the templated notification of j for its channel, in the
// locale j's recipient has (the directory's, or else the intent's
// template.locale), with the template version the notification was
// accepted with; j.locale becomes the locale used (routes.resolved_locale).
// A version that is gone or renders no longer (both only through SQL by
// hand: intake rendered every locale) settles j as a dead letter. The
// error is the database's.
func (l *channelLoop) render(ctx context.Context, db store.DBTX, j *job) (json.RawMessage, error) {
	doc := gjson.Parse(j.row.PayloadJson)
	ref := doc.Get("template")
	name, version := ref.Get("name").String(), int(ref.Get("version").Int())
	fail := func(err error) (json.RawMessage, error) {
		j.outcome = l.settle(j, "dead_letter", ClassTemplateError,
			fmt.Sprintf("template %s version %d: %v", name, version, err),
			"the template version this notification was accepted with is missing or no longer renders: "+
				"restore it (herald.templates), then replay with `herald dead-letters replay`")
		return nil, nil
	}
	t, err := l.d.templates.Get(ctx, db, j.row.Producer, name, version)
	var perr *content.ParseError
	switch {
	case errors.Is(err, content.ErrTemplateNotFound) || errors.As(err, &perr):
		return fail(err)
	case err != nil:
		return nil, fmt.Errorf("get template of notification %s: %w", j.row.NotificationID, err)
	}
	data, err := intake.DecodeData([]byte(doc.Get("data").Raw))
	if err != nil {
		return fail(err)
	}
	want := j.locale
	if want == "" {
		want = ref.Get("locale").String()
	}
	r, err := t.Render(want, l.name, data)
	if err != nil {
		return fail(err)
	}
	j.locale = r.Locale
	return r.Content(), nil
}

// settle builds the completion of a route that needs no delivery.
func (l *channelLoop) settle(j *job, status, class, msg, hint string) *completion {
	outcome := channel.Skip.String()
	switch {
	case class == ClassExpired:
		outcome = ClassExpired
	case status == "dead_letter":
		outcome = channel.Permanent.String()
	}
	var lease time.Time // set by claimRouted after its claim, with the tid, when nil here
	if j.row.LeaseUntil != nil {
		lease = *j.row.LeaseUntil
	}
	return &completion{
		channel:        l.name,
		notificationID: j.row.NotificationID,
		routeID:        j.row.RouteID,
		tid:            j.row.RouteTid,
		attempt:        j.row.AttemptCount,
		leaseUntil:     lease,
		status:         status,
		classification: class,
		message:        msg,
		hint:           hint,
		maxAttempts:    j.maxAtt,
		resolvedLocale: j.locale,
		traceID:        j.row.TraceID,
		metricOutcome:  outcome,
	}
}

// workerIdle is how long a delivery worker waits for its next delivery
// before it exits.
const workerIdle = 2 * time.Second

// handOff gives j to an idle delivery worker, or starts one. Workers stay
// for the next delivery (at most Concurrency of them are ever busy, since
// each holds a slot), so a delivery runs on a goroutine whose stack has
// grown to what delivery needs already: a goroutine per delivery paid for
// that growth every time, 6% of the bench process's CPU (pprof:
// runtime.newstack under deliver).
func (l *channelLoop) handOff(ctx context.Context, j *job) {
	select {
	case l.work <- j:
	default:
		go l.worker(ctx, j)
	}
}

// worker delivers j, then whatever handOff gives it, until it has been idle
// for workerIdle or ctx ends.
func (l *channelLoop) worker(ctx context.Context, j *job) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		l.deliver(ctx, j)
		idle.Reset(workerIdle)
		select {
		case j = <-l.work:
		case <-idle.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// deliver runs one attempt outside any transaction and hands its outcome
// to the completer.
func (l *channelLoop) deliver(ctx context.Context, j *job) {
	defer func() {
		// A lost update of this running mean (two deliveries ending at
		// once) only drops a sample.
		l.turn.Store(int64(ewma(time.Duration(l.turn.Load()), time.Since(j.launched))))
		<-l.slots
		select {
		case l.freed <- struct{}{}:
		default:
		}
		l.inflight.Done()
	}()
	pr := j.provider
	if !j.slotAt.IsZero() && !l.waitSlot(ctx, j) {
		// Shutdown before the slot came: the attempt fails transiently,
		// as any delivery canceled at shutdown does.
		l.d.completer.add(l.outcomeToCompletion(j, channel.Outcome{Class: channel.Transient,
			Classification: channel.ClassCanceled, Message: "shut down while waiting for the provider's cap"}))
		return
	}
	deliverer, timeout := l.cfg.Deliverer, l.cfg.Timeout
	if pr != nil {
		if !pr.acquire(ctx) {
			l.d.completer.add(l.outcomeToCompletion(j, channel.Outcome{Class: channel.Transient,
				Classification: channel.ClassCanceled, Message: "shut down while waiting for a provider slot"}))
			return
		}
		defer pr.releaseSlot()
		deliverer = pr.Deliverer
		if pr.Timeout > 0 && pr.Timeout < l.cfg.Lease {
			// A provider's own timeout, unless it would outlast the lease
			// (the route would be claimed again mid-attempt): then the
			// channel's applies.
			timeout = pr.Timeout
		}
	}
	began := time.Now()
	actx, cancel := context.WithTimeout(ctx, timeout)
	actx, span := l.attemptSpan(actx, j)
	out := l.safeDeliver(actx, deliverer, &j.msg)
	cancel()
	if pr != nil {
		l.d.health.record(pr.Name, out, time.Since(began))
		l.d.metrics.ProviderAttempt(pr.Name, out.Class.String(), time.Since(began))
	}
	if out.Class == channel.Transient && out.Unsent && ctx.Err() == nil {
		// Nothing reached a provider (an SMPP provider lost its last bind
		// since routing chose it): the route waits, its attempt handed
		// back, and is routed again.
		c := l.outcomeToCompletion(j, out)
		c.status = "waiting"
		endAttempt(span, out, &c)
		j.park = &parking{delay: unavailableWait}
		l.parkAll([]job{*j})
		return
	}
	c := l.outcomeToCompletion(j, out)
	endAttempt(span, out, &c)
	l.d.completer.add(c)
}

func (l *channelLoop) safeDeliver(ctx context.Context, deliverer channel.Deliverer, msg *channel.Message) (out channel.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			l.d.log.Error("deliverer panicked", "channel", l.name, "notification_id", msg.NotificationID,
				"route_id", msg.RouteID, "attempt", msg.Attempt, "trace_id", msg.TraceID, "err", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = channel.Outcome{
				Class:          channel.Permanent,
				Classification: ClassDelivererPanic,
				Message:        "the " + l.name + " deliverer panicked",
				RecoveryHint:   "a bug in herald's " + l.name + " channel: report it with the serve logs, then replay after upgrading",
			}
		}
	}()
	if deliverer == nil {
		return channel.Outcome{Class: channel.Permanent, Classification: ClassNoRoute,
			Message:      "channel " + l.name + " has no provider in this process",
			RecoveryHint: "configure the channel in herald serve's file or give it providers with `herald providers apply`, then replay"}
	}
	return deliverer.Deliver(ctx, msg)
}

// outcomeToCompletion maps a classified outcome onto the route's next
// state.
func (l *channelLoop) outcomeToCompletion(j *job, out channel.Outcome) completion {
	c := completion{
		channel:        l.name,
		notificationID: j.row.NotificationID,
		routeID:        j.row.RouteID,
		tid:            j.row.RouteTid,
		attempt:        j.row.AttemptCount,
		leaseUntil:     *j.row.LeaseUntil,
		classification: out.Classification,
		message:        out.Message,
		hint:           out.RecoveryHint,
		maxAttempts:    j.maxAtt,
		resolvedEmail:  j.email,
		resolvedLocale: j.locale,
		providerID:     out.ProviderMessageID,
		acceptedAt:     j.row.AcceptedAt,
		provider:       j.providerName(),
		receiptKey:     receiptKey(j.provider, out),
		traceID:        j.row.TraceID,
		metricOutcome:  out.Class.String(),
	}
	switch out.Class {
	case channel.Delivered:
		c.status = "published"
	case channel.Skip:
		c.status = "skipped"
	case channel.Transient:
		if j.row.AttemptCount >= j.maxAtt {
			c.status = "dead_letter"
			c.message = fmt.Sprintf("gave up after %d attempts; last: %s", j.row.AttemptCount, out.Message)
			if c.hint == "" {
				c.hint = "every attempt failed transiently (" + out.Classification + "): check that the " + l.name +
					" destination or provider is reachable and healthy, then replay with `herald dead-letters replay`"
			}
			break
		}
		c.status = "failed"
		c.delay = l.cfg.Backoff.Delay(int(j.row.AttemptCount), out.RetryAfter)
		if l.failsOver(j) {
			// Another provider of the route's rule takes the next attempt
			// at once: the backoff waits only once every one has failed.
			c.delay = out.RetryAfter
		}
	default: // Permanent, and any class a channel invents
		c.status = "dead_letter"
		if c.hint == "" {
			c.hint = "the " + l.name + " channel refused this route permanently (" + out.Classification +
				"): fix the address or content, then replay with `herald dead-letters replay`"
		}
	}
	if c.classification == "" {
		c.classification = out.Class.String()
	}
	if c.message == "" {
		c.message = out.Class.String()
	}
	return c
}

// release gives claimed routes back, due at once with their attempt handed
// back: nothing reached the channel. It outlives shutdown's context on
// purpose, bounded by its own timeout. On error (which the caller reports)
// the routes come due again when their leases end.
func (d *Dispatcher) release(channel string, claimed []store.RouteClaimDueRow) error {
	defer func() {
		d.stats.inHand.Add(-int64(len(claimed)))
		d.metrics.InFlight(channel, -len(claimed))
	}()
	p := store.RouteReleaseLeasesParams{Now: d.now()}
	for _, r := range claimed {
		p.NotificationIds = append(p.NotificationIds, r.NotificationID)
		p.RouteIds = append(p.RouteIds, r.RouteID)
		p.Attempts = append(p.Attempts, r.AttemptCount)
		p.LeaseUntils = append(p.LeaseUntils, *r.LeaseUntil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := d.q.RouteReleaseLeases(ctx, d.pool, p)
	if err != nil {
		return fmt.Errorf("release leases of %d routes: %w", len(claimed), err)
	}
	d.stats.released.Add(n)
	d.log.Info("released leases of routes not started", "channel", channel, "routes", n)
	return nil
}
