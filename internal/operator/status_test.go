package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
)

// detailOf returns the detail of the first event named event in st's
// timeline, failing when there is none.
func detailOf(t *testing.T, st *operator.Status, event string) string {
	t.Helper()
	for _, e := range st.Timeline {
		if e.Event == event {
			return e.Detail
		}
	}
	require.FailNow(t, "no such event", "%s in %+v", event, st.Timeline)
	return ""
}

func TestStatus_TimelineNamesProviders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	acme503 := operatortest.Attempt{Provider: "sms/acme", Status: "failed", Classification: "transient", Message: "HTTP 503"}
	status := func(ref operator.RouteRef) *operator.Status {
		t.Helper()
		st, err := b.op.Status(ctx, ref.NotificationID)
		require.NoError(t, err)
		return st
	}

	// Failed over: failed on sms/acme, published by sms/backup.
	published := operatortest.Seed(t, b.pool, operatortest.Spec{Channel: "sms"})[0]
	operatortest.Deliver(t, b.pool, "sms", acme503)
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/backup", Status: "published", ProviderMessageID: "bk-1"})
	st := status(published)
	require.Equal(t, "via sms/acme, transient: HTTP 503", detailOf(t, st, "failed"), "the failed attempt's provider, not the publisher")
	require.Equal(t, "via sms/backup, provider id bk-1", detailOf(t, st, "published"))

	// Failed on sms/acme, due again.
	failed := operatortest.Seed(t, b.pool, operatortest.Spec{Channel: "sms"})[0]
	operatortest.Deliver(t, b.pool, "sms", acme503)
	require.Equal(t, "via sms/acme, transient: HTTP 503", detailOf(t, status(failed), "failed"))

	// Then refused for good by sms/backup.
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/backup", Status: "dead_letter", Classification: "permanent", Message: "number barred"})
	require.Equal(t, "via sms/backup, permanent: number barred (hint: check the provider, then replay)", detailOf(t, status(failed), "dead_lettered"))

	// No provider took it (no_route), and a channel without providers:
	// details read as before.
	noRoute := operatortest.Seed(t, b.pool, operatortest.Spec{Channel: "sms"})[0]
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Status: "dead_letter", Classification: "no_route", Message: "no rule matches"})
	require.Equal(t, "no_route: no rule matches (hint: check the provider, then replay)", detailOf(t, status(noRoute), "dead_lettered"))
	email := operatortest.Seed(t, b.pool, operatortest.Spec{Channel: "email"})[0]
	operatortest.Deliver(t, b.pool, "email", operatortest.Attempt{Status: "published"})
	require.Empty(t, detailOf(t, status(email), "published"))
}

// setDeliveryStatus does what the receipts matcher does to a route.
func setDeliveryStatus(t *testing.T, b *testBundle, ref operator.RouteRef, status string) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `UPDATE herald.routes
		SET delivery_status = $3, delivery_status_at = now() WHERE notification_id = $1 AND route_id = $2`,
		ref.NotificationID, ref.RouteID, status)
	require.NoError(t, err)
}

// timelineDetails returns the details of the timeline's events named event.
func timelineDetails(st *operator.Status, event string) []string {
	var out []string
	for _, e := range st.Timeline {
		if e.Event == event {
			out = append(out, e.Detail)
		}
	}
	return out
}

func TestStatus_ShowsRouteCallbacks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	operatortest.Subscribe(t, b.pool, "shop")
	watched := operatortest.Seed(t, b.pool, operatortest.Spec{Channel: "sms"})[0]
	unwatched := operatortest.Seed(t, b.pool, operatortest.Spec{Channel: "email", Producer: "crm"})[0]
	status := func(ref operator.RouteRef) *operator.Status {
		t.Helper()
		st, err := b.op.Status(ctx, ref.NotificationID)
		require.NoError(t, err)
		return st
	}

	// Published: the trigger creates the published callback, which the
	// callback channel delivers (the producer was told).
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/acme", Status: "published", ProviderMessageID: "ac-1"})
	operatortest.Deliver(t, b.pool, "email", operatortest.Attempt{Status: "published"})
	require.Equal(t, 1, operatortest.Deliver(t, b.pool, "callback", operatortest.Attempt{Status: "published"}))
	// Delivered: its callback fails once.
	setDeliveryStatus(t, b, watched, "delivered")
	require.Equal(t, 1, operatortest.Deliver(t, b.pool, "callback", operatortest.Attempt{Status: "failed", Classification: "transient", Message: "HTTP 503"}))

	st := status(watched)
	require.Len(t, st.Callbacks, 2)
	pub, del := st.Callbacks[0], st.Callbacks[1]
	require.Equal(t, []string{"sms:0", "sms", "published", "published", "https://shop.example.com/herald/callbacks"},
		[]string{pub.RouteID, pub.Channel, pub.Event, pub.Status, pub.URL})
	require.Equal(t, 1, pub.Attempts)
	require.Nil(t, pub.NextAttemptAt, "final")
	require.Equal(t, []string{"sms:0", "delivered", "failed", "transient", "HTTP 503"},
		[]string{del.RouteID, del.Event, del.Status, del.LastErrorClass, del.LastError})
	require.NotNil(t, del.NextAttemptAt, "due again")
	require.NotEqual(t, pub.CallbackID, del.CallbackID)
	require.Regexp(t, `^callback:[0-9a-f]{12}$`, pub.CallbackRouteID)
	require.Equal(t, []string{
		"published: published, callback " + pub.CallbackID,
		"delivered: failed, callback " + del.CallbackID + ", transient: HTTP 503",
	}, timelineDetails(st, "callback"))
	for _, e := range st.Timeline {
		if e.Event == "callback" {
			require.Equal(t, "sms:0", e.RouteID, "the callback's line is its route's")
			require.Equal(t, "sms", e.Channel)
		}
	}

	// Then herald gives up on it.
	operatortest.Deliver(t, b.pool, "callback", operatortest.Attempt{Status: "dead_letter", Classification: "permanent", Message: "HTTP 410"})
	st = status(watched)
	require.Equal(t, "dead_letter", st.Callbacks[1].Status)
	require.Equal(t, "delivered: dead_letter, callback "+del.CallbackID+", permanent: HTTP 410", timelineDetails(st, "callback")[1])

	// A route whose producer has no subscription has none; nor has a
	// callback itself.
	require.Empty(t, status(unwatched).Callbacks)
	require.Empty(t, timelineDetails(status(unwatched), "callback"))
	require.Empty(t, status(operator.RouteRef{NotificationID: pub.CallbackID}).Callbacks)
}

func TestStats_CountsCallbacksPerProducer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, p := range []string{"shop", "crm"} {
		operatortest.Subscribe(t, b.pool, p)
	}
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 4, Channel: "sms"})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Channel: "email", Producer: "crm"})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Channel: "webhook", Producer: "ops"}) // unwatched

	// shop: four published callbacks; one is told, one fails, one is
	// dead-lettered, one waits. crm: one published callback, pending.
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Status: "published"})
	operatortest.Deliver(t, b.pool, "email", operatortest.Attempt{Status: "published"})
	operatortest.Deliver(t, b.pool, "webhook", operatortest.Attempt{Status: "published"})
	var ids []string
	rows, err := b.pool.Query(ctx, `SELECT r.notification_id FROM herald.routes r
		JOIN herald.records rec USING (notification_id) WHERE r.channel = 'callback' AND rec.producer = 'shop'
		ORDER BY r.notification_id LIMIT 3`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 3)
	for i, a := range []operatortest.Attempt{
		{Status: "published"},
		{Status: "failed", Classification: "transient", Message: "HTTP 503"},
		{Status: "dead_letter", Classification: "permanent", Message: "HTTP 410"},
	} {
		// One callback at a time: the others are not due.
		_, err = b.pool.Exec(ctx, `UPDATE herald.routes SET next_attempt_at = CASE WHEN notification_id = $1 THEN now() ELSE 'infinity' END
			WHERE channel = 'callback' AND next_attempt_at IS NOT NULL`, ids[i])
		require.NoError(t, err)
		require.Equal(t, 1, operatortest.Deliver(t, b.pool, "callback", a))
	}

	st, err := b.op.Stats(ctx, 5*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []operator.CallbackStats{
		{Producer: "crm", Created: 1, Pending: 1},
		{Producer: "shop", Created: 4, Published: 1, Failed: 1, DeadLettered: 1, Pending: 1},
	}, st.Callbacks)

	// Callbacks created before the window are not counted.
	_, err = b.pool.Exec(ctx, `UPDATE herald.records SET accepted_at = accepted_at - interval '1 hour' WHERE producer = 'crm'`)
	require.NoError(t, err)
	st, err = b.op.Stats(ctx, 5*time.Minute)
	require.NoError(t, err)
	require.Len(t, st.Callbacks, 1)
	require.Equal(t, "shop", st.Callbacks[0].Producer)
}
