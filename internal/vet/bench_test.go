package vet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkVetterPerRoute reports what the vetter costs a route a
// producer's login stored (one SMS route per notification, with 20 word
// rules and 2 regexes): the lock, the check and the move into the
// channel's queue, in batches of DefaultBatchSize.
func BenchmarkVetterPerRoute(b *testing.B) {
	bb := setup(b)
	ctx := context.Background()
	for i := range 20 {
		_, err := bb.asOp.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES ('word', $1, 'refuse')`, "blocked"+string(rune('a'+i)))
		require.NoError(b, err)
	}
	_, err := bb.asOp.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES ('regex', '(?i)free\s+money', 'review'), ('regex', '\d{16}', 'refuse')`)
	require.NoError(b, err)
	_, err = bb.asProd.Exec(ctx, `WITH ids AS (
			SELECT gen_random_uuid()::text AS nid, g FROM generate_series(1, $2::int) AS g),
		rec AS (
			INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind, payload_json,
				idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at, channels)
			SELECT nid, 'promo', $1, 'addresses', '{"sms":{"body":"Hi Ana, your order 9 has shipped and arrives Thursday."}}',
				'k' || g, 'fp', now(), now(), now(), now() + interval '1 day', '{sms}' FROM ids
			RETURNING notification_id)
		INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status, max_attempts,
			next_attempt_at, created_at, updated_at, lane)
		SELECT notification_id, 'r1', 'sms', '+14155550123', 'pending', 3, now(), now(), now(), '!vet' FROM rec`,
		bb.producer, b.N)
	require.NoError(b, err)
	v := New(bb.admin, nil) // the rules read once per DefaultRulesMaxAge, as in serve
	start := time.Now()
	b.ResetTimer()
	done := 0
	for done < b.N {
		n, err := v.VetOnce(ctx)
		require.NoError(b, err)
		require.Positive(b, n)
		done += n
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "routes/s")
}
