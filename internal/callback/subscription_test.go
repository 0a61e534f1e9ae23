package callback

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

// testSecret is a whsec_ secret of 24 bytes.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestGetSubscription_SaysWhichCredentialIsSetNeverWhatItIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	_, err := GetSubscription(ctx, pool)
	require.ErrorIs(t, err, ErrNoSubscription)

	require.NoError(t, SetSubscription(ctx, pool, Subscription{URL: "https://p.example.com/cb", Secret: testSecret,
		Events: []string{"published"}}))
	got, err := GetSubscription(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, "https://p.example.com/cb", got.URL)
	require.Equal(t, []string{"published"}, got.Events)
	require.Equal(t, AuthSecret, got.Auth)

	require.NoError(t, SetSubscription(ctx, pool, Subscription{URL: "https://p.example.com/cb", BearerToken: "tok_0123456789abcdef"}))
	got, err = GetSubscription(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, AuthBearerToken, got.Auth)
	require.Empty(t, got.Events)

	deleted, err := DeleteSubscription(ctx, pool)
	require.NoError(t, err)
	require.True(t, deleted)
	_, err = GetSubscription(ctx, pool)
	require.ErrorIs(t, err, ErrNoSubscription)
}

// A status callback's payload carries the intent's metadata as given, and
// null for an intent without any.
func TestEnqueue_TheCallbackPayloadCarriesTheIntentsMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	var producer string
	require.NoError(t, pool.QueryRow(ctx, `SELECT session_user::text`).Scan(&producer))
	require.NoError(t, SetSubscription(ctx, pool, Subscription{URL: "https://p.example.com/cb", Secret: testSecret}))

	meta := map[string]string{"order_id": "9", "note": "ünïcode \"quoted\""}
	var vs []*intake.Validated
	for key, m := range map[string]map[string]string{"with": meta, "without": nil} {
		v, err := intake.Validate(&intake.Intent{NotificationType: "order.shipped", Producer: producer, IdempotencyKey: key,
			Audience: intake.Audience{SMS: []string{"+14155550123"}}, Channels: []string{"sms"},
			Content: intake.Content{SMS: &intake.SMSContent{Body: "hi"}}, Metadata: m}, intake.Limits{}, time.Now())
		require.NoError(t, err)
		vs = append(vs, v)
	}
	outs, err := accept.Accept(ctx, pool, vs, accept.Params{})
	require.NoError(t, err)
	for i, o := range outs {
		// The engine publishing the route fires the trigger.
		_, err := pool.Exec(ctx, `UPDATE herald.routes SET status = 'published', published_at = now(), next_attempt_at = NULL
			WHERE notification_id = $1`, o.NotificationID)
		require.NoError(t, err)
		var payload string
		require.NoError(t, pool.QueryRow(ctx, `SELECT payload_json FROM herald.records WHERE callback_of = $1`, o.NotificationID).Scan(&payload))
		var p struct {
			Callback struct {
				Data struct {
					Event    string             `json:"event"`
					Metadata *map[string]string `json:"metadata"`
				} `json:"data"`
			} `json:"callback"`
		}
		require.NoError(t, json.Unmarshal([]byte(payload), &p), payload)
		require.Equal(t, "published", p.Callback.Data.Event)
		if vs[i].Intent.Metadata == nil {
			require.Nil(t, p.Callback.Data.Metadata, payload)
			require.Contains(t, payload, `"metadata": null`)
			continue
		}
		require.NotNil(t, p.Callback.Data.Metadata, payload)
		require.Equal(t, vs[i].Intent.Metadata, *p.Callback.Data.Metadata)
	}
}
