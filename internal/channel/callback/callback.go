// Package callback delivers herald's status callbacks to producers: the
// routes of delivery channel "callback", which the database creates when a
// watched route changes status (migration 00012's trigger), one per route
// and event. Each is POSTed to the producer's URL (the intent's
// callback_url, or its subscription's), authenticated with the producer's
// subscription: signed per Standard Webhooks with its whsec_ secret
// (webhook-id, webhook-timestamp, webhook-signature, as the webhook channel
// signs), or with "Authorization: Bearer <token>". The body is the payload
// the trigger wrote:
//
//	{"type": "route.delivered", "timestamp": "...", "data": {"event": "delivered",
//	 "notification_id": "...", "route_id": "sms:...", "channel": "sms", ...}}
//
// Connections pass the webhook channel's dial guard (webhook.Sender):
// private and reserved addresses are refused unless AllowPrivate is set.
//
// Order per route: a callback is not posted while an earlier callback of
// the same route is still to be delivered (pending, claimed or failed), so
// a producer never gets "delivered" before "published". Such an attempt
// ends Transient with classification callback_order and a Retry-After of
// when the earlier one is next tried; it counts against the callback's
// attempt budget like any transient failure, and an earlier callback that
// is dead-lettered no longer holds the later ones back.
package callback

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/store"
)

// Classifications of the callback channel's own outcomes.
const (
	// ClassOrder: an earlier callback of the same route is not delivered
	// yet (Transient, retried after it).
	ClassOrder = "callback_order"
	// ClassNoSubscription: the producer has no subscription, so there is
	// no secret or token to authenticate with (Permanent).
	ClassNoSubscription = "callback_no_subscription"
	// ClassLookup: the subscription could not be read (Transient).
	ClassLookup = "callback_lookup"
	// ClassBadSecret: the subscription's secret does not parse (Permanent).
	ClassBadSecret = "callback_bad_secret"
)

// Defaults of Config.
const (
	// DefaultOrderRetry is Config.OrderRetry's default.
	DefaultOrderRetry = time.Second
	// DefaultUserAgent is Config.UserAgent's default.
	DefaultUserAgent = "herald-callback/1"
	// maxOrderWait bounds the Retry-After of an order wait.
	maxOrderWait = time.Minute
)

// Config configures a callback Deliverer.
type Config struct {
	// Pool reads the producers' subscriptions (their secrets) and the
	// earlier callbacks of a route. It must be the engine's login, the only
	// one that may read secrets. Required.
	Pool *pgxpool.Pool
	// Timeout bounds one POST. Default webhook.DefaultTimeout.
	Timeout time.Duration
	// AllowPrivate lets callbacks reach loopback, private and reserved
	// addresses (development, tests). Off by default.
	AllowPrivate bool
	// AllowHosts lists hosts exempt from the private-address guard.
	AllowHosts []string
	// DenyCIDRs lists ranges never to connect to.
	DenyCIDRs []string
	// UserAgent is sent with every request. Default "herald-callback/1".
	UserAgent string
	// OrderRetry is the shortest wait after an attempt held back by an
	// earlier callback of its route. Default 1s.
	OrderRetry time.Duration
	// Logger receives a debug record per attempt, destination masked.
	// Default: discard.
	Logger *slog.Logger
}

// Deliverer delivers callbacks. It is safe for concurrent use.
type Deliverer struct {
	pool       *pgxpool.Pool
	sender     *webhook.Sender
	q          *store.Queries
	orderRetry time.Duration
	logger     *slog.Logger
	now        func() time.Time
}

// New returns a callback Deliverer, or an error naming the Config field
// that is wrong.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Pool == nil {
		return nil, errors.New("callback config: Pool is required")
	}
	if cfg.OrderRetry < 0 {
		return nil, errors.New("callback config: OrderRetry must not be negative")
	}
	sender, err := webhook.NewSender(webhook.SenderConfig{
		Timeout:      cfg.Timeout,
		AllowPrivate: cfg.AllowPrivate,
		AllowHosts:   cfg.AllowHosts,
		DenyCIDRs:    cfg.DenyCIDRs,
		UserAgent:    cmp.Or(cfg.UserAgent, DefaultUserAgent),
	})
	if err != nil {
		return nil, fmt.Errorf("callback config: %w", err)
	}
	return &Deliverer{
		pool:       cfg.Pool,
		sender:     sender,
		q:          store.New(),
		orderRetry: cmp.Or(cfg.OrderRetry, DefaultOrderRetry),
		logger:     cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		now:        time.Now,
	}, nil
}

// Close releases idle connections. The Deliverer stays usable; the pool is
// the caller's.
func (d *Deliverer) Close() error { return d.sender.Close() }

// Deliver posts the callback msg to msg.Address and classifies the result.
// It never returns an outcome quoting the full URL, a secret or the payload.
func (d *Deliverer) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	return channel.Attempt(ctx, d.logger, channel.Callback, msg, d.deliver)
}

func (d *Deliverer) deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	target, refused, ok := webhook.ParseTarget(msg.Address)
	if !ok {
		refused.RecoveryHint = hintEndpoint
		return refused
	}
	if len(msg.Content) == 0 {
		return channel.BadContent(channel.Callback, nil)
	}
	sub, err := d.q.CallbackSubscriptionGetForDelivery(ctx, d.pool, msg.NotificationID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return channel.Outcome{Class: channel.Permanent, Classification: ClassLookup,
			Message:      "the callback's record is gone",
			RecoveryHint: "nothing to replay: retention removed the callback's record"}
	case err != nil:
		if ctx.Err() != nil {
			return channel.NetworkOutcome(ctx, err, "")
		}
		return channel.Outcome{Class: channel.Transient, Classification: ClassLookup,
			Message: "could not read the producer's callback subscription"}
	}
	if sub.EarlierWaiting > 0 {
		wait := time.Duration(sub.EarlierWaitSeconds * float64(time.Second))
		wait = min(max(wait+d.orderRetry/2, d.orderRetry), maxOrderWait)
		return channel.Outcome{Class: channel.Transient, Classification: ClassOrder,
			Message:    strconv.FormatInt(sub.EarlierWaiting, 10) + " earlier callback(s) of the same route not delivered yet",
			RetryAfter: wait}
	}

	h := http.Header{}
	switch {
	case sub.Secret != nil:
		key, err := webhook.ParseSecret(*sub.Secret)
		if err != nil {
			return channel.Outcome{Class: channel.Permanent, Classification: ClassBadSecret,
				Message: "the producer's callback secret is unusable: " + err.Error(),
				RecoveryHint: "the producer sets a new secret with herald.callback_subscription_set, " +
					"then replay with `herald dead-letters replay --channel callback`"}
		}
		id := webhook.MessageID(msg.NotificationID, msg.RouteID)
		ts := d.now().Unix()
		h.Set(webhook.HeaderID, id)
		h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
		h.Set(webhook.HeaderSignature, webhook.Sign([][]byte{key}, id, ts, msg.Content))
	case sub.BearerToken != nil:
		h.Set("Authorization", "Bearer "+*sub.BearerToken)
	default:
		return channel.Outcome{Class: channel.Permanent, Classification: ClassNoSubscription,
			Message: "producer " + sub.Producer + " has no callback subscription to sign its callbacks with",
			RecoveryHint: "the producer subscribes (herald.callback_subscription_set, with a secret or a bearer token; " +
				"an intent's callback_url is signed with it), then replay with `herald dead-letters replay --channel callback`"}
	}
	out := d.sender.Post(ctx, target, h, msg.Content)
	if out.Class == channel.Permanent {
		out.RecoveryHint = hintEndpoint + " (" + out.Classification + ")"
	}
	return out
}

// hintEndpoint is the hint of a callback the producer's endpoint refused.
const hintEndpoint = "the producer's callback endpoint refused it: the producer fixes the endpoint, " +
	"or its URL with herald.callback_subscription_set, then replay with `herald dead-letters replay --channel callback`"
