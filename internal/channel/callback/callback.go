// Package callback is the delivery channel of herald's status callbacks
// to producers: the routes of delivery channel "callback". What a callback
// is, who gets it, with which credentials, and in which order is package
// internal/callback's; this channel asks it (callback.Prepare) before each
// attempt, then signs the payload per Standard Webhooks with the
// producer's whsec_ secret (webhook-id, webhook-timestamp,
// webhook-signature, as the webhook channel signs), or sends
// "Authorization: Bearer <token>", and POSTs it to the producer's URL (the
// intent's callback_url, or its subscription's).
//
// Connections pass the webhook channel's dial guard (webhook.Sender):
// private and reserved addresses are refused unless AllowPrivate is set.
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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/callback"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/webhook"
)

// Defaults of Config.
const (
	// DefaultOrderRetry is Config.OrderRetry's default.
	DefaultOrderRetry = time.Second
	// DefaultUserAgent is Config.UserAgent's default.
	DefaultUserAgent = "herald-callback/1"
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
		refused.RecoveryHint = callback.HintEndpoint
		return refused
	}
	if len(msg.Content) == 0 {
		return channel.BadContent(channel.Callback, nil)
	}
	creds, out, ok := callback.Prepare(ctx, d.pool, msg, d.orderRetry)
	if !ok {
		return out
	}
	h, err := d.authenticate(creds, msg)
	if err != nil {
		return callback.BadSecret(err)
	}
	return callback.EndpointRefused(d.sender.Post(ctx, target, h, msg.Content))
}

// authenticate returns the headers that authenticate msg with creds: a
// Standard Webhooks signature with the secret (its webhook-id derived
// from the callback's notification and route, as the webhook channel's),
// or the bearer token. It returns the error of a secret that does not
// parse.
func (d *Deliverer) authenticate(creds callback.Credentials, msg *channel.Message) (http.Header, error) {
	h := http.Header{}
	if creds.Secret == nil {
		h.Set("Authorization", "Bearer "+*creds.BearerToken)
		return h, nil
	}
	key, err := webhook.ParseSecret(*creds.Secret)
	if err != nil {
		return nil, err
	}
	id := webhook.MessageID(msg.NotificationID, msg.RouteID)
	ts := d.now().Unix()
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(webhook.HeaderSignature, webhook.Sign([][]byte{key}, id, ts, msg.Content))
	return h, nil
}
