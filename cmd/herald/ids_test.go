package main

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
)

// seed is operatortest.Seed with notification ids of the form herald
// assigns, UUIDs, which the CLI insists on (operatortest's own ids suit the
// operator package, which takes any text). It renames the seeded
// notifications in one statement, so that the dead letters' key to their
// routes holds at its end.
func seed(t *testing.T, b *opBundle, spec operatortest.Spec) []operator.RouteRef {
	t.Helper()
	refs := operatortest.Seed(t, b.pool, spec)
	olds := make([]string, len(refs))
	news := make([]string, len(refs))
	for i := range refs {
		olds[i] = refs[i].NotificationID
		news[i] = uuid.Must(uuid.NewV7()).String()
		refs[i].NotificationID = news[i]
	}
	_, err := b.pool.Exec(context.Background(), `
		WITH ids AS (SELECT * FROM unnest($1::text[], $2::text[]) AS ids(old, new)),
		rec AS (UPDATE herald.records r SET notification_id = ids.new FROM ids WHERE r.notification_id = ids.old),
		rt AS (UPDATE herald.routes r SET notification_id = ids.new FROM ids WHERE r.notification_id = ids.old)
		UPDATE herald.dead_letters d SET notification_id = ids.new FROM ids WHERE d.notification_id = ids.old`,
		olds, news)
	require.NoError(t, err)
	return refs
}

func TestCLI_IDArgumentsMustBeHeraldIDs(t *testing.T) {
	t.Parallel()

	const id = "0192f1c2-3b4a-7d5e-8f60-123456789abc"
	for _, s := range []string{id, "0192F1C2-3B4A-7D5E-8F60-123456789ABC"} {
		got, err := parseNotificationID(s)
		require.NoError(t, err, s)
		require.Equal(t, id, got, "ids are stored in lower case")
	}
	for _, s := range []string{"", "not-an-id", "ntf_missing", id + "x", "{" + id + "}", "urn:uuid:" + id,
		"0192f1c23b4a7d5e8f60123456789abc", "0192f1c2-3b4a-7d5e-8f60-123456789abg", " " + id} {
		_, err := parseNotificationID(s)
		require.Error(t, err, "%q", s)
		require.Equal(t, 2, exitCode(err), "%q", s)
	}

	ref, err := parseRouteRef(id + "/email:3f2a9c1b7d4e")
	require.NoError(t, err)
	require.Equal(t, operator.RouteRef{NotificationID: id, RouteID: "email:3f2a9c1b7d4e"}, ref)
	ref, err = parseRouteRef(id)
	require.NoError(t, err)
	require.Equal(t, operator.RouteRef{NotificationID: id}, ref)
	for _, s := range []string{id + "/", id + "/email", id + "/push:0", id + "/email:xyz", "not-an-id/email:0", "/email:0", id + "/email:0/x"} {
		_, err := parseRouteRef(s)
		require.Equal(t, 2, exitCode(err), "%q", s)
	}

	_, err = parseReplayID("rpl_0123456789abcdef")
	require.NoError(t, err)
	for _, s := range []string{"nope", "rpl_", "rpl_0123456789ABCDEF", "rpl_0123456789abcde", "0123456789abcdef"} {
		_, err := parseReplayID(s)
		require.Equal(t, 2, exitCode(err), "%q", s)
	}

	_, err = parseMalformedID("intake:42")
	require.NoError(t, err)
	for _, s := range []string{"42", "intake:", "intake:0", "intake:-1", "intake:x", "intake:99999999999999999999"} {
		_, err := parseMalformedID(s)
		require.Equal(t, 2, exitCode(err), "%q", s)
	}
}
