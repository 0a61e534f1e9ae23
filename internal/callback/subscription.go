package callback

import (
	"context"

	"github.com/heraldhq/herald/internal/store"
)

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
