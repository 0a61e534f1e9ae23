// Package callback owns herald's status callbacks to producers: the
// notifications herald sends through its own engine when a watched route
// changes status. The others call it: the client (a producer's
// subscription) and the callback channel (internal/channel/callback, which
// signs and posts), which the engine wires in (internal/engine's
// Callbacks).
//
// # Subscription
//
// A producer subscribes (SetSubscription) with a URL, the events it wants
// and a whsec_ secret or a bearer token; an intent may name its own
// callback_url, authenticated with the same subscription, and is refused
// at submit (callback_url_needs_subscription) when its producer has none.
// GetSubscription reads it back without its secret or token.
//
// # Enqueue and payload
//
// When a watched route changes status, the database (migration 00012's
// trigger, herald.routes_callback_enqueue) creates one notification on
// delivery channel "callback" per route and event, in the same
// transaction, with the payload:
//
//	{"type": "route.delivered", "timestamp": "...", "data": {"event": "delivered",
//	 "notification_id": "...", "route_id": "sms:...", "channel": "sms", ...,
//	 "metadata": {"order_id": "9"}}}
//
// data.metadata is the intent's metadata as the producer gave it, null
// when it gave none.
//
// # Delivery
//
// The engine claims, retries and dead-letters a callback like any route.
// Before each attempt, Prepare reads what the attempt needs (the
// subscription's credentials, whether an earlier callback of the same
// route is still to be delivered) and decides whether it may be posted;
// the callback channel then signs it per Standard Webhooks with the secret
// (webhook-id, webhook-timestamp, webhook-signature, as the webhook
// channel signs), or sends "Authorization: Bearer <token>", and posts it.
// The signing and the connection are the webhook channel's, which the
// client may not import: this package stays free of channel adapters.
//
// # Order per route
//
// A callback is not posted while an earlier callback of the same route is
// still to be delivered (pending, claimed or failed), so a producer never
// gets "delivered" before "published". Such an attempt ends Transient with
// classification ClassOrder and a Retry-After of when the earlier one is
// next tried; it counts against the callback's attempt budget like any
// transient failure, and an earlier callback that is dead-lettered no
// longer holds the later ones back.
package callback

// Events, the values of a subscription's events and of a callback's
// "event" field (the trigger writes them).
const (
	// EventPublished: the route's channel or provider accepted it.
	EventPublished = "published"
	// EventDelivered: a delivery receipt says it arrived.
	EventDelivered = "delivered"
	// EventUndelivered: a delivery receipt says it did not arrive.
	EventUndelivered = "undelivered"
	// EventDeadLettered: herald gave up on the route.
	EventDeadLettered = "dead_lettered"
	// EventSkipped: no address, or the user opted out.
	EventSkipped = "skipped"
	// EventCanceled: the route was canceled before delivery.
	EventCanceled = "canceled"
	// EventExpired: the intent expired before delivery, or a receipt says
	// the message expired at the provider.
	EventExpired = "expired"
)

// Classifications of a callback attempt's own outcomes, beside those of
// the POST.
const (
	// ClassOrder: an earlier callback of the same route is not delivered
	// yet (Transient, retried after it).
	ClassOrder = "callback_order"
	// ClassNoSubscription: the producer has no subscription, so there is
	// no secret or token to authenticate with (Permanent).
	ClassNoSubscription = "callback_no_subscription"
	// ClassLookup: the subscription could not be read (Transient), or the
	// callback's record is gone (Permanent).
	ClassLookup = "callback_lookup"
	// ClassBadSecret: the subscription's secret does not parse (Permanent).
	ClassBadSecret = "callback_bad_secret"
)

// Recovery hints of the callback outcomes that dead-letter at once.
const (
	// HintEndpoint is the hint of a callback the producer's endpoint
	// refused.
	HintEndpoint = "the producer's callback endpoint refused it: the producer fixes the endpoint, " +
		"or its URL with herald.callback_subscription_set, then replay with `herald dead-letters replay --channel callback`"
	// HintBadSecret is the hint of a callback whose secret does not parse.
	HintBadSecret = "the producer sets a new secret with herald.callback_subscription_set, " +
		"then replay with `herald dead-letters replay --channel callback`"
	// HintNoSubscription is the hint of a callback with nothing to
	// authenticate it with.
	HintNoSubscription = "the producer subscribes (herald.callback_subscription_set, with a secret or a bearer token; " +
		"an intent's callback_url is signed with it), then replay with `herald dead-letters replay --channel callback`"
	// HintGone is the hint of a callback whose record retention removed.
	HintGone = "nothing to replay: retention removed the callback's record"
)
