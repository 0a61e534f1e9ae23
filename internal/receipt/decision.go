package receipt

import (
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/store"
)

// The matcher's decisions, apart from its statements: which route a
// receipt belongs to, what it does to the route's delivery status, and
// what becomes of the receipt. Nothing here reads or writes the database;
// Matcher.decide runs the statements around it.

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

// classify reads each receipt of rows (in arrival order) with its
// provider's settings (receipts): one without an id or a status is
// malformed; the others get the delivery status, error and resend their
// words mean. It returns a decision per row, in rows' order, the keys to
// look the routes up by, and which rows they belong to, in order.
func classify(rows []store.ReceiptClaimDueRow, receipts func(provider string) *routing.Receipts) (ds []decision, keys []string, asked []int) {
	ds = make([]decision, len(rows))
	for i, r := range rows {
		d := &ds[i]
		d.row = r
		rc := receipts(r.Provider)
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
	return ds, keys, asked
}

// decideRoutes decides the receipts ds[asked] (classified, in arrival
// order) against byKey, the routes found by their keys, as of clock. A
// receipt belongs to the route given its key most recently before it
// arrived (newestBefore); one with no route yet is tried again later
// (new) until its provider's window is over (unmatched). Per route, the
// receipts in arrival order: each that moves its status (or, for a route
// of several parts, its part's status) is matched (routeState.apply); the
// others change nothing and are duplicates, unless young enough
// (DuplicateSettle) that a newer route with their id may not be visible
// yet (new). It returns the routes the receipts belong to, in the order
// first met.
func decideRoutes(ds []decision, asked []int, byKey map[string][]keyedRoute, clock time.Time,
	receipts func(provider string) *routing.Receipts) []*routeState {
	states := map[string]*routeState{}
	var order []*routeState
	for _, i := range asked {
		d := &ds[i]
		rt, ok := newestBefore(byKey[key(d.row.Provider, d.row.ProviderMessageID)], d.row.ReceivedAt)
		if !ok {
			window := receipts(d.row.Provider).WindowOrDefault()
			if clock.Sub(d.row.ReceivedAt) >= window {
				d.state = "unmatched"
			} else {
				d.state, d.retry = "new", backoff(d.row.MatchAttempts)
			}
			continue
		}
		d.notificationID, d.route, d.attempt = rt.NotificationID, rt.RouteID, rt.AttemptCount
		rk := routeKey(rt.NotificationID, rt.RouteID)
		st := states[rk]
		if st == nil {
			st = newRouteState(rt)
			states[rk] = st
			order = append(order, st)
		}
		if st.apply(ds, i, rt.part) {
			continue
		}
		if clock.Sub(d.row.ReceivedAt) < DuplicateSettle {
			d.state, d.retry = "new", backoff(d.row.MatchAttempts)
			continue
		}
		d.state = "duplicate"
	}
	return order
}

// newRouteState is rt's delivery status as read, before any receipt of
// the batch.
func newRouteState(rt keyedRoute) *routeState {
	st := &routeState{nid: rt.NotificationID, rid: rt.RouteID, status: rt.DeliveryStatus}
	if parts := len(rt.ReceiptParts); parts > 1 {
		st.oldParts = rt.PartStatuses
		st.parts = make([]string, parts)
		if old := strings.Split(rt.PartStatuses, ","); len(old) == len(st.parts) {
			copy(st.parts, old)
		}
	}
	return st
}

// apply decides ds[i], a receipt about part of st's route (0 for a route
// of one part), and reports whether it is matched: whether it sets a
// status where there was none, or a final one where there was unknown
// (for a route of one part, its status; for a route of several, its
// part's, the route's status being PartsStatus of the parts). A route of
// one part keeps one matched receipt: a final status supersedes an
// unknown one matched earlier in the batch, which becomes a duplicate.
// False leaves ds[i]'s state to the caller: it changes nothing.
func (st *routeState) apply(ds []decision, i, part int) bool {
	d := &ds[i]
	if st.parts == nil {
		cur := st.status
		if cur != nil && (*cur != routing.DeliveryUnknown || d.status == routing.DeliveryUnknown) {
			return false
		}
		s := d.status
		st.status = &s
		if len(st.matched) > 0 {
			ds[st.matched[0]].state = "duplicate" // superseded in this batch by a final status
		}
		st.write, st.matched, st.statusChanged = d, []int{i}, true
		d.state = "matched"
		return true
	}
	if part < 0 || part >= len(st.parts) ||
		(st.parts[part] != "" && (st.parts[part] != routing.DeliveryUnknown || d.status == routing.DeliveryUnknown)) {
		return false
	}
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
	return true
}

// statusWrites is the one statement's parameters that write the routes
// of order a receipt changed: each route's new status and parts, with the
// error, permanence and resend of the receipt that decided it. A route is
// sent back for another attempt only when its status changed in this
// batch to its deciding receipt's own status, and that receipt resends.
func statusWrites(order []*routeState, now *time.Time) store.RouteDeliveryStatusSetManyParams {
	set := store.RouteDeliveryStatusSetManyParams{Now: now}
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
	return set
}

// markParams is the statement's parameters that record ds, the decisions
// on receipts claimed from the inbox, on their rows.
func markParams(ds []decision, now *time.Time) store.ReceiptMarkManyParams {
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
	return mark
}

// insertDecidedParams is the statement's parameters that store receipts
// rs, arrived at at, with ds, what was decided for each (in rs' order).
func insertDecidedParams(rs []Receipt, ds []decision, at time.Time) store.ReceiptInsertDecidedManyParams {
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
	return p
}

// settle finishes ds once the statusWrites statement has run; changed
// holds the routes it changed, by routeKey. A route it did not change
// was changed first by another matcher: its receipts are duplicates, or,
// for a route of several parts (whose parts may still be news), tried
// again at once (new). A receipt left new belongs to no route yet, and
// only matched and duplicate receipts keep the attempt they were about.
func settle(ds []decision, order []*routeState, changed map[string]store.RouteDeliveryStatusSetManyRow) {
	for _, st := range order {
		if st.write == nil {
			continue
		}
		if _, ok := changed[routeKey(st.nid, st.rid)]; ok {
			continue
		}
		for _, i := range st.matched {
			if st.parts != nil {
				ds[i].state, ds[i].retry = "new", 0
			} else {
				ds[i].state = "duplicate"
			}
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
}

// routeKey names a route in a batch's maps.
func routeKey(notificationID, routeID string) string { return notificationID + "\x00" + routeID }
