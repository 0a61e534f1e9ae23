package accept

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

// plainIntent is an intent that leaves every optional field at its
// default: one webhook address, no users, ids, callback, campaign,
// metadata or schedule.
func plainIntent(key string) *intake.Intent {
	in := validIntent()
	in.IdempotencyKey = key
	in.Audience = intake.Audience{Webhook: []string{"https://hooks.example.com/plain"}}
	in.Channels = []string{"webhook"}
	in.Content.SMS, in.Content.Email = nil, nil
	return in
}

// A batch sends as NULL each optional array its every intent leaves at the
// default, and the insert reads NULL as the default: a plain intent is
// stored the same whether its batch is all plain (the arrays NULL) or
// mixed with one that sets everything (the arrays sent whole), and the
// other intent keeps its values.
func TestAccept_DefaultArraysSentAsNullStoreDefaults(t *testing.T) {
	t.Parallel()
	at := testNow.Add(time.Hour)
	rich := validIntent()
	rich.IdempotencyKey = "rich"
	rich.RequestID, rich.TraceID = "req-1", "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
	rich.Campaign = "spring"
	rich.Metadata = map[string]string{"order": "9"}
	rich.SendAt, rich.ExpiresAt = at, at.Add(time.Hour)

	plain := []*intake.Validated{mustValidate(t, plainIntent("plain-1")), mustValidate(t, plainIntent("plain-2"))}
	a, err := insertParams(plain, []int{0, 1}, Params{}, "")
	require.NoError(t, err)
	require.Nil(t, a.RequestIds)
	require.Nil(t, a.SendAts)
	require.Nil(t, a.Campaigns)
	require.Nil(t, a.RecipientUserIds)
	require.Nil(t, a.RouteSmsEncodings)
	mixed := []*intake.Validated{mustValidate(t, plainIntent("plain-3")), mustValidate(t, rich)}
	a, err = insertParams(mixed, []int{0, 1}, Params{}, "")
	require.NoError(t, err)
	require.Len(t, a.RequestIds, 2)
	require.Len(t, a.SendAts, 2)
	require.Len(t, a.RecipientUserIds, 2)
	require.Len(t, a.RouteSmsSegments, len(a.RouteIds))

	for _, o := range []*Optimism{nil, new(Optimism)} { // RecordInsertMany, then RecordInsertManyFresh
		ctx := context.Background()
		pool := pgtemp.NewPool(t)
		for _, batch := range [][]*intake.Validated{plain, mixed} {
			out, err := Accept(ctx, pool, batch, Params{Optimism: o})
			require.NoError(t, err)
			for _, x := range out {
				require.False(t, x.Duplicate)
			}
		}
		type stored struct {
			Key, RequestID, TraceID, CallbackURL, Users string
			Campaign, Metadata                          *string
			SendAt, ExpiresAt                           *time.Time
			Encodings                                   string
			Segments                                    int
		}
		// Reads the rows back (test-only SQL).
		rows, err := pool.Query(ctx, `SELECT r.idempotency_key, r.request_id, r.trace_id, r.callback_url,
				r.recipient_user_ids::text, r.campaign, r.metadata::text, r.send_at, r.expires_at,
				string_agg(rt.sms_encoding, ',' ORDER BY rt.route_id), sum(rt.sms_segments)::int
			FROM herald.records r JOIN herald.routes rt USING (notification_id)
			GROUP BY r.notification_id ORDER BY r.idempotency_key`)
		require.NoError(t, err)
		var got []stored
		for rows.Next() {
			var s stored
			require.NoError(t, rows.Scan(&s.Key, &s.RequestID, &s.TraceID, &s.CallbackURL, &s.Users,
				&s.Campaign, &s.Metadata, &s.SendAt, &s.ExpiresAt, &s.Encodings, &s.Segments))
			got = append(got, s)
		}
		require.NoError(t, rows.Err())
		require.Len(t, got, 4)
		for _, s := range got[:3] {
			require.Equal(t, stored{Key: s.Key, Users: "[]"}, s, "a plain intent stores the defaults")
		}
		r := got[3]
		require.Equal(t, "rich", r.Key)
		require.Equal(t, "req-1", r.RequestID)
		require.Equal(t, rich.TraceID, r.TraceID)
		require.Equal(t, `["42"]`, r.Users)
		require.Equal(t, "spring", *r.Campaign)
		require.JSONEq(t, `{"order":"9"}`, *r.Metadata)
		require.True(t, at.Equal(*r.SendAt))
		require.True(t, at.Add(time.Hour).Equal(*r.ExpiresAt))
		require.Contains(t, r.Encodings, "gsm7")
		require.Positive(t, r.Segments)
	}
}
