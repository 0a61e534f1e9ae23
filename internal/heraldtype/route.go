package heraldtype

// RouteStatus is the state of a route, one (channel, recipient) delivery
// of a notification: Route.Status, stored in routes.status.
type RouteStatus string

// Route states. Published, dead_letter, skipped and canceled are terminal.
const (
	// RouteStatusPending: waiting to be claimed, at its next attempt time
	// (Route.NextAttemptAt).
	RouteStatusPending RouteStatus = "pending"
	// RouteStatusClaimed: a dispatcher is delivering it; its lease ends at
	// its next attempt time.
	RouteStatusClaimed RouteStatus = "claimed"
	// RouteStatusFailed: the last attempt failed transiently; it is retried
	// at its next attempt time.
	RouteStatusFailed RouteStatus = "failed"
	// RouteStatusPublished: delivered (terminal).
	RouteStatusPublished RouteStatus = "published"
	// RouteStatusDeadLetter: undeliverable or out of attempts; kept in
	// herald.dead_letters for an operator (terminal until replayed).
	RouteStatusDeadLetter RouteStatus = "dead_letter"
	// RouteStatusSkipped: no address for the channel, or the user opted out
	// (terminal).
	RouteStatusSkipped RouteStatus = "skipped"
	// RouteStatusCanceled: canceled before delivery (terminal).
	RouteStatusCanceled RouteStatus = "canceled"
)
