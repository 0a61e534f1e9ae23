// Package operatortest seeds herald databases with notifications and dead
// letters for the operator's tests (package operator and the CLI's).
package operatortest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// Spec describes notifications to seed, one route each.
type Spec struct {
	// N is how many notifications. Defaults to 1.
	N int
	// Channel defaults to "email"; Producer to "shop"; Type to
	// "order.shipped".
	Channel  string
	Producer string
	Type     string
	// Dead dead-letters every route, with Classification (default
	// "permanent") and the message "rejected by test".
	Dead           bool
	Classification string
}

// Seed inserts the notifications of spec through RecordInsertMany (the
// client's path), dead-letters them if spec.Dead, and returns their routes.
func Seed(t testing.TB, db store.DBTX, spec Spec) []operator.RouteRef {
	t.Helper()
	ctx := context.Background()
	n := cmp.Or(spec.N, 1)
	channel := cmp.Or(spec.Channel, "email")
	q := store.New()
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	prefix := "ntf_" + hex.EncodeToString(tag[:])
	refs := make([]operator.RouteRef, 0, n)
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		var p store.RecordInsertManyParams
		p.IdempotencyWindowSeconds = 86400
		var nids []string
		for i := start; i < min(n, start+chunk); i++ {
			nid := fmt.Sprintf("%s_%06d", prefix, i)
			rid := channel + ":0"
			nids = append(nids, nid)
			refs = append(refs, operator.RouteRef{NotificationID: nid, RouteID: rid})
			p.NotificationIds = append(p.NotificationIds, nid)
			p.NotificationTypes = append(p.NotificationTypes, cmp.Or(spec.Type, "order.shipped"))
			p.Producers = append(p.Producers, cmp.Or(spec.Producer, "shop"))
			p.AudienceKinds = append(p.AudienceKinds, "addresses")
			p.RecipientUserIds = append(p.RecipientUserIds, []byte(`[]`))
			p.PayloadJsons = append(p.PayloadJsons, `{"email":{"subject":"Shipped","text":"On its way."}}`)
			p.IdempotencyKeys = append(p.IdempotencyKeys, nid)
			p.RequestFingerprints = append(p.RequestFingerprints, "fp")
			p.RequestIds = append(p.RequestIds, "")
			p.TraceIds = append(p.TraceIds, "")
			p.OccurredAts = append(p.OccurredAts, time.Now())
			p.ChannelLists = append(p.ChannelLists, channel)
			p.Priorities = append(p.Priorities, 0)
			p.SendAts = append(p.SendAts, time.Time{})
			p.ExpiresAts = append(p.ExpiresAts, time.Time{})
			p.CallbackUrls = append(p.CallbackUrls, "")
			p.RouteNotificationIds = append(p.RouteNotificationIds, nid)
			p.RouteIds = append(p.RouteIds, rid)
			p.RouteChannels = append(p.RouteChannels, channel)
			p.RouteRecipientRefs = append(p.RouteRecipientRefs, addressFor(channel))
			p.RouteMaxAttempts = append(p.RouteMaxAttempts, 3)
			p.RoutePriorities = append(p.RoutePriorities, 0)
			p.RouteSendAts = append(p.RouteSendAts, time.Time{})
			p.RouteExpiresAts = append(p.RouteExpiresAts, time.Time{})
			p.RouteSmsEncodings = append(p.RouteSmsEncodings, "")
			p.RouteSmsSegments = append(p.RouteSmsSegments, 0)
		}
		_, err := q.RecordInsertMany(ctx, db, p)
		require.NoError(t, err)
		if spec.Dead {
			moved, err := benchstore.New().RouteDeadLetterMany(ctx, db, benchstore.RouteDeadLetterManyParams{
				NotificationIds: nids,
				Attempts:        3,
				Classification:  cmp.Or(spec.Classification, "permanent"),
				Message:         "rejected by test",
				RecoveryHint:    "fix the address, then replay",
			})
			require.NoError(t, err)
			require.Equal(t, int64(len(nids)), moved)
		}
	}
	return refs
}

// Subscribe gives producer a callback subscription to every event (as the
// engine's login may), so that the routes Seed accepts for it from then on
// are watched: their status changes create status callbacks (schema
// 00012), notifications of channel callback whose routes Deliver moves like
// any other.
func Subscribe(t testing.TB, db store.DBTX, producer string) {
	t.Helper()
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a callback key of 32 bytes......"))
	_, err := store.New().CallbackSubscriptionSet(context.Background(), db, store.CallbackSubscriptionSetParams{
		Url: "https://" + producer + ".example.com/herald/callbacks", Events: []string{}, Secret: &secret, ForProducer: &producer,
	})
	require.NoError(t, err)
}

// addressFor returns a direct address of channel's shape (the routes
// table's CHECK holds every direct address to it).
func addressFor(channel string) string {
	switch channel {
	case "sms":
		return "+14155550123"
	case "webhook":
		return "https://hooks.example.com/orders"
	default:
		return "user@example.com"
	}
}

// Attempt is one delivery attempt as Deliver writes it: which provider took
// it and how it ended.
type Attempt struct {
	// Provider took the attempt ("sms/acme"); "" for a channel without
	// providers.
	Provider string
	// Status is "published", "failed" (due again at once) or
	// "dead_letter".
	Status string
	// Classification and Message describe a failure ("transient", "HTTP
	// 503").
	Classification string
	Message        string
	// ProviderMessageID is what the provider called a published delivery.
	ProviderMessageID string
}

// Deliver claims every due route of channel and completes each with a,
// through the dispatcher's own statements (RouteClaimDue and
// RouteCompleteMany, which appends a.Provider to routes.providers and names
// it in dead_letters.provider), and returns how many routes it completed.
func Deliver(t testing.TB, db store.DBTX, channel string, a Attempt) int {
	t.Helper()
	ctx := context.Background()
	q := store.New()
	claimed, err := q.RouteClaimDue(ctx, db, store.RouteClaimDueParams{Channel: channel, Max: 1000, LeaseSeconds: 30})
	require.NoError(t, err)
	var p store.RouteCompleteManyParams
	for _, c := range claimed {
		p.NotificationIds = append(p.NotificationIds, c.NotificationID)
		p.RouteIds = append(p.RouteIds, c.RouteID)
		p.Attempts = append(p.Attempts, c.AttemptCount)
		p.LeaseUntils = append(p.LeaseUntils, *c.LeaseUntil)
		p.Statuses = append(p.Statuses, a.Status)
		p.DelaySeconds = append(p.DelaySeconds, 0)
		p.Classifications = append(p.Classifications, a.Classification)
		p.Messages = append(p.Messages, a.Message)
		p.RecoveryHints = append(p.RecoveryHints, "check the provider, then replay")
		p.MaxAttempts = append(p.MaxAttempts, c.MaxAttempts)
		p.ResolvedEmails = append(p.ResolvedEmails, "")
		p.ResolvedLocales = append(p.ResolvedLocales, "")
		p.ProviderMessageIds = append(p.ProviderMessageIds, a.ProviderMessageID)
		p.Providers = append(p.Providers, a.Provider)
	}
	done, err := q.RouteCompleteMany(ctx, db, p)
	require.NoError(t, err)
	require.Len(t, done, len(claimed), "every claimed route completed")
	return len(done)
}
