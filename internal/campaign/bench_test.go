package campaign

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store"
)

// fillCampaign stores n notifications of producer's campaign, one sms
// route each, due at due, with generate_series: the shape accept writes,
// without validating a million intents first. The SQL is the benchmark's
// own fixture (as the access tests' statements are), not a query of the
// engine's.
func fillCampaign(tb testing.TB, pool *pgxpool.Pool, producer, campaign string, n int, due time.Time) {
	tb.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO herald.campaigns (producer, campaign, send_at, created_at) VALUES ($1, $2, $3, now())`,
		producer, campaign, due)
	require.NoError(tb, err)
	for lo := 0; lo < n; lo += 100_000 {
		hi := min(lo+100_000, n)
		_, err := pool.Exec(ctx, `
			WITH rec AS (
				INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind, payload_json,
					idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at,
					channels, priority, send_at, campaign)
				SELECT format('%s-%s', $2::text, lpad(i::text, 9, '0')), 'sale.started', $1, 'addresses',
					'{"sms":{"body":"Spring sale"}}', format('%s-%s', $2::text, i), 'fp', now(), now(), now(), now() + interval '2 days',
					ARRAY['sms'], 1, $3, $2
				FROM generate_series($4::int, $5::int) AS i
				RETURNING notification_id
			)
			INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status, max_attempts, next_attempt_at,
				priority, sms_encoding, sms_segments, created_at, updated_at)
			SELECT notification_id, 'sms:000000000001', 'sms', '+14155550123', 'pending', 0, $3, 1, 'gsm7', 1, now(), now()
			FROM rec`, producer, campaign, due, lo+1, hi)
		require.NoError(tb, err)
	}
	_, err = pool.Exec(ctx, `VACUUM ANALYZE herald.records, herald.routes`)
	require.NoError(tb, err)
}

// BenchmarkCancelMillionRouteCampaign cancels a campaign of
// HERALD_BENCH_CAMPAIGN_ROUTES routes (default 1,000,000; one sms route per
// notification, scheduled an hour ahead, as a campaign canceled before its
// send_at is) in batches of 5,000 notifications, while a claim loop
// delivers another campaign of the same channel, due now, 100 routes a
// claim, each claim completed as published. It reports the cancel's rate
// (routes/s), its longest batch (the longest transaction it held, ms), and
// the claim loop's rate and longest claim-plus-complete while the cancel
// ran and, for comparison, before it. Run:
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench CancelMillionRouteCampaign -benchtime 1x ./internal/campaign/
func BenchmarkCancelMillionRouteCampaign(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("HERALD_BENCH_CAMPAIGN_ROUTES"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	const other = 200_000
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		pool := pgtemp.NewPool(b)
		began := time.Now()
		fillCampaign(b, pool, "shop", "big", n, time.Now().Add(time.Hour))
		fillCampaign(b, pool, "shop", "other", other, time.Now().Add(-time.Minute))
		b.Logf("filled %d + %d routes in %s", n, other, time.Since(began).Round(time.Millisecond))

		// The other campaign's delivery: claim 100, complete them, repeat.
		q := store.New()
		deliver := func(stop <-chan struct{}) (routes int, worst time.Duration, took time.Duration) {
			t0 := time.Now()
			for {
				select {
				case <-stop:
					return routes, worst, time.Since(t0)
				default:
				}
				s := time.Now()
				rows, err := q.RouteClaimDue(ctx, pool, store.RouteClaimDueParams{Channel: "sms", Lane: "", Max: 100, LeaseSeconds: 60})
				require.NoError(b, err)
				if len(rows) == 0 {
					return routes, worst, time.Since(t0)
				}
				p := store.RouteCompleteManyParams{}
				for _, r := range rows {
					p.NotificationIds = append(p.NotificationIds, r.NotificationID)
					p.RouteIds = append(p.RouteIds, r.RouteID)
					p.Attempts = append(p.Attempts, r.AttemptCount)
					p.LeaseUntils = append(p.LeaseUntils, *r.LeaseUntil)
					p.Statuses = append(p.Statuses, "published")
					p.DelaySeconds = append(p.DelaySeconds, 0)
					for _, col := range []*[]string{&p.Classifications, &p.Messages, &p.RecoveryHints, &p.ResolvedEmails,
						&p.ResolvedLocales, &p.ProviderMessageIds, &p.Providers, &p.ReceiptKeys} {
						*col = append(*col, "")
					}
					p.MaxAttempts = append(p.MaxAttempts, 10)
				}
				done, err := q.RouteCompleteMany(ctx, pool, p)
				require.NoError(b, err)
				require.Len(b, done, len(rows))
				routes += len(rows)
				worst = max(worst, time.Since(s))
			}
		}
		// Before: two seconds of delivery alone.
		stop := make(chan struct{})
		time.AfterFunc(2*time.Second, func() { close(stop) })
		aloneRoutes, aloneWorst, aloneTook := deliver(stop)

		stop = make(chan struct{})
		var wg sync.WaitGroup
		var busyRoutes int
		var busyWorst, busyTook time.Duration
		wg.Go(func() { busyRoutes, busyWorst, busyTook = deliver(stop) })
		var batchTimes []time.Duration
		last := time.Now()
		b.StartTimer()
		res, err := Cancel(ctx, pool, "shop", "big", CancelOpts{Actor: "bench", BatchSize: DefaultBatchSize,
			BatchFunc: func(Batch) {
				now := time.Now()
				batchTimes = append(batchTimes, now.Sub(last))
				last = now
			}})
		b.StopTimer()
		close(stop)
		wg.Wait()
		require.NoError(b, err)
		require.True(b, res.Done)
		require.Equal(b, int64(n), res.Canceled)
		elapsed := time.Duration(0)
		for _, d := range batchTimes {
			elapsed += d
		}
		slices.Sort(batchTimes)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "canceled_routes/s")
		b.ReportMetric(float64(batchTimes[len(batchTimes)-1].Microseconds())/1000, "max_batch_ms")
		b.ReportMetric(float64(batchTimes[len(batchTimes)/2].Microseconds())/1000, "p50_batch_ms")
		b.ReportMetric(float64(aloneRoutes)/aloneTook.Seconds(), "other_routes/s_alone")
		b.ReportMetric(float64(busyRoutes)/busyTook.Seconds(), "other_routes/s_during_cancel")
		b.ReportMetric(float64(aloneWorst.Microseconds())/1000, "other_max_claim_ms_alone")
		b.ReportMetric(float64(busyWorst.Microseconds())/1000, "other_max_claim_ms_during_cancel")
		b.Logf("canceled %d routes in %d batches, %s; other campaign: %d routes alone in %s, %d during the cancel",
			res.Canceled, res.Batches, elapsed.Round(time.Millisecond), aloneRoutes, aloneTook.Round(time.Millisecond), busyRoutes)
	}
}
