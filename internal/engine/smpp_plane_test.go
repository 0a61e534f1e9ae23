package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/smpp"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// submitSMSBody submits an SMS intent of body to phone, with key; extra
// adds fields to the intent ("expires_at": ...).
func (b *testBundle) submitSMSBody(t *testing.T, key, phone, body, extra string) {
	t.Helper()
	_, err := benchstore.New().IntakeInsertReturning(context.Background(), b.pool, []string{fmt.Sprintf(
		`{"notification_type":"otp.sent","producer":"shop","idempotency_key":%q,"channels":["sms"],
		"audience":{"sms":[%q]},"content":{"sms":{"body":%q}}%s}`, key, phone, body, extra)})
	require.NoError(t, err)
}

// smsRoute is an SMS route as the tests below read it.
type smsRoute struct {
	Status         string
	Attempts       int32
	DeliveryStatus *string
	MessageID      string
	Parts          []string
	PartStatuses   []string
	Class          string
}

func (b *testBundle) smsRoute(t *testing.T, key string) (smsRoute, error) {
	var r smsRoute
	err := b.pool.QueryRow(context.Background(), `
		SELECT r.status, r.attempt_count, r.delivery_status, r.provider_message_id, coalesce(r.receipt_parts, '{}'),
			coalesce(r.part_delivery_statuses, '{}'), r.last_error_classification
		FROM herald.routes r JOIN herald.records rec USING (notification_id)
		WHERE rec.idempotency_key = $1`, key).Scan(&r.Status, &r.Attempts, &r.DeliveryStatus, &r.MessageID,
		&r.Parts, &r.PartStatuses, &r.Class)
	return r, err
}

// receiptStates counts the SMPP receipts stored, by what the matcher made
// of them.
func (b *testBundle) receiptStates(t *testing.T) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		`SELECT state, count(*) FROM herald.delivery_receipts WHERE source = 'smpp' GROUP BY state`)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// longBody needs three GSM-7 parts.
var longBody = strings.Repeat("Your parcel is on its way. ", 15)

// TestSMPP_LongMessageStatusFromParts sends a
// three-part message through SMSCs that send a receipt for the last part
// only, or one per part, with UDH and with SAR parts: every part's id is
// recorded, every receipt is matched to the route (none unmatched), and
// the route's delivery status follows its parts: delivered when each that
// reported is, undelivered when they say so. herald is configured the
// same way for each SMSC.
func TestSMPP_LongMessageStatusFromParts(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"udh", "sar"} {
		for _, tc := range []struct {
			name     string
			plan     smsctest.ReceiptPlan
			receipts int
			want     string
		}{
			{"LastPartOnly", smsctest.ReceiptPlan{Stat: "DELIVRD", LastPartOnly: true}, 1, "delivered"},
			{"EachPart", smsctest.ReceiptPlan{Stat: "DELIVRD"}, 3, "delivered"},
			{"EachPartUndelivered", smsctest.ReceiptPlan{Stat: "UNDELIV", Err: "001"}, 3, "undelivered"},
		} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				smsc, _ := startSMPPEngineWith(t, b, smppEngineOpts{plan: &tc.plan, smpp: "long_messages: " + mode})
				b.submitSMSBody(t, "long-1", "+254712345678", longBody, "")
				var r smsRoute
				require.Eventually(t, func() bool {
					var err error
					r, err = b.smsRoute(t, "long-1")
					return err == nil && r.DeliveryStatus != nil && *r.DeliveryStatus == tc.want &&
						b.receiptStates(t)["matched"] == tc.receipts
				}, 20*time.Second, 20*time.Millisecond, "the route's status from its parts' receipts")
				r, err := b.smsRoute(t, "long-1")
				require.NoError(t, err)
				require.Len(t, smsc.Messages(), 1)
				ids := smsc.Messages()[0].MessageIDs
				require.Len(t, ids, 3)
				require.Equal(t, []string{"sms/smsc " + ids[0], "sms/smsc " + ids[1], "sms/smsc " + ids[2]}, r.Parts,
					"every part's id is recorded")
				require.Equal(t, ids[0], r.MessageID)
				reported := 0
				for _, p := range r.PartStatuses {
					if p != "" {
						require.Equal(t, tc.want, p)
						reported++
					}
				}
				require.Equal(t, tc.receipts, reported)
				require.Equal(t, map[string]int{"matched": tc.receipts}, b.receiptStates(t), "no receipt of a known part is unmatched")
			})
		}
	}
}

// TestSMPP_ReceiptsAfterRestartMatchNew has the SMSC
// restart with its message id counter reset between two sets of
// messages, so the second set's ids repeat the first's: every receipt of
// the second set is matched to its own route (the most recent given the
// id), none as a duplicate of an older, delivered route.
func TestSMPP_ReceiptsAfterRestartMatchNew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	smsc, _ := startSMPPEngineWith(t, b, smppEngineOpts{plan: &smsctest.ReceiptPlan{Stat: "DELIVRD"},
		smpp: "reconnect_max: 1s"})
	const n = 5
	delivered := func(prefix string) func() bool {
		return func() bool {
			for i := range n {
				r, err := b.smsRoute(t, fmt.Sprintf("%s-%d", prefix, i))
				if err != nil || r.DeliveryStatus == nil || *r.DeliveryStatus != "delivered" {
					return false
				}
			}
			return true
		}
	}
	for i := range n {
		b.submitSMSBody(t, fmt.Sprintf("before-%d", i), "+254712345678", "hello", "")
	}
	require.Eventually(t, delivered("before"), 20*time.Second, 20*time.Millisecond)

	smsc.Restart()
	// The second set's receipts say undelivered, so a match to an older
	// route could not pass for its own.
	smsc.SetReceipts(&smsctest.ReceiptPlan{Stat: "UNDELIV", Err: "001"})
	for i := range n {
		b.submitSMSBody(t, fmt.Sprintf("after-%d", i), "+254712345678", "hello", "")
	}
	var before, after []string
	require.Eventually(t, func() bool {
		before, after = nil, nil
		for i := range n {
			r, err := b.smsRoute(t, fmt.Sprintf("after-%d", i))
			if err != nil || r.DeliveryStatus == nil || *r.DeliveryStatus != "undelivered" {
				return false
			}
			after = append(after, r.MessageID)
			r, err = b.smsRoute(t, fmt.Sprintf("before-%d", i))
			require.NoError(t, err)
			before = append(before, r.MessageID)
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "every route after the restart got its own receipt's status")
	require.ElementsMatch(t, before, after, "the SMSC's ids repeated")
	require.True(t, delivered("before")(), "the older routes keep their status")
	require.Equal(t, map[string]int{"matched": 2 * n}, b.receiptStates(t))
}

// TestSMPP_RefusedBindSpendsNoAttempt has the SMSC refuse
// herald's bind: routes wait without an attempt for as long as the bind
// is refused (an expiring one ends as expired, never as exhausted), the
// provider's health says the bind is refused and why, and once the SMSC
// accepts the bind the routes are delivered at their first attempt.
func TestSMPP_RefusedBindSpendsNoAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	smsc, _ := startSMPPEngineWith(t, b, smppEngineOpts{password: "wrong", smpp: "reconnect_max: 1s",
		provider: "    circuit: {failure_ratio: 0.5, min_attempts: 1, cooldown: 1s}"})
	for i := range 3 {
		b.submitSMSBody(t, fmt.Sprintf("wait-%d", i), "+254712345678", "hello", "")
	}
	b.submitSMSBody(t, "expiring", "+254712345678", "hello",
		fmt.Sprintf(`,"expires_at":%q`, time.Now().Add(3*time.Second).UTC().Format(time.RFC3339Nano)))

	var reason string
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(ctx, `SELECT unavailable_reason FROM herald.provider_health_view
			WHERE provider = 'sms/smsc'`).Scan(&reason) == nil && reason != ""
	}, 15*time.Second, 50*time.Millisecond, "the health view says the provider cannot send")
	require.Contains(t, reason, "ESME_RINVPASWD (0x0000000E)")
	require.Contains(t, reason, "refuses herald's bind")

	// Longer than several circuit cool-downs and waits.
	require.Eventually(t, func() bool {
		r, err := b.smsRoute(t, "expiring")
		return err == nil && r.Status == "dead_letter"
	}, 20*time.Second, 50*time.Millisecond)
	r, err := b.smsRoute(t, "expiring")
	require.NoError(t, err)
	require.Equal(t, "expired", r.Class, "bounded by its expiry, not by attempts")
	require.LessOrEqual(t, r.Attempts, int32(1), "the claim that found it expired")
	// Several more refused binds: the waiting routes went on waiting
	// through the client's retries and the circuit's cool-downs.
	refused := smsc.BindsRefused()
	require.Eventually(t, func() bool { return smsc.BindsRefused() >= refused+3 }, 20*time.Second, 20*time.Millisecond,
		"herald binds again, and is refused again")
	for i := range 3 {
		r, err := b.smsRoute(t, fmt.Sprintf("wait-%d", i))
		require.NoError(t, err)
		require.NotEqual(t, "dead_letter", r.Status)
		if r.Status != "claimed" { // claimed: caught between its claim and its park
			require.Zero(t, r.Attempts, "nothing was sent, so no attempt was spent")
		}
	}
	require.Zero(t, len(smsc.Submits()))
	var deadLetters int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.dead_letters
		WHERE failure_classification <> 'expired'`).Scan(&deadLetters))
	require.Zero(t, deadLetters)
	var unavailable int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT unavailable_5m FROM herald.provider_health_view
		WHERE provider = 'sms/smsc'`).Scan(&unavailable))
	require.Positive(t, unavailable)
}

// TestSMPP_BindAcceptedAgainDelivers:
// an SMSC that refuses binds (ESME_RBINDFAIL) and then accepts them
// again: the routes that waited go out, each at its first attempt, and
// the health view stops saying the provider cannot send.
func TestSMPP_BindAcceptedAgainDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	smsc, _ := startSMPPEngineWith(t, b, smppEngineOpts{smpp: "reconnect_max: 1s"})
	smsc.RefuseBinds(smpp.StatusBindFail)
	for i := range 3 {
		b.submitSMSBody(t, fmt.Sprintf("wait-%d", i), "+254712345678", "hello", "")
	}
	var reason string
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(ctx, `SELECT unavailable_reason FROM herald.provider_health_view
			WHERE provider = 'sms/smsc'`).Scan(&reason) == nil && reason != ""
	}, 15*time.Second, 50*time.Millisecond)
	require.Contains(t, reason, "ESME_RBINDFAIL (0x0000000D)", "the code is not redacted")
	smsc.RefuseBinds(smpp.StatusOK)
	require.Eventually(t, func() bool {
		for i := range 3 {
			r, err := b.smsRoute(t, fmt.Sprintf("wait-%d", i))
			if err != nil || r.Status != "published" {
				return false
			}
			require.Equal(t, int32(1), r.Attempts)
		}
		return true
	}, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(ctx, `SELECT unavailable_reason FROM herald.provider_health_view
			WHERE provider = 'sms/smsc'`).Scan(&reason) == nil && reason == ""
	}, 45*time.Second, 100*time.Millisecond)
}

// TestSMPP_ThrottledIsNotFailure has the SMSC answer
// ESME_RTHROTTLED beyond one submit a second: the provider's health counts
// them as throttled, and none as a transient failure (which would open
// its circuit).
func TestSMPP_ThrottledIsNotFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	smsc, _ := startSMPPEngineWith(t, b, smppEngineOpts{smpp: "throttle_wait: 200ms"})
	smsc.SetThrottle(1)
	for i := range 4 {
		b.submitSMSBody(t, fmt.Sprintf("t-%d", i), "+254712345678", "hello", "")
	}
	require.Eventually(t, func() bool {
		for i := range 4 {
			r, err := b.smsRoute(t, fmt.Sprintf("t-%d", i))
			if err != nil || r.Status != "published" {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond)
	throttled := 0
	for _, s := range smsc.Submits() {
		if s.Status == smpp.StatusThrottled {
			throttled++
		}
	}
	require.Positive(t, throttled, "the SMSC throttled some")
	var tr, th int64
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(ctx, `SELECT coalesce(sum(transient), 0), coalesce(sum(throttled), 0)
			FROM herald.provider_health WHERE provider = 'sms/smsc'`).Scan(&tr, &th) == nil && th >= int64(throttled)
	}, 10*time.Second, 50*time.Millisecond)
	require.Zero(t, tr, "a throttled answer is not a failure")
}

// TestSMPP_ReplacedProviderUnbinds applies a changed
// SMPP provider of two binds: its old binds are closed once their
// attempts are done, so the SMSC sees two binds again within seconds, not
// four for minutes.
func TestSMPP_ReplacedProviderUnbinds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	smsc, file := startSMPPEngineWith(t, b, smppEngineOpts{smpp: "binds: 2"})
	b.submitSMSBody(t, "bind-1", "+254712345678", "hello", "")
	require.Eventually(t, func() bool { return smsc.Bound() == 2 }, 15*time.Second, 20*time.Millisecond)
	b.applyRouting(t, strings.Replace(file, "binds: 2", "binds: 2, window: 5", 1))
	require.Eventually(t, func() bool { return smsc.Binds() >= 4 }, 15*time.Second, 20*time.Millisecond,
		"the new provider bound")
	require.Eventually(t, func() bool { return smsc.Bound() == 2 }, 10*time.Second, 20*time.Millisecond,
		"the old binds were closed")
}

// TestSMPP_ReceiptsShowTheirAttempt: an SMPP provider's
// receipts settings (retry_temporary, temporary_errors: no HTTP token) send
// a route whose receipt says undelivered with a temporary code back for a
// second attempt; the timeline (herald status) shows each receipt with the
// attempt it was about.
func TestSMPP_ReceiptsShowTheirAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	smsc, _ := startSMPPEngineWith(t, b, smppEngineOpts{
		plan:     &smsctest.ReceiptPlan{Stat: "UNDELIV", Err: "088"},
		provider: `    receipts: {retry_temporary: true, temporary_errors: ["088"]}`,
	})
	b.submitSMSBody(t, "retry-1", "+254712345678", "hello", "")
	require.Eventually(t, func() bool { return len(smsc.Submits()) >= 1 }, 15*time.Second, 5*time.Millisecond)
	smsc.SetReceipts(&smsctest.ReceiptPlan{Stat: "DELIVRD"})
	require.Eventually(t, func() bool {
		r, err := b.smsRoute(t, "retry-1")
		return err == nil && r.Attempts == 2 && r.DeliveryStatus != nil && *r.DeliveryStatus == "delivered"
	}, 20*time.Second, 20*time.Millisecond, "retried once, then delivered")

	rows, err := b.pool.Query(ctx, `
		SELECT t.attempt, t.detail FROM herald.records rec, herald.notification_timeline(rec.notification_id) t
		WHERE rec.idempotency_key = 'retry-1' AND t.event = 'receipt' ORDER BY t.at`)
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var a int32
		var d string
		require.NoError(t, rows.Scan(&a, &d))
		got = append(got, fmt.Sprintf("%d %s", a, d))
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{
		"1 UNDELIV from sms/smsc: undelivered, error 088, matched",
		"2 DELIVRD from sms/smsc: delivered, error 000, matched",
	}, got)
}
