package callback

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
)

// maxOrderWait bounds the Retry-After of an order wait.
const maxOrderWait = time.Minute

// Credentials are what a callback is authenticated with: its producer's
// subscription's secret (signed) or bearer token. Prepare returns them
// with Secret set, or else BearerToken.
type Credentials struct {
	// Secret is the whsec_ secret to sign with, as stored (the signer
	// parses it).
	Secret *string
	// BearerToken is sent as "Authorization: Bearer <token>".
	BearerToken *string
}

// Prepare reads what an attempt of callback msg needs, through db (the
// engine's login: the only one that may read secrets), and decides
// whether it may be posted now. It returns the credentials to
// authenticate it with and true; or false and the outcome that ends the
// attempt unsent: Permanent ClassLookup when the callback's record is
// gone, Transient ClassLookup when the subscription cannot be read,
// Transient ClassOrder with a Retry-After while an earlier callback of
// the same route is still to be delivered (see orderWait), and Permanent
// ClassNoSubscription when the producer has no subscription.
func Prepare(ctx context.Context, db store.DBTX, msg *channel.Message, orderRetry time.Duration) (Credentials, channel.Outcome, bool) {
	sub, err := store.New().CallbackSubscriptionGetForDelivery(ctx, db, msg.NotificationID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Credentials{}, channel.Outcome{Class: channel.Permanent, Classification: ClassLookup,
			Message: "the callback's record is gone", RecoveryHint: HintGone}, false
	case err != nil:
		if ctx.Err() != nil {
			return Credentials{}, channel.NetworkOutcome(ctx, err, ""), false
		}
		return Credentials{}, channel.Outcome{Class: channel.Transient, Classification: ClassLookup,
			Message: "could not read the producer's callback subscription"}, false
	}
	if sub.EarlierWaiting > 0 {
		return Credentials{}, channel.Outcome{Class: channel.Transient, Classification: ClassOrder,
			Message:    strconv.FormatInt(sub.EarlierWaiting, 10) + " earlier callback(s) of the same route not delivered yet",
			RetryAfter: orderWait(sub.EarlierWaitSeconds, orderRetry)}, false
	}
	switch {
	case sub.Secret != nil:
		return Credentials{Secret: sub.Secret}, channel.Outcome{}, true
	case sub.BearerToken != nil:
		return Credentials{BearerToken: sub.BearerToken}, channel.Outcome{}, true
	}
	return Credentials{}, channel.Outcome{Class: channel.Permanent, Classification: ClassNoSubscription,
		Message:      "producer " + sub.Producer + " has no callback subscription to sign its callbacks with",
		RecoveryHint: HintNoSubscription}, false
}

// orderWait is how long a callback held back by an earlier one of its
// route waits: until the earlier one's next attempt (earlierSeconds from
// now; zero while it is being delivered) and half orderRetry more, at
// least orderRetry, at most maxOrderWait.
func orderWait(earlierSeconds float64, orderRetry time.Duration) time.Duration {
	wait := time.Duration(earlierSeconds * float64(time.Second))
	return min(max(wait+orderRetry/2, orderRetry), maxOrderWait)
}

// BadSecret is the outcome of a callback whose subscription's secret the
// signer could not parse (err says why): Permanent, ClassBadSecret.
func BadSecret(err error) channel.Outcome {
	return channel.Outcome{Class: channel.Permanent, Classification: ClassBadSecret,
		Message: "the producer's callback secret is unusable: " + err.Error(), RecoveryHint: HintBadSecret}
}

// EndpointRefused adds HintEndpoint to a Permanent outcome of the POST;
// any other outcome it returns as it is.
func EndpointRefused(out channel.Outcome) channel.Outcome {
	if out.Class == channel.Permanent {
		out.RecoveryHint = HintEndpoint + " (" + out.Classification + ")"
	}
	return out
}
