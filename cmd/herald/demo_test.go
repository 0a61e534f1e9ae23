package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/demo"
	"github.com/heraldhq/herald/internal/harness/oteltest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/heraldtype"
)

func TestDemoCmd_SummaryMatchesDatabase(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	// 100 users: enough Kenyan numbers (one user in four) that the routes
	// failing over to sms/backup outrun its cap.
	out, stderr, err := run(t, map[string]string{"DATABASE_URL": dbURL}, "demo", "--json", "-users", "100")
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "routes", "progress goes to stderr")

	var sum demo.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	require.False(t, sum.Throwaway)

	// What the workload was built to produce, whatever the timing.
	require.Equal(t, int64(100+1+23+10+40+11+1+1+2+4), sum.Accepted,
		"orders, the newsletter, invoices, reminders, resets, over HTTP, the long SMS, the intent with its own callback_url, two with a sender, "+
			"the SMS sent while sms/acme drained")
	// The intent with metadata and its own callback_url: its callback
	// reached the receiver there, signed, with the metadata.
	require.NotNil(t, sum.DirectCallback)
	require.Empty(t, sum.DirectCallback.Skipped)
	require.Equal(t, "published", sum.DirectCallback.Event)
	require.Equal(t, "/herald/callbacks/order-9", sum.DirectCallback.Path)
	require.Equal(t, map[string]string{"order_id": "9", "tenant": "acme", "run": sum.RunID}, sum.DirectCallback.Metadata)
	// An approved sender reached the SMSC as the source_addr, alphanumeric;
	// the flash SMS with message class 0; the unapproved one was refused.
	require.NotNil(t, sum.Senders)
	require.Equal(t, &demo.SeenAtSMSC{SourceAddr: demo.DemoSender, SourceTON: 5, SourceNPI: 0, DataCoding: 0x00}, sum.Senders.SMS)
	require.Equal(t, &demo.SeenAtSMSC{SourceAddr: demo.DemoSender, SourceTON: 5, SourceNPI: 0, DataCoding: 0x10}, sum.Senders.Flash)
	require.Equal(t, "sender_not_approved", sum.Senders.RefusedCode)
	require.Equal(t, 15+5, sum.Duplicates)
	require.Equal(t, 2, sum.Conflicts, "one through each door")
	require.Equal(t, 1, sum.Invalid)
	require.Equal(t, int64(7), sum.Malformed, "six malformed raw entries and the raw conflict")
	require.Zero(t, sum.Unfinished)
	require.Positive(t, sum.Published)
	require.Positive(t, sum.Retried, "throttling, 5xx and greylisting force retries")
	require.Positive(t, sum.Skipped)
	// Bounced mailboxes (user 50 twice: order and newsletter, one reset),
	// two gone webhooks and one that stayed down.
	require.GreaterOrEqual(t, sum.DeadLettered, int64(6))
	require.Positive(t, sum.Throughput)
	require.NotEmpty(t, sum.Commands)
	// A second producer's login tried every way out of its own rows, and
	// each was refused.
	require.NotNil(t, sum.Isolation)
	require.Empty(t, sum.Isolation.Skipped)
	require.Len(t, sum.Isolation.Attempts, 11)
	for _, a := range sum.Isolation.Attempts {
		require.True(t, a.Refused, "%s: %s", a.What, a.How)
	}
	require.Equal(t, 11, sum.Isolation.Refused)
	listen := sum.Isolation.Attempts[9]
	require.Regexp(t, `^heard 0; the engine's topics \(named after a secret\) carried [1-9][0-9]* meanwhile$`, listen.How,
		"the engine's topics carried shop's wake-ups, rogue's LISTEN heard none of them")
	require.Contains(t, sum.Isolation.Attempts[8].How, "42501", "a forged held intent is refused by the database")

	// A templated notification, rendered in each user's locale (pt-BR falls
	// back to pt), and an intent the blocklist refused.
	require.NotNil(t, sum.Content)
	require.Len(t, sum.Content.Deliveries, 2)
	for _, d := range sum.Content.Deliveries {
		require.Equal(t, "published", d.Status, d.User)
		switch d.Locale {
		case "pt-BR":
			require.Equal(t, "pt", d.ResolvedLocale)
			require.Equal(t, "Bem-vindo, Ana & Zoé! O seu pedido 1042 está confirmado.", d.Text)
		default:
			require.Equal(t, "fr", d.ResolvedLocale)
			require.Equal(t, "Bienvenue Ana & Zoé ! Votre commande 1042 est confirmée.", d.Text)
		}
	}
	require.Contains(t, sum.Content.Blocked, "content_blocked")
	require.Contains(t, sum.Content.Blocked, `word "jackpot"`)
	checkDemoContentDoors(t, &sum, dbURL)
	checkDemoLongSMS(t, sum.LongSMS, dbURL)

	// The same numbers, read independently from the database.
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	count := func(sql string, args ...any) int64 {
		t.Helper()
		var n int64
		require.NoError(t, pool.QueryRow(ctx, sql, args...).Scan(&n))
		return n
	}
	prefix := sum.RunID + ":%"
	// Status callbacks copy their route's request_id: they are counted on
	// their own, below.
	require.Equal(t, sum.Accepted, count(`SELECT count(*) FROM herald.records WHERE request_id LIKE $1
		AND NOT 'callback' = ANY (channels)`, prefix))
	routes := func(status string) int64 {
		return count(`SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id)
			WHERE r.request_id LIKE $1 AND rt.status = $2 AND rt.channel <> 'callback'`, prefix, status)
	}
	require.Equal(t, sum.Published, routes("published"))
	require.Equal(t, sum.DeadLettered, routes("dead_letter"))
	require.Equal(t, sum.Skipped, routes("skipped"))
	require.Equal(t, sum.Routes, sum.Published+sum.DeadLettered+sum.Skipped+sum.Canceled)
	// Where they are: the dead letters in routes_live,
	// every finished route in its week's partition, which the summary
	// names among the weeks made.
	var stored int64
	for _, p := range sum.RouteStorage {
		stored += p.Routes
		if p.Partition == "herald.routes_live" {
			require.Equal(t, "dead_letter", p.Statuses)
			require.Equal(t, sum.DeadLettered, p.Routes)
			continue
		}
		week, ok := strings.CutPrefix(p.Partition, "herald.routes_f")
		require.True(t, ok, p.Partition)
		require.Contains(t, sum.Weeks, week)
		require.NotContains(t, p.Statuses, "dead_letter")
	}
	require.Equal(t, sum.Routes, stored)
	// And the records: each in the partition of the week
	// it was accepted in, which the summary names among the weeks made,
	// each holding its idempotency key (00026), in a table of their own.
	var records, keys int64
	for _, p := range sum.RecordStorage {
		records += p.Records
		keys += p.Keys
		week, ok := strings.CutPrefix(p.Partition, "herald.records_w")
		require.True(t, ok, p.Partition)
		require.Contains(t, sum.RecordWeeks, week)
	}
	require.Equal(t, count(`SELECT count(*) FROM herald.records WHERE request_id LIKE $1`, prefix), records)
	require.Equal(t, records, keys)
	require.Equal(t, keys, count(`SELECT count(*) FROM herald.idempotency_keys k JOIN herald.records r
		USING (notification_id) WHERE r.request_id LIKE $1`, prefix))
	// The content part's refusals (the evasions through the SQL intake and
	// the rows written by hand) are not the workload's.
	require.Equal(t, sum.DeadLettered, count(`SELECT count(*) FROM herald.dead_letters WHERE channel <> 'callback'
		AND failure_classification <> 'content_blocked'`))
	require.Equal(t, sum.Malformed, count(`SELECT count(*) FROM herald.malformed_intents WHERE failure_code <> 'content_blocked'`))
	require.Equal(t, sum.Retried, count(`SELECT count(*) FROM herald.routes WHERE attempt_count > 1 AND channel <> 'callback'`))
	require.Zero(t, count(`SELECT count(*) FROM herald.intake`))
	var dl int64
	for _, d := range sum.DeadLetters {
		dl += d.Count
	}
	require.Equal(t, sum.DeadLettered, dl)

	// The providers part: every figure read again from the database, and
	// against what the loopback providers' own servers counted.
	p := sum.Providers
	require.NotNil(t, p)
	require.Empty(t, p.Skipped)
	require.Len(t, p.Rules, 4)
	require.Equal(t, []string{"sms/acme", "sms/backup"}, p.Rules[0].Providers)
	require.Equal(t, []string{"sms/operator"}, p.Rules[1].Providers)
	require.Equal(t, []string{"sms/legacy", "sms/operator"}, p.Rules[2].Providers)
	require.Len(t, p.Providers, 4)
	acme, backup, operator, legacy := p.Providers[0], p.Providers[1], p.Providers[2], p.Providers[3]
	require.Equal(t, "sms/legacy", legacy.Name)
	require.Zero(t, legacy.Attempts, "a provider whose binds are refused spends no attempt")
	require.Zero(t, legacy.Received)
	require.Equal(t, "sms/acme", acme.Name)
	require.Equal(t, "sms/backup", backup.Name)
	require.Equal(t, "sms/operator", operator.Name)
	require.Positive(t, operator.Published, "UK numbers go to the SMSC")
	require.Equal(t, operator.Received, operator.Attempts+demo.LongSMSParts-1, "the SMSC received every submit, the long SMS's in parts")
	for _, c := range p.Providers {
		require.Equal(t, c.Attempts, count(`SELECT count(*) FROM herald.routes, unnest(providers) AS p WHERE p = $1`, c.Name), c.Name)
		require.Equal(t, c.Routes, count(`SELECT count(*) FROM herald.routes WHERE $1 = ANY(providers)`, c.Name), c.Name)
		require.Equal(t, c.Published, count(`SELECT count(*) FROM herald.routes
			WHERE status = 'published' AND providers[cardinality(providers)] = $1`, c.Name), c.Name)
		require.Equal(t, c.DeadLettered, count(`SELECT count(*) FROM herald.dead_letters WHERE provider = $1`, c.Name), c.Name)
	}
	require.Equal(t, p.FailedOver, count(`SELECT count(*) FROM herald.routes WHERE cardinality(array_positions(providers, 'sms/acme')) > 0
		AND cardinality(array_positions(providers, 'sms/backup')) > 0`))
	require.Positive(t, p.FailedOver, "Kenyan numbers fail over from sms/acme to sms/backup")
	require.Equal(t, p.FailedOver, count(`SELECT count(*) FROM herald.routes
		WHERE providers[1] = 'sms/acme' AND providers[cardinality(providers)] = 'sms/backup'`), "each one from acme to backup")
	require.Equal(t, p.FailedOverPublished, count(`SELECT count(*) FROM herald.routes
		WHERE status = 'published' AND providers[1] = 'sms/acme' AND providers[cardinality(providers)] = 'sms/backup'`))
	require.Equal(t, p.FailedOver+int64(sum.OnCall.ToBackup), backup.Routes,
		"only failovers reach the backup, and the SMS sent while sms/acme drained")
	// Every SMS attempt reached a server: a provider's, or (before the
	// engine had loaded the providers) the channel's own driver's, which
	// is sms/acme's server.
	require.Equal(t, p.ChannelDriverAttempts, count(`SELECT coalesce(sum(attempt_count - coalesce(cardinality(providers), 0)), 0)
		FROM herald.routes WHERE channel = 'sms' AND status <> 'skipped'`))
	require.Equal(t, backup.Received, backup.Attempts)
	require.Equal(t, acme.Received, acme.Attempts+p.ChannelDriverAttempts)
	// The cap held at the provider: more than a second's worth of routes
	// reached it, never more than its cap in any one second.
	require.Equal(t, demo.BackupCapPerSecond, backup.CapPerSecond)
	require.Greater(t, backup.Received, int64(backup.CapPerSecond))
	require.Positive(t, backup.MaxPerSecond)
	require.LessOrEqual(t, backup.MaxPerSecond, backup.CapPerSecond)
	require.Equal(t, int64(len(p.Circuits)), count(`SELECT count(*) FROM herald.provider_events`))
	// The database is left as the demo found it: its providers applied
	// and removed again, both audited.
	require.Zero(t, count(`SELECT count(*) FROM herald.providers`))
	require.Equal(t, int64(2), count(`SELECT count(*) FROM herald.audit_log WHERE action = 'routing_apply' AND actor = 'herald-demo'`))

	checkDemoReceipts(t, sum.Receipts, count)
	checkDemoCampaign(t, sum.Campaign, count)
	checkDemoConsoleOnCall(t, &sum, count)
	checkDemoCallbacks(t, sum.Callbacks, prefix, count)
	checkDemoAPI(t, sum.API, sum.RunID, count)
}

// checkDemoReceipts checks the receipts part against the database: each
// provider's routes by delivery status, its receipts by what the matcher
// made of them, and what its own server sent.
func checkDemoReceipts(t *testing.T, r *demo.Receipts, count func(string, ...any) int64) {
	t.Helper()
	require.NotNil(t, r)
	require.Empty(t, r.Skipped)
	require.Len(t, r.Providers, 4)
	for _, c := range r.Providers {
		status := func(s string) int64 {
			return count(`SELECT count(*) FROM herald.routes
				WHERE channel = 'sms' AND providers[cardinality(providers)] = $1 AND delivery_status = $2`, c.Provider, s)
		}
		require.Equal(t, c.Delivered, status("delivered"), c.Provider)
		require.Equal(t, c.Undelivered, status("undelivered"), c.Provider)
		require.Equal(t, c.Expired, status("expired"), c.Provider)
		require.Equal(t, c.Unknown, status("unknown"), c.Provider)
		require.Zero(t, c.NoStatus, "%s: every message accepted got a receipt", c.Provider)
		require.Equal(t, c.Published, c.Delivered+c.Undelivered+c.Expired+c.Unknown, c.Provider)
		state := func(s string) int64 {
			return count(`SELECT count(*) FROM herald.delivery_receipts WHERE provider = $1 AND state = $2`, c.Provider, s)
		}
		require.Equal(t, c.Received, count(`SELECT count(*) FROM herald.delivery_receipts WHERE provider = $1`, c.Provider), c.Provider)
		require.Equal(t, c.Matched, state("matched"), c.Provider)
		require.Equal(t, c.Duplicate, state("duplicate"), c.Provider)
		require.Equal(t, c.Unmatched, state("unmatched"), c.Provider)
		require.Zero(t, c.Waiting+c.Malformed, c.Provider)
		require.Equal(t, c.Received, c.Matched+c.Duplicate+c.Unmatched, c.Provider)
		require.Equal(t, c.Early, count(`SELECT count(*) FROM herald.delivery_receipts
			WHERE provider = $1 AND state IN ('matched', 'duplicate') AND match_attempts > 1`, c.Provider), c.Provider)
		require.Equal(t, c.Sent, c.Received, "%s: herald stored every receipt the provider sent", c.Provider)
		// Every route with a delivery status got it from a matched receipt.
		require.Equal(t, c.Published, count(`SELECT count(DISTINCT (notification_id, route_id)) FROM herald.delivery_receipts
			WHERE provider = $1 AND state = 'matched'`, c.Provider), c.Provider)
	}
	acme, operator := r.Providers[0], r.Providers[2]
	for name, n := range map[string]int64{"undelivered": acme.Undelivered, "expired": acme.Expired, "unknown": acme.Unknown,
		"duplicate": acme.Duplicate, "unmatched": acme.Unmatched, "early": acme.Early} {
		require.Positive(t, n, "sms/acme's receipts include %s ones", name)
	}
	require.Equal(t, operator.Published, operator.Delivered, "the SMSC's receipts say DELIVRD")
	require.Equal(t, operator.Published, operator.Received, "one receipt per message, over SMPP")
}

// checkDemoCallbacks checks the callbacks part against the database and
// the routes they are about.
func checkDemoCallbacks(t *testing.T, c *demo.Callbacks, prefix string, count func(string, ...any) int64) {
	t.Helper()
	require.NotNil(t, c)
	require.Empty(t, c.Skipped)
	require.Zero(t, c.OutOfOrder, "no route's receipt event came before its published")
	require.Zero(t, c.BadSignatures)
	require.Positive(t, c.Refused, "the receiver refuses one request in twenty")
	require.Equal(t, int64(c.Routes), count(`SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id)
		WHERE r.producer = $1 AND rt.channel <> 'callback' AND rt.status IN ('published', 'dead_letter', 'skipped')`, c.Producer),
		"every finished route of the producer was called back about")
	events := map[string]demo.CallbackEvent{}
	for _, e := range c.Events {
		events[e.Event] = e
		require.Equal(t, e.Created, count(`SELECT count(*) FROM herald.records
			WHERE notification_type = 'herald.callback.' || $1 AND request_id LIKE $2`, e.Event, prefix), e.Event)
		require.Equal(t, e.Delivered, count(`SELECT count(*) FROM herald.records r JOIN herald.routes rt USING (notification_id)
			WHERE r.notification_type = 'herald.callback.' || $1 AND r.request_id LIKE $2 AND rt.status = 'published'`, e.Event, prefix), e.Event)
		require.Equal(t, e.Created, e.Delivered, e.Event)
		require.Equal(t, e.Delivered, e.Received, "%s: the receiver took each callback delivered, once", e.Event)
	}
	watched := func(where string) int64 {
		return count(`SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id)
			WHERE r.producer = $1 AND rt.channel <> 'callback' AND `+where, c.Producer)
	}
	require.Equal(t, watched(`rt.status = 'published'`), events["published"].Created)
	require.Equal(t, watched(`rt.delivery_status = 'delivered'`), events["delivered"].Created)
	require.Equal(t, watched(`rt.delivery_status = 'undelivered'`), events["undelivered"].Created)
	require.Positive(t, events["delivered"].Created)
	require.Zero(t, count(`SELECT count(*) FROM herald.failed_callbacks_view`))
	require.Zero(t, count(`SELECT count(*) FROM herald.callback_subscriptions WHERE producer = $1`, c.Producer),
		"the subscription is removed with the producer's login")
}

// checkDemoAPI checks the HTTP API part against the database.
func checkDemoAPI(t *testing.T, a *demo.APIPart, runID string, count func(string, ...any) int64) {
	t.Helper()
	require.NotNil(t, a)
	require.Empty(t, a.Skipped)
	require.Equal(t, 3, a.Requests, "a batch, one intent, and that intent again")
	require.Equal(t, 10+2, a.Submitted)
	require.Equal(t, 11, a.Created)
	require.Equal(t, 1, a.Replayed)
	require.Equal(t, int64(a.Created), a.Stored)
	require.Equal(t, a.Stored, count(`SELECT count(*) FROM herald.records WHERE request_id LIKE $1 AND producer = $2
		AND NOT 'callback' = ANY (channels)`, runID+":api:%", a.Producer))
	require.Equal(t, a.Published, count(`SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id)
		WHERE r.request_id LIKE $1 AND rt.channel = 'sms' AND rt.status = 'published'`, runID+":api:%"))
	require.Positive(t, a.Published)
	require.Equal(t, a.Routes, a.Published+a.DeadLettered+a.SkippedRoutes, "delivered like the others")
	require.Equal(t, int64(1), count(`SELECT count(*) FROM herald.api_keys WHERE producer = $1 AND key_prefix = $2
		AND last_used_at IS NOT NULL AND revoked_at IS NOT NULL`, a.Producer, a.KeyPrefix), "used, and revoked at the end")
	require.Equal(t, int64(1), count(`SELECT count(*) FROM herald.audit_log WHERE action = 'api_key_create' AND actor = 'herald-demo'`))
	require.Zero(t, count(`SELECT count(*) FROM pg_roles WHERE rolname IN ($1, $2)`, a.Producer, a.Login), "the logins are dropped")
}

func TestDemoCmd_LeavesOwnProvidersAlone(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	file := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(file, []byte("providers:\n  - {name: webhook/own, driver: discard}\n"), 0o600))
	_, stderr, err := run(t, env, "providers", "apply", "-f", file, "--actor", "ops")
	require.NoError(t, err, stderr)

	out, stderr, err := run(t, env, "demo", "--json", "-users", "10")
	require.NoError(t, err, stderr)
	var sum demo.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	require.NotNil(t, sum.Providers)
	require.Contains(t, sum.Providers.Skipped, "webhook/own")
	require.Zero(t, sum.Providers.FailedOver)
	require.Zero(t, sum.Unfinished)
	require.NotNil(t, sum.OnCall)
	require.Contains(t, sum.OnCall.Skipped, "webhook/own", "no provider of the demo's to drain")

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var names []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(name ORDER BY name) FROM herald.providers`).Scan(&names))
	require.Equal(t, []string{"webhook/own"}, names)
}

func TestDemoCmd_RejectsBadUserCount(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, nil, "demo", "-users", "3")
	require.ErrorContains(t, err, "-users")
	require.Equal(t, 2, exitCode(err))
}

func TestDemoCmd_NoURLUsesThrowawayCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster of its own")
	}
	out, stderr, err := run(t, nil, "demo", "--json", "-users", "10")
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "throwaway PostgreSQL")
	var sum demo.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	require.True(t, sum.Throwaway)
	require.False(t, sum.Kept)
	require.Zero(t, sum.Unfinished)
	require.Equal(t, int64(10+1+23+10+40+6+1+1+2+4), sum.Accepted,
		"five intents over HTTP in a batch, one alone, the long SMS, the intent with its own callback_url, two with a sender, "+
			"and the SMS sent while sms/acme drained")
	// On its own cluster the demo made the console a login, with a
	// password of the cluster's life; the console answered.
	require.NotNil(t, sum.Console)
	require.Equal(t, demo.ConsoleLogin, sum.Console.Login)
	require.NotEmpty(t, sum.Console.Password)
	require.Equal(t, http.StatusOK, sum.Console.Status)
	require.Equal(t, 10+5, sum.Duplicates, "the repeats never exceed the users")
	require.NotNil(t, sum.Providers)
	require.Empty(t, sum.Providers.Skipped)
	require.Positive(t, sum.Providers.FailedOver)
	require.Contains(t, sum.Commands[0], "-keep", "the commands say how to keep the database")

	// The cluster is gone: nothing answers at its URL any more.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, sum.DatabaseURL)
	if err == nil {
		conn.Close(ctx)
	}
	require.Error(t, err)
}

// TestDemoCmd_ExportsSpansEndToEnd runs the demo exporting to a
// loopback OTLP receiver and follows one order, submitted through the Go
// client, SMS through an HTTP provider that sent a receipt, with status
// callbacks to its producer, through its spans: the client's submit span
// (the producer's trace), each attempt a child of its claim and linked to
// the submit span, a completion batch linked to the delivered attempt, the
// receipts batch that set its delivery status, and the callbacks linked to
// the submit span. Every attribute exported, of every span, is checked
// against a deny list of personal data, secrets and payloads.
func TestDemoCmd_ExportsSpansEndToEnd(t *testing.T) {
	t.Parallel()
	recv := oteltest.NewReceiver(t)
	dbURL := pgtemp.NewDatabase(t)
	_, stderr, err := run(t, map[string]string{"DATABASE_URL": dbURL}, "demo", "--json", "-users", "40",
		"-otlp-endpoint", recv.URL())
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "tracing on")
	spans := recv.Spans() // the demo flushed them before it returned

	// The order: an SMS route delivered by sms/acme or sms/backup (their
	// receipts come over HTTP), with a delivered status from its receipt
	// and its published and delivered callbacks sent.
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var nid, rid string
	require.NoError(t, pool.QueryRow(ctx, `
SELECT rt.notification_id, rt.route_id
FROM herald.routes rt JOIN herald.records r USING (notification_id)
WHERE r.request_id LIKE '%:order:%' AND rt.channel = 'sms' AND rt.delivery_status = 'delivered'
    AND rt.providers[cardinality(rt.providers)] IN ('sms/acme', 'sms/backup')
    AND (SELECT count(*) FROM herald.records c JOIN herald.routes cr USING (notification_id)
         WHERE c.idempotency_key IN ('callback:' || rt.notification_id || ':' || rt.route_id || ':published',
                                     'callback:' || rt.notification_id || ':' || rt.route_id || ':delivered')
           AND cr.status = 'published') = 2
ORDER BY rt.notification_id
LIMIT 1`).Scan(&nid, &rid))
	callbackIDs := map[string]bool{}
	rows, err := pool.Query(ctx, `SELECT notification_id FROM herald.records WHERE idempotency_key LIKE $1`,
		"callback:"+nid+":"+rid+":%")
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		callbackIDs[id] = true
	}
	require.NoError(t, rows.Err())

	byID := map[string]oteltest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	linksTo := func(s oteltest.Span, spanID string) bool {
		for _, l := range s.Links {
			if l.SpanID == spanID {
				return true
			}
		}
		return false
	}

	// submit → claim → attempt(s): every attempt of the route is a child
	// of a claim of channel sms and links to the one submit span.
	var attempts []oteltest.Span
	for _, s := range spans {
		if s.Name == "herald.attempt" && s.Attrs["herald.notification_id"] == nid && s.Attrs["herald.route_id"] == rid {
			attempts = append(attempts, s)
		}
	}
	require.NotEmpty(t, attempts, "the route's attempts")
	require.Len(t, attempts[0].Links, 1)
	submit, ok := byID[attempts[0].Links[0].SpanID]
	require.True(t, ok, "the submit span the attempt links to was exported")
	require.Equal(t, "herald.SubmitMany", submit.Name)
	require.Equal(t, attempts[0].Links[0].TraceID, submit.TraceID)
	var delivered oteltest.Span
	for _, a := range attempts {
		claim, ok := byID[a.ParentSpanID]
		require.True(t, ok, "attempt %s's parent was exported", a.SpanID)
		require.Equal(t, "herald.claim", claim.Name)
		require.Equal(t, a.TraceID, claim.TraceID)
		require.Equal(t, "sms", claim.Attrs["herald.channel"])
		require.True(t, linksTo(a, submit.SpanID), "every attempt links to the submit span")
		require.NotEqual(t, submit.TraceID, a.TraceID, "delivery is a trace of its own, linked")
		if a.Attrs["herald.outcome"] == "delivered" {
			delivered = a
		}
	}
	require.NotEmpty(t, delivered.SpanID, "the delivered attempt")
	require.Contains(t, []string{"sms/acme", "sms/backup"}, delivered.Attrs["herald.provider"])

	// → completion → receipt → callbacks.
	completed, matched := false, false
	callbacks := map[string]bool{}
	for _, s := range spans {
		switch s.Name {
		case "herald.complete":
			completed = completed || linksTo(s, delivered.SpanID)
		case "herald.receipt.match":
			for _, ev := range s.Events {
				matched = matched || (ev.Attrs["herald.notification_id"] == nid && ev.Attrs["herald.route_id"] == rid)
			}
		case "herald.callback":
			if id := s.Attrs["herald.notification_id"]; callbackIDs[id] && s.Attrs["herald.outcome"] == "delivered" {
				require.True(t, linksTo(s, submit.SpanID), "callback %s links to the submit span", id)
				callbacks[id] = true
			}
		}
	}
	require.True(t, completed, "a completion batch links to the delivered attempt")
	require.True(t, matched, "the receipts batch that set the route's delivery status")
	require.GreaterOrEqual(t, len(callbacks), 2, "the published and delivered callbacks, each delivered")

	requireNoPersonalData(t, spans)
}

// denied are the patterns no exported attribute value may match: a phone
// number, an e-mail address, a URL (webhook, callback or provider, with or
// without credentials), the demo's secrets, and its content.
var denied = map[string]*regexp.Regexp{
	"phone number": regexp.MustCompile(`\+[1-9]\d{7,14}\b`),
	"e-mail":       regexp.MustCompile(`[^\s@]+@[^\s@]+\.[^\s@]+`),
	"url":          regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://`),
	"secret":       regexp.MustCompile(`(?i)whsec_|\bhk_[a-z0-9_-]{8}|demo-sms-|demo-backup-|demo-pw|bearer |token=`),
	"payload": regexp.MustCompile(`(?i)your order|has shipped|on its way|good news|new arrivals|INV-\d|amount_cents|` +
		`reminder:|your code is|new password`),
}

// messageID is the form of the Message-ID herald's SMTP driver gives an
// e-mail (an e-mail's provider message id): random, at the sender's
// domain, the demo's From; it holds nothing of the recipient's.
var messageID = regexp.MustCompile(`^herald\.[0-9a-f]{32}@example\.test$`)

// requireNoPersonalData checks every attribute of every span, link, event
// and resource against denied.
func requireNoPersonalData(t *testing.T, spans []oteltest.Span) {
	t.Helper()
	require.NotEmpty(t, spans)
	require.Empty(t, personalData(spans))
}

// personalData returns a line for every attribute value denied matches.
func personalData(spans []oteltest.Span) []string {
	var found []string
	check := func(where string, attrs map[string]string) {
		for k, v := range attrs {
			if k == "herald.provider_message_id" && messageID.MatchString(v) {
				continue
			}
			for what, re := range denied {
				if re.MatchString(v) {
					found = append(found, fmt.Sprintf("%s attribute %s=%q looks like a %s", where, k, v, what))
				}
			}
		}
	}
	for _, s := range spans {
		check(s.Name, s.Attrs)
		check(s.Name+" resource", s.Resource)
		for _, l := range s.Links {
			check(s.Name+" link", l.Attrs)
		}
		for _, ev := range s.Events {
			check(s.Name+" event "+ev.Name, ev.Attrs)
		}
	}
	return found
}

func TestPersonalData_FoundInEverySpanPlace(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"+254712345678", "ann@example.com", "http://127.0.0.1:9/hook", "whsec_abc",
		"hk_0123456789abcdef", "Bearer x", "Your code is 123456", `{"invoice":"INV-0001"}`} {
		attrs := map[string]string{"k": v}
		for _, s := range []oteltest.Span{{Attrs: attrs}, {Resource: attrs},
			{Links: []oteltest.Link{{Attrs: attrs}}}, {Events: []oteltest.Event{{Attrs: attrs}}}} {
			require.NotEmpty(t, personalData([]oteltest.Span{s}), "%q", v)
		}
	}
	clean := oteltest.Span{Name: "herald.attempt", Attrs: map[string]string{"herald.channel": "sms",
		"herald.notification_type": "password.reset", "herald.attempt": "int_value:2",
		"herald.provider_message_id": "herald.97aa67d452aaa16cbdfac9c3df5cf130@example.test"}}
	require.Empty(t, personalData([]oteltest.Span{clean}))
}

func TestDemoCmd_RefusesNonHTTPOTLPEndpoint(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, nil, "demo", "-otlp-endpoint", "127.0.0.1:4318")
	var ue usageError
	require.ErrorAs(t, err, &ue)
	require.ErrorContains(t, err, `invalid -otlp-endpoint "127.0.0.1:4318"`)
}

// checkDemoCampaign checks the campaign part: scheduled as one, canceled
// whole in several audited batches, refusing what came after, each figure
// read again from the database.
func checkDemoCampaign(t *testing.T, c *demo.CampaignPart, count func(string, ...any) int64) {
	t.Helper()
	require.NotNil(t, c)
	require.Equal(t, heraldtype.CampaignScheduled, c.Scheduled.State)
	require.Equal(t, int64(c.Intents), c.Scheduled.Notifications)
	require.Equal(t, c.Scheduled.Routes, c.Scheduled.Pending, "nothing of it went out before its send_at")
	require.Equal(t, heraldtype.CampaignCanceled, c.Canceled.State)
	require.Equal(t, c.Scheduled.Routes, c.CanceledRoutes)
	require.Equal(t, c.CanceledRoutes, c.Canceled.Canceled)
	require.Greater(t, c.Batches, 2, "several batches")
	require.Equal(t, c.CanceledRoutes, c.AuditedRoutes)
	require.Contains(t, c.LateRefusal, string(heraldtype.CodeCampaignCanceled))
	require.Equal(t, c.CanceledRoutes, count(`SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id)
		WHERE r.producer = $1 AND r.campaign = $2 AND rt.status = 'canceled'`, c.Producer, c.Campaign))
	require.Equal(t, int64(c.Intents), count(`SELECT count(*) FROM herald.records WHERE producer = $1 AND campaign = $2`,
		c.Producer, c.Campaign), "the late intent was not stored")
	require.Equal(t, c.AuditRows, count(`SELECT count(*) FROM herald.audit_log WHERE action = 'campaign_cancel'
		AND filter ->> 'campaign' = $1 AND reason = 'spring sale postponed'`, c.Campaign))
}

// checkDemoContentDoors checks the evasions through each door and the
// hostile templates against the database.
func checkDemoContentDoors(t *testing.T, sum *demo.Summary, dbURL string) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(ctx, sql, args...).Scan(&n))
		return n
	}
	n := len(demo.Evasions)
	doors := sum.Content.Doors
	require.Len(t, doors, 3)
	for i, door := range []string{demo.DoorClient, demo.DoorSQL, demo.DoorByHand} {
		require.Equal(t, door, doors[i].Door)
		require.Equal(t, n, doors[i].Tried, door)
		require.Equal(t, n, doors[i].Refused, "%s: %s", door, doors[i].How)
		require.Zero(t, doors[i].Delivered, door)
	}
	require.Contains(t, doors[0].How, "content_blocked")
	// Nothing of the client's evasions was stored; the SQL door's are kept
	// as content_blocked; the rows written by hand are content_blocked dead
	// letters, never published.
	require.Zero(t, count(`SELECT count(*) FROM herald.records WHERE producer = $1 AND idempotency_key LIKE $2`,
		demo.ContentProducer, sum.RunID+"/evasion-%"))
	require.Equal(t, n, count(`SELECT count(*) FROM herald.malformed_intents WHERE failure_code = 'content_blocked'`))
	require.Equal(t, n, count(`SELECT count(*) FROM herald.dead_letters WHERE failure_classification = 'content_blocked'`))
	require.Equal(t, n, count(`SELECT count(*) FROM herald.routes rt JOIN herald.records r USING (notification_id)
		WHERE r.idempotency_key LIKE 'by-hand-%' AND rt.status = 'dead_letter' AND rt.attempt_count = 0`))
	require.Equal(t, sum.Isolation.ByHand, &doors[2])

	// Two hostile templates, each refused, the process's allocations while
	// each was checked a small fraction of what it would have built.
	require.Len(t, sum.Content.Hostile, 2)
	for _, h := range sum.Content.Hostile {
		require.True(t, h.Refused, h.What)
		require.GreaterOrEqual(t, h.Asks, int64(100_000_000), h.What)
		require.Less(t, h.Allocated, uint64(16<<20), h.What)
	}
	loop, amplify := sum.Content.Hostile[0], sum.Content.Hostile[1]
	require.Contains(t, loop.Where, "validation")
	require.Contains(t, loop.Error, "never a number")
	require.Equal(t, "submit", amplify.Where)
	require.Contains(t, amplify.Error, "over the template's budget")
	require.Equal(t, 1, count(`SELECT count(*) FROM herald.templates WHERE producer = $1 AND name = 'amplify'`, demo.ContentProducer),
		"the amplification passes the check before storing")
	require.Zero(t, count(`SELECT count(*) FROM herald.templates WHERE name = 'loop'`))
	require.Zero(t, count(`SELECT count(*) FROM herald.records WHERE idempotency_key = $1`, sum.RunID+"/amplify"))
}

// checkDemoLongSMS checks the long SMS's line against the database: three
// parts, one receipt (for the last), the route delivered by it.
func checkDemoLongSMS(t *testing.T, l *demo.LongSMSPart, dbURL string) {
	t.Helper()
	require.NotNil(t, l)
	require.Equal(t, demo.LongSMSParts, l.Parts)
	require.Equal(t, "sms/operator", l.Provider)
	require.Equal(t, "published", l.Status)
	require.Equal(t, "delivered", l.DeliveryStatus)
	require.Equal(t, []string{"", "", "delivered"}, l.PartStatuses, "the SMSC's one receipt is for the last part")
	require.Equal(t, map[string]int64{"matched": 1}, l.Receipts, "one receipt, matched; none unmatched")
	require.Equal(t, []string{"sms/operator"}, l.Providers, "sms/legacy, first in its rule, was passed over")
	require.Equal(t, "sms/legacy", l.PassedOver)
	require.Zero(t, l.LegacyAttempts)
	require.Contains(t, l.PassedOverReason, "ESME_RINVPASWD", "its health says why it cannot send")

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var parts, statuses []string
	var status string
	var providers []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT rt.receipt_parts, rt.part_delivery_statuses, rt.delivery_status, rt.providers
		FROM herald.routes rt WHERE rt.recipient_ref = $1`, l.To).Scan(&parts, &statuses, &status, &providers))
	require.Equal(t, l.Providers, providers)
	require.Len(t, parts, demo.LongSMSParts)
	require.Equal(t, l.PartStatuses, statuses)
	require.Equal(t, l.DeliveryStatus, status)
	var last string
	require.NoError(t, pool.QueryRow(ctx, `SELECT d.provider || ' ' || d.provider_message_id FROM herald.delivery_receipts d
		JOIN herald.routes rt USING (notification_id, route_id) WHERE rt.recipient_ref = $1 AND d.state = 'matched'`, l.To).Scan(&last))
	require.Equal(t, parts[len(parts)-1], last, "the receipt carried the last part's id")
}

// checkDemoConsoleOnCall checks the console and on-call parts against the
// database: the console answered at a loopback address and, on a database
// not the demo's own, no login was made and no password shown; sms/acme
// was drained and enabled again by the actor the summary names (two
// audit rows, the last state the summary's), the SMS sent meanwhile went
// to sms/backup alone, and provider health holds the failovers counted.
func checkDemoConsoleOnCall(t *testing.T, sum *demo.Summary, count func(string, ...any) int64) {
	t.Helper()
	c := sum.Console
	require.NotNil(t, c)
	require.True(t, strings.HasPrefix(c.URL, "http://127.0.0.1:"), c.URL)
	require.Equal(t, http.StatusOK, c.Status, "the console's sign-in page answered")
	require.Empty(t, c.Password, "no password on a database not the demo's own")
	require.Zero(t, count(`SELECT count(*) FROM pg_roles WHERE rolname = $1`, demo.ConsoleLogin))

	o := sum.OnCall
	require.NotNil(t, o)
	require.Empty(t, o.Skipped)
	require.Equal(t, "sms/acme", o.Provider)
	require.Equal(t, "draining", o.StateDrained)
	require.Equal(t, "enabled", o.StateNow)
	require.Equal(t, int64(1), count(`SELECT count(*) FROM herald.audit_log WHERE action = 'provider_state' AND actor = $1
		AND filter ->> 'provider' = $2 AND details ->> 'state' = 'draining' AND reason = $3`, o.Actor, o.Provider, o.Reason))
	require.Equal(t, int64(2), count(`SELECT count(*) FROM herald.audit_log WHERE action = 'provider_state' AND actor = $1`, o.Actor))
	require.Equal(t, int64(1), count(`SELECT count(*) FROM (SELECT details ->> 'state' AS state FROM herald.audit_log
		WHERE action = 'provider_state' AND filter ->> 'provider' = $1 ORDER BY id DESC LIMIT 1) l WHERE state = $2`, o.Provider, o.StateNow))
	require.Equal(t, 4, o.Sent)
	require.Equal(t, int64(o.ToBackup), count(`SELECT count(*) FROM herald.routes rt JOIN herald.records r ON r.notification_id = rt.notification_id
		WHERE r.request_id = $1 AND rt.channel = 'sms' AND rt.providers = ARRAY['sms/backup'] AND rt.status = 'published'`, sum.RunID+":oncall"))
	require.Positive(t, o.Failovers, "the kenya rule's routes failed over from sms/acme")
	require.Equal(t, o.Failovers, count(`SELECT coalesce(sum(f.v::bigint), 0)::bigint FROM herald.provider_health h
		CROSS JOIN LATERAL jsonb_each_text(h.failovers) AS f(k, v) WHERE h.provider = $1`, o.Provider))
	// The first on-call SMS, found by its number as typed with spaces.
	require.Equal(t, int64(o.Found), count(`SELECT count(*) FROM herald.routes WHERE recipient_ref = $1`,
		strings.ReplaceAll(o.Recipient, " ", "")))
	require.Equal(t, 1, o.Found)
	require.Equal(t, "published", o.FoundStatus)
	// The demo's engine recorded itself, ready, and marked its row stopped
	// when the demo stopped it.
	require.Equal(t, 1, o.Processes)
	require.Equal(t, 1, o.Ready)
	require.Equal(t, int64(1), count(`SELECT count(*) FROM herald.serve_processes WHERE stopped_at IS NOT NULL`))
}
