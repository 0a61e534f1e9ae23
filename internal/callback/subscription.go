package callback

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/store"
)

// ErrNoSubscription is returned by GetSubscription when the producer has
// no callback subscription.
var ErrNoSubscription = errors.New("no callback subscription")

// Kinds of credential a subscription holds: SubscriptionInfo.Auth.
const (
	// AuthSecret: a whsec_ secret signs each callback.
	AuthSecret = "secret"
	// AuthBearerToken: a bearer token is sent with each callback.
	AuthBearerToken = "bearer_token"
)

// SubscriptionInfo is a subscription as its producer reads it back: never
// its secret or token, only which of them is set.
type SubscriptionInfo struct {
	Producer string
	URL      string
	// Events lists the events wanted; empty means all.
	Events []string
	// Auth is AuthSecret or AuthBearerToken.
	Auth      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GetSubscription returns the subscription of the producer db acts as
// (herald.callback_subscription_get), without its secret or token. It
// returns ErrNoSubscription when there is none, and the database's error
// as it is otherwise.
func GetSubscription(ctx context.Context, db store.DBTX) (*SubscriptionInfo, error) {
	r, err := store.New().CallbackSubscriptionMine(ctx, db)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoSubscription
	}
	if err != nil {
		return nil, err
	}
	events := r.Events
	if events == nil {
		events = []string{}
	}
	return &SubscriptionInfo{Producer: r.Producer, URL: r.Url, Events: events, Auth: r.Auth,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// Subscription is a producer's subscription to the status callbacks of
// its notifications' routes, as the client's CallbackSubscription.
type Subscription struct {
	// URL receives the callbacks.
	URL string
	// Events lists the events wanted; empty means all.
	Events []string
	// Secret signs every callback (a whsec_ secret); BearerToken is sent
	// instead of a signature. One of them is set.
	Secret      string
	BearerToken string
}

// SetSubscription creates or replaces the subscription of the producer db
// is logged in as, through herald.callback_subscription_set, which checks
// every field. It returns the database's error as it is: an
// invalid_parameter_value (or a check violation) naming what it refused,
// insufficient_privilege for a login that is not a producer's.
func SetSubscription(ctx context.Context, db store.DBTX, s Subscription) error {
	p := store.CallbackSubscriptionSetParams{Url: s.URL, Events: s.Events}
	if p.Events == nil {
		p.Events = []string{}
	}
	if s.Secret != "" {
		p.Secret = &s.Secret
	}
	if s.BearerToken != "" {
		p.BearerToken = &s.BearerToken
	}
	_, err := store.New().CallbackSubscriptionSet(ctx, db, p)
	return err
}

// DeleteSubscription removes the subscription of the producer db is
// logged in as and reports whether there was one. It returns the
// database's error as it is (insufficient_privilege for a login that is
// not a producer's).
func DeleteSubscription(ctx context.Context, db store.DBTX) (bool, error) {
	return store.New().CallbackSubscriptionDelete(ctx, db, nil)
}
