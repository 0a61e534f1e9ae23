// Package wake is how herald's processes wake each other through
// PostgreSQL: the NOTIFY topics (the names that NOTIFY and LISTEN take,
// which PostgreSQL calls channels; herald keeps that word for delivery
// channels) and the Waker that debounces the accept path's hint to the
// dispatchers. Both sides import it: the accept path and the intake worker
// send on a topic, the dispatcher and the intake worker LISTEN on one
// (through internal/pglisten).
//
// A notification is only a hint: whoever LISTENs also polls, so a lost
// notification delays work but never strands it.
package wake

// NOTIFY topics' base names. Dispatchers LISTEN on RoutesTopic, the intake
// worker on IntakeTopic, the vetter on VetTopic. The name notified and
// listened on is the base, an underscore and the database's secret
// (herald.notify_topic, which only the engine's login may run), so that a
// producer's LISTEN on a base name hears nothing; a producer's accept
// notifies through herald.routes_wake.
const (
	// RoutesTopic carries the accept path's wake-up hint: new routes may
	// be due. The payload is the delivery channel of the new routes ("sms",
	// "email", "webhook"), or "" when they span several. The hint is
	// debounced (see Waker), so a dispatcher must also poll; the hint only
	// cuts latency. One notification per statement or transaction is
	// plenty: it only wakes the dispatcher, which then claims in batches.
	RoutesTopic = "herald_routes"
	// VetTopic carries the accept path's hint when a producer's login
	// stored the routes: they wait for the engine's vetter (package vet),
	// not for a dispatcher, which the vetter wakes on RoutesTopic once it
	// has moved them into their channel's queue. The payload is
	// RoutesTopic's.
	VetTopic = "herald_vet"
	// IntakeTopic carries the SQL intake's hint, sent once per INSERT
	// statement by the trigger on herald.intake, with an empty payload.
	IntakeTopic = "herald_intake"
	// RoutingTopic carries routing_apply's notice that providers or rules
	// changed: every serve reloads them.
	RoutingTopic = "herald_routing"
)
