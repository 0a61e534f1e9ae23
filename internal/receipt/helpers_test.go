package receipt_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/store"
)

func secretEnv(name string) config.Secret { return config.Secret{Env: name} }

// acmeEndpoint serves the receipts endpoint, storing into pool, for one
// provider, sms/acme, whose token is s3cret.
func acmeEndpoint(t *testing.T, pool *pgxpool.Pool) *httptest.Server {
	return acmeServer(t, pool, nil, false)
}

// acmeMatchingEndpoint is acmeEndpoint with a matcher: receipts are
// matched in the transaction that stores them.
func acmeMatchingEndpoint(t *testing.T, pool *pgxpool.Pool) *httptest.Server {
	return acmeServer(t, pool, nil, true)
}

// acmeServer is acmeEndpoint storing through group (nil: its own), with a
// matcher when matching.
func acmeServer(t *testing.T, pool *pgxpool.Pool, group *receipt.Group, matching bool) *httptest.Server {
	settings := map[string]*routing.Receipts{"sms/acme": {Token: secretEnv("ACME_TOKEN")}}
	cfg := receipt.HandlerConfig{
		Pool:         pool,
		ReceiptsFunc: func(p string) *routing.Receipts { return settings[p] },
		GetenvFunc:   func(string) string { return "s3cret" },
		Group:        group,
	}
	if matching {
		m, err := receipt.NewMatcher(pool, receipt.MatcherConfig{ReceiptsFunc: cfg.ReceiptsFunc})
		require.NoError(t, err)
		cfg.Matcher = m
	}
	srv := httptest.NewServer(receipt.Handler(cfg))
	t.Cleanup(srv.Close)
	return srv
}

// queuedSignal returns a func to give Group.SetQueuedFuncs and a wait
// that returns once n items have joined a group since the last wait.
func queuedSignal(t *testing.T) (queued func(), wait func(n int)) {
	ch := make(chan struct{}, 1000)
	queued = func() { ch <- struct{}{} }
	wait = func(n int) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for i := range n {
			select {
			case <-ch:
			case <-timeout:
				t.Fatalf("%d of %d items joined a group", i, n)
			}
		}
	}
	return queued, wait
}

// refuseInsert makes Postgres refuse, with "refused for the test", every
// row inserted into herald.<table> whose column holds value: as a
// constraint added later, or a full disk for one row, would.
func refuseInsert(t *testing.T, pool *pgxpool.Pool, table, column, value string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), fmt.Sprintf(`
		CREATE FUNCTION public.refuse_%[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.%[2]s = %[3]s THEN
				RAISE EXCEPTION 'refused for the test';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_%[1]s BEFORE INSERT ON herald.%[1]s
			FOR EACH ROW EXECUTE FUNCTION public.refuse_%[1]s()`,
		table, pgx.Identifier{column}.Sanitize(), "'"+strings.ReplaceAll(value, "'", "''")+"'"))
	require.NoError(t, err)
}

// waitInsertBlocked waits until an insert into herald.<table> waits on a
// lock (one the test holds).
func waitInsertBlocked(t *testing.T, pool *pgxpool.Pool, table string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
				AND query LIKE '%INSERT INTO herald.' || $1 || '%'`, table).Scan(&n)
		return err == nil && n >= 1
	}, 10*time.Second, 5*time.Millisecond)
}

// publishedRoutes stores one published SMS route per message id, as
// publishedRoute does, a thousand to a statement.
func (b *testBundle) publishedRoutes(t testing.TB, provider string, msgIDs []string) {
	t.Helper()
	ctx := context.Background()
	for len(msgIDs) > 0 {
		n := min(len(msgIDs), 1000)
		var p store.RecordInsertManyParams
		p.IdempotencyWindowSeconds = 86400
		now := time.Now()
		for range n {
			nid := fmt.Sprintf("ntf_receipt_%d_%d", now.UnixNano(), b.seq.Add(1))
			p.NotificationIds = append(p.NotificationIds, nid)
			p.NotificationTypes = append(p.NotificationTypes, "otp.sent")
			p.Producers = append(p.Producers, "shop")
			p.AudienceKinds = append(p.AudienceKinds, "addresses")
			p.RecipientUserIds = append(p.RecipientUserIds, []byte(`[]`))
			p.PayloadJsons = append(p.PayloadJsons, `{"sms":{"body":"hi"}}`)
			p.IdempotencyKeys = append(p.IdempotencyKeys, nid)
			p.RequestFingerprints = append(p.RequestFingerprints, "fp")
			p.RequestIds = append(p.RequestIds, "")
			p.TraceIds = append(p.TraceIds, "")
			p.OccurredAts = append(p.OccurredAts, now)
			p.ChannelLists = append(p.ChannelLists, "sms")
			p.Priorities = append(p.Priorities, 0)
			p.SendAts = append(p.SendAts, time.Time{})
			p.ExpiresAts = append(p.ExpiresAts, time.Time{})
			p.RouteNotificationIds = append(p.RouteNotificationIds, nid)
			p.RouteIds = append(p.RouteIds, "sms:1")
			p.RouteChannels = append(p.RouteChannels, "sms")
			p.RouteRecipientRefs = append(p.RouteRecipientRefs, "+254712345678")
			p.RouteMaxAttempts = append(p.RouteMaxAttempts, 0)
			p.RoutePriorities = append(p.RoutePriorities, 0)
			p.RouteSendAts = append(p.RouteSendAts, time.Time{})
			p.RouteExpiresAts = append(p.RouteExpiresAts, time.Time{})
			p.RouteSmsEncodings = append(p.RouteSmsEncodings, "gsm7")
			p.RouteSmsSegments = append(p.RouteSmsSegments, 1)
			p.CallbackUrls = append(p.CallbackUrls, "")
		}
		_, err := store.New().RecordInsertMany(ctx, b.pool, p)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `
			UPDATE herald.routes r SET status = 'published', next_attempt_at = NULL, published_at = now(), finished_at = now(),
				attempt_count = 1, provider_message_id = k.id, providers = ARRAY[$3], receipt_key = $3 || ' ' || k.id,
				receipt_keyed_at = now()
			FROM unnest($1::text[], $2::text[]) AS k(nid, id) WHERE r.notification_id = k.nid`,
			p.NotificationIds, msgIDs[:n], provider)
		require.NoError(t, err)
		msgIDs = msgIDs[n:]
	}
	_, err := b.pool.Exec(ctx, `ANALYZE herald.routes`)
	require.NoError(t, err)
}

// clusterCPU returns the CPU time the Postgres cluster behind pool has
// used: its postmaster, its live children, and its reaped ones. It skips
// t where the server's processes cannot be read (another machine).
func clusterCPU(t testing.TB, pool *pgxpool.Pool) time.Duration {
	t.Helper()
	var backend int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&backend))
	stat := func(pid int) []string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil
		}
		s := string(b)
		return strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	}
	num := func(f []string, i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
	own := stat(backend)
	if own == nil {
		t.Skip("the server's processes cannot be read from /proc")
	}
	pm, _ := strconv.Atoi(own[1])
	f := stat(pm)
	ticks := num(f, 11) + num(f, 12) + num(f, 13) + num(f, 14)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := stat(pid); f != nil && f[1] == strconv.Itoa(pm) {
			ticks += num(f, 11) + num(f, 12)
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
