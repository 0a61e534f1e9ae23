package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
)

func TestStatusCmd_ShowsRecordRoutesTimeline(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	live := seed(t, b, operatortest.Spec{N: 1, Channel: "sms", Type: "otp"})
	dead := seed(t, b, operatortest.Spec{N: 1, Dead: true})
	_, err := store.New().RouteCancelByNotification(context.Background(), b.pool, store.RouteCancelByNotificationParams{NotificationID: live[0].NotificationID, Actor: "test"})
	require.NoError(t, err)

	var st operator.Status
	runJSON(t, b.env, &st, "status", live[0].NotificationID)
	require.Equal(t, "otp", st.Record.NotificationType)
	require.Equal(t, []string{"sms"}, st.Record.Channels)
	require.Len(t, st.Routes, 1)
	require.Equal(t, "canceled", st.Routes[0].Status)
	var events []string
	for _, e := range st.Timeline {
		events = append(events, e.Event)
	}
	// The cancel statement writes its own audit row, which the timeline shows.
	require.Equal(t, []string{"accepted", "routed", "canceled", "cancel"}, events)

	runJSON(t, b.env, &st, "status", dead[0].NotificationID)
	require.Equal(t, "dead_letter", st.Routes[0].Status)
	require.Equal(t, "dead_lettered", st.Timeline[len(st.Timeline)-1].Event)
	require.Contains(t, st.Timeline[len(st.Timeline)-1].Detail, "hint: fix the address")

	out, _, err := run(t, b.env, "status", dead[0].NotificationID)
	require.NoError(t, err)
	require.Contains(t, out, "timeline:")
	require.Contains(t, out, "dead_lettered")

	_, _, err = run(t, b.env, "status", "0192f1c2-3b4a-7d5e-8f60-123456789abc")
	require.ErrorIs(t, err, operator.ErrNotFound)
	_, _, err = run(t, b.env, "status", "ntf_missing")
	require.Equal(t, 2, exitCode(err), "not a notification id")
	_, _, err = run(t, b.env, "status", dead[0].NotificationID, dead[0].NotificationID)
	require.Equal(t, 2, exitCode(err), "one notification at a time")
	out, _, err = run(t, b.env, "status")
	require.NoError(t, err, "without an id: the serve processes")
	require.Contains(t, out, "no serve process has recorded itself")
}

func TestStatusCmd_ShowsProvidersPerRoute(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	failover := seed(t, b, operatortest.Spec{Channel: "sms"})[0]
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/acme", Status: "failed", Classification: "transient", Message: "HTTP 503"})
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/backup", Status: "published", ProviderMessageID: "bk-1"})
	plain := seed(t, b, operatortest.Spec{Channel: "email"})[0]

	var st operator.Status
	runJSON(t, b.env, &st, "status", failover.NotificationID)
	require.Equal(t, []string{"sms/acme", "sms/backup"}, st.Routes[0].Providers)
	out, _, err := run(t, b.env, "status", failover.NotificationID)
	require.NoError(t, err)
	require.Regexp(t, `ROUTE\s+CHANNEL\s+STATUS\s+ATTEMPTS\s+PROVIDERS\s+DELIVERY\s+NEXT ATTEMPT`, out)
	require.Regexp(t, `sms:0\s+sms\s+published\s+2/3\s+sms/acme,sms/backup\s+-`, out)
	require.Contains(t, out, "via sms/acme, transient: HTTP 503", "the timeline names the failed attempt's provider")
	require.Contains(t, out, "via sms/backup, provider id bk-1")

	out, _, err = run(t, b.env, "status", plain.NotificationID, "--json")
	require.NoError(t, err)
	require.Contains(t, out, `"providers": []`, "none yet, and an array for scripts")
	out, _, err = run(t, b.env, "status", plain.NotificationID)
	require.NoError(t, err)
	require.Regexp(t, `email:0\s+email\s+pending\s+0/3\s+-\s+`, out)
}

func TestStatusCmd_ShowsRouteCallbacks(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	operatortest.Subscribe(t, b.pool, "shop")
	ref := seed(t, b, operatortest.Spec{Channel: "sms"})[0]
	plain := seed(t, b, operatortest.Spec{Channel: "email", Producer: "crm"})[0]
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/acme", Status: "published"})
	operatortest.Deliver(t, b.pool, "callback", operatortest.Attempt{Status: "failed", Classification: "transient", Message: "HTTP 503"})

	var st operator.Status
	runJSON(t, b.env, &st, "status", ref.NotificationID)
	require.Len(t, st.Callbacks, 1)
	cb := st.Callbacks[0]
	require.Equal(t, []string{"sms:0", "published", "failed", "transient"}, []string{cb.RouteID, cb.Event, cb.Status, cb.LastErrorClass})
	require.Equal(t, 1, cb.Attempts)

	out, _, err := run(t, b.env, "status", ref.NotificationID)
	require.NoError(t, err)
	require.Regexp(t, `\ncallbacks:\nROUTE\s+EVENT\s+STATUS\s+ATTEMPTS\s+NEXT ATTEMPT\s+CALLBACK\s+LAST ERROR\n`, out)
	require.Regexp(t, `sms:0\s+published\s+failed\s+1/default\s+\S+ \S+Z\s+`+cb.CallbackID+`\s+transient: HTTP 503\n`, out)
	require.Regexp(t, `sms:0\s+callback\s+1\s+published: failed, callback `+cb.CallbackID, out, "the timeline's line")

	// Without callbacks, no callbacks part (JSON: an empty array).
	out, _, err = run(t, b.env, "status", plain.NotificationID)
	require.NoError(t, err)
	require.NotContains(t, out, "callbacks:")
	out, _, err = run(t, b.env, "status", plain.NotificationID, "--json")
	require.NoError(t, err)
	require.Contains(t, out, `"callbacks": []`)
}
