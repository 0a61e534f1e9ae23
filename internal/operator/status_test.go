package operator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/operator/operatortest"
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

func TestStatusTimelineNamesTheProviderOfPublishedFailedAndDeadLetteredRoutes(t *testing.T) {
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
