package herald_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/wake"
)

func TestNewClient_RefusesBadConfigNamingField(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := herald.NewClient(b.pool, &herald.Config{IdempotencyWindow: time.Millisecond})
	require.ErrorContains(t, err, "IdempotencyWindow")
	_, err = herald.NewClient(b.pool, &herald.Config{Limits: herald.Limits{MaxRoutes: -1}})
	require.ErrorContains(t, err, "Limits.MaxRoutes")
	_, err = herald.NewClient(nil, nil)
	require.Error(t, err)
}

func TestClient_SubmitStoresRoutePerRecipient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	before := time.Now()
	rcpt, err := b.client.Submit(ctx, newIntent("k1"))
	require.NoError(t, err)
	require.False(t, rcpt.Duplicate)
	require.Len(t, rcpt.RouteIDs, routesPerIntent)
	require.WithinDuration(t, before, rcpt.AcceptedAt, time.Minute)
	require.Equal(t, 1, b.records(t))
	require.Equal(t, routesPerIntent, b.routes(t))

	n, err := b.client.Get(ctx, rcpt.NotificationID)
	require.NoError(t, err)
	require.Equal(t, rcpt.NotificationID, n.ID)
	require.Equal(t, "order.shipped", n.Type)
	require.Equal(t, "shop", n.Producer)
	require.Equal(t, "k1", n.IdempotencyKey)
	require.Equal(t, "mixed", n.AudienceKind)
	require.Equal(t, []string{"42"}, n.UserIDs)
	require.Equal(t, []string{"sms", "email", "webhook"}, n.Channels)
	require.Equal(t, herald.PriorityTransactional, n.Priority)
	require.Equal(t, "req-1", n.RequestID)
	require.Equal(t, rcpt.AcceptedAt, n.AcceptedAt)
	require.WithinDuration(t, n.AcceptedAt.Add(herald.DefaultIdempotencyWindow), n.IdempotencyExpiresAt, time.Second)
	content := n.Content // typed as the intent's
	require.Equal(t, "Order 9 shipped", content.SMS.Body)
	require.Equal(t, "Order 9 shipped", content.Email.Subject)
	require.JSONEq(t, `{"order":9}`, string(content.Webhook))

	require.Len(t, n.Routes, routesPerIntent)
	ids := make([]string, len(n.Routes))
	for i, r := range n.Routes {
		ids[i] = r.ID
		require.Equal(t, herald.RouteStatusPending, r.Status)
		require.Zero(t, r.Attempts)
		require.Zero(t, r.MaxAttempts) // the channel's default
		require.NotNil(t, r.NextAttemptAt)
		require.Equal(t, n.AcceptedAt, *r.NextAttemptAt)
		require.Empty(t, r.LastError)
		require.Nil(t, r.LastErrorAt)
		if r.Channel == "sms" {
			require.Equal(t, "gsm7", r.SMSEncoding)
			require.Equal(t, 1, r.SMSSegments)
		}
	}
	require.ElementsMatch(t, rcpt.RouteIDs, ids)
}

func TestClient_SubmitSchedulesSendAtAndExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b := setup(t, func(c *herald.Config) { c.NowFunc = func() time.Time { return now } })

	in := smallIntent(1)
	in.SendAt = now.Add(time.Hour)
	in.ExpiresAt = now.Add(2 * time.Hour)
	in.Priority = herald.PriorityBulk
	in.MaxAttempts = 7
	rcpt, err := b.client.Submit(ctx, in)
	require.NoError(t, err)
	require.Equal(t, now, rcpt.AcceptedAt.UTC())

	n, err := b.client.Get(ctx, rcpt.NotificationID)
	require.NoError(t, err)
	require.Equal(t, herald.PriorityBulk, n.Priority)
	require.Equal(t, in.SendAt, n.SendAt.UTC())
	require.Equal(t, now.Add(48*time.Hour), n.IdempotencyExpiresAt.UTC())
	require.Len(t, n.Routes, 1)
	r := n.Routes[0]
	require.Equal(t, in.SendAt, r.NextAttemptAt.UTC())
	require.Equal(t, in.ExpiresAt, r.ExpiresAt.UTC())
	require.Equal(t, 7, r.MaxAttempts)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.routes WHERE priority = 1"))
}

func TestClient_SubmitRacingSameIntentStoresOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	const n = 64
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		rcpts = make([]*herald.Receipt, n)
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			in := newIntent("race")
			in.RequestID = fmt.Sprintf("retry-%d", i) // not part of the fingerprint
			rcpts[i], errs[i] = b.client.Submit(ctx, in)
		})
	}
	close(start)
	wg.Wait()

	fresh := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, rcpts[0].NotificationID, rcpts[i].NotificationID)
		require.Equal(t, rcpts[0].RouteIDs, rcpts[i].RouteIDs)
		if !rcpts[i].Duplicate {
			fresh++
		}
	}
	require.Equal(t, 1, fresh, "exactly one caller stored it")
	require.Equal(t, 1, b.records(t))
	require.Equal(t, routesPerIntent, b.routes(t))
}

func TestClient_SubmitKeyConflictNamesOriginal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	orig, err := b.client.Submit(ctx, newIntent("k"))
	require.NoError(t, err)

	changed := newIntent("k")
	changed.Content.SMS.Body = "Order 9 delayed"
	rcpt, err := b.client.Submit(ctx, changed)
	require.Nil(t, rcpt)
	require.ErrorIs(t, err, herald.ErrIdempotencyConflict)
	var cerr *herald.ConflictError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, orig.NotificationID, cerr.ExistingID)
	require.Equal(t, "shop", cerr.Producer)
	require.Equal(t, "k", cerr.IdempotencyKey)
	require.Contains(t, err.Error(), orig.NotificationID)

	require.Equal(t, 1, b.records(t))
	require.Equal(t, routesPerIntent, b.routes(t))
}

func TestClient_SubmitAgainReturnsDuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	orig, err := b.client.Submit(ctx, newIntent("k"))
	require.NoError(t, err)
	again := newIntent("k")
	again.RequestID = "req-2"                            // retry-only field
	again.Audience.Email = []string{"ops@EXAMPLE.com"}   // normalizes to the same
	again.Channels = []string{"webhook", "email", "sms"} // order does not matter
	dup, err := b.client.Submit(ctx, again)
	require.NoError(t, err)
	require.True(t, dup.Duplicate)
	require.Equal(t, orig.NotificationID, dup.NotificationID)
	require.Equal(t, orig.AcceptedAt, dup.AcceptedAt)
	require.Equal(t, orig.RouteIDs, dup.RouteIDs)
	require.Equal(t, 1, b.records(t))
}

func TestClient_SubmitKeysScopedByProducer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	a, err := b.client.Submit(ctx, newIntent("k"))
	require.NoError(t, err)
	other := newIntent("k")
	other.Producer = "billing"
	o, err := b.client.Submit(ctx, other)
	require.NoError(t, err)
	require.False(t, o.Duplicate)
	require.NotEqual(t, a.NotificationID, o.NotificationID)
}

func TestClient_SubmitRefusesInvalidNamingField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, func(c *herald.Config) { c.Limits.MaxSMSSegments = 1 })

	in := newIntent("bad")
	in.Audience.SMS = []string{"+1999876"}
	in.Audience.Webhook = []string{"ftp://example.com/x"}
	in.Channels = append(in.Channels, "pigeon")
	in.Content.SMS.Body = string(make([]byte, 200)) // 200 NULs: refused as text
	_, err := b.client.Submit(ctx, in)
	var verr *herald.ValidationError
	require.ErrorAs(t, err, &verr)
	got := map[string]herald.Code{}
	for _, fe := range verr.Errors {
		got[fe.Field] = fe.Code
	}
	require.Equal(t, herald.CodeInvalidPhone, got["audience.sms[0]"])
	require.Equal(t, herald.CodeInvalidURL, got["audience.webhook[0]"])
	require.Equal(t, herald.CodeUnknownChannel, got["channels[3]"])
	require.Equal(t, herald.CodeInvalidField, got["content.sms.body"])
	require.NotContains(t, err.Error(), "999876", "messages never repeat a number")

	long := smallIntent(1)
	long.Content.SMS.Body = fmt.Sprintf("%0200d", 0) // 200 GSM-7 digits: 2 segments
	_, err = b.client.Submit(ctx, long)
	require.ErrorAs(t, err, &verr)
	require.Equal(t, herald.CodeSMSTooLong, verr.Code())
	require.Equal(t, "content.sms.body", verr.Errors[0].Field)

	_, err = b.client.Submit(ctx, nil)
	require.ErrorAs(t, err, &verr)
	require.Equal(t, herald.CodeMissingField, verr.Code())

	require.Zero(t, b.records(t))
}

func TestClient_SubmitTxFollowsCommitAndRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	t.Run("Rollback", func(t *testing.T) {
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		rcpt, err := b.client.SubmitTx(ctx, tx, newIntent("rolled-back"))
		require.NoError(t, err)
		require.Zero(t, b.records(t), "invisible before commit")
		require.NoError(t, tx.Rollback(ctx))
		_, err = b.client.Get(ctx, rcpt.NotificationID)
		require.ErrorIs(t, err, herald.ErrNotFound)
		require.Zero(t, b.records(t))
		require.Zero(t, b.routes(t))
	})
	t.Run("Commit", func(t *testing.T) {
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		rcpt, err := b.client.SubmitTx(ctx, tx, newIntent("committed"))
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		n, err := b.client.Get(ctx, rcpt.NotificationID)
		require.NoError(t, err)
		require.Len(t, n.Routes, routesPerIntent)
		require.Equal(t, 1, b.records(t))
		require.Equal(t, routesPerIntent, b.routes(t))
	})
}

func TestClient_SubmitIgnoresSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	// A decoy schema with tables of herald's names: an unqualified
	// statement would write into them.
	_, err := b.pool.Exec(ctx, `CREATE SCHEMA decoy;
		CREATE TABLE decoy.records (notification_id text);
		CREATE TABLE decoy.routes (notification_id text)`)
	require.NoError(t, err)

	t.Run("SubmitTx", func(t *testing.T) {
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "SET LOCAL search_path = decoy")
		require.NoError(t, err)
		_, err = b.client.SubmitTx(ctx, tx, newIntent("tx"))
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	})
	t.Run("PoolWithOtherSearchPath", func(t *testing.T) {
		cfg, err := pgxpool.ParseConfig(b.dbURL)
		require.NoError(t, err)
		cfg.ConnConfig.RuntimeParams["search_path"] = "decoy"
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		defer pool.Close()
		c, err := herald.NewClient(pool, nil)
		require.NoError(t, err)
		defer c.Close()
		rcpt, err := c.Submit(ctx, newIntent("pool"))
		require.NoError(t, err)
		_, err = c.SubmitMany(ctx, []*herald.Intent{smallIntent(1)})
		require.NoError(t, err)
		n, err := c.Get(ctx, rcpt.NotificationID)
		require.NoError(t, err)
		require.Len(t, n.Routes, routesPerIntent)
		_, err = c.Cancel(ctx, rcpt.NotificationID, nil)
		require.NoError(t, err)
		require.NoError(t, c.UpsertRecipient(ctx, herald.Recipient{UserID: "42"}))
	})
	require.Equal(t, 3, b.records(t))
	require.Zero(t, b.count(t, "SELECT count(*) FROM decoy.records"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM decoy.routes"))
}

func TestClient_SubmitManyStoresValidInOneTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No debounce: each submit's hint rides its own statement, so no
	// trailing hint from another connection joins the count.
	// The content rules are read by the warm-up, and not again within the
	// hour: a slow machine cannot put a reread inside the counts below.
	b := setup(t, func(c *herald.Config) { c.NotifyDebounce = -1; c.ContentRulesMaxAge = time.Hour })

	// Warm up: the pool's one connection so far prepares RecordInsertMany
	// (pgx's statement cache, one extra round trip per connection) and
	// reads the content rules (one statement per ContentRulesMaxAge); the
	// pool hands that idle connection out again below.
	_, err := b.client.SubmitMany(ctx, []*herald.Intent{smallIntent(-1)})
	require.NoError(t, err)
	require.Equal(t, int32(1), b.pool.Stat().TotalConns())

	ins := make([]*herald.Intent, 1000)
	invalid := map[int]string{}
	for i := range ins {
		ins[i] = smallIntent(i)
		if i%100 == 7 {
			ins[i].Audience.SMS = []string{fmt.Sprintf("+999%d", i)}
			invalid[i] = "audience.sms[0]"
		}
	}
	require.Len(t, invalid, 10)

	q0, w0 := b.queries.Load(), b.writes.Load()
	res, err := b.client.SubmitMany(ctx, ins)
	require.NoError(t, err)
	require.Equal(t, int64(1), b.queries.Load()-q0, "one statement")
	require.Equal(t, int64(1), b.writes.Load()-w0, "one round trip")

	require.Len(t, res, 1000)
	ids := map[string]bool{}
	for i, r := range res {
		if field, bad := invalid[i]; bad {
			require.Nil(t, r.Receipt)
			var verr *herald.ValidationError
			require.ErrorAs(t, r.Err, &verr, "intent %d", i)
			require.Len(t, verr.Errors, 1)
			require.Equal(t, field, verr.Errors[0].Field)
			require.Equal(t, herald.CodeInvalidPhone, verr.Errors[0].Code)
			continue
		}
		require.NoError(t, r.Err, "intent %d", i)
		require.False(t, r.Receipt.Duplicate)
		ids[r.Receipt.NotificationID] = true
	}
	require.Len(t, ids, 990)
	require.Equal(t, 991, b.records(t)) // with the warm-up's
	require.Equal(t, 991, b.routes(t))

	// The same batch again: every key exists. The plain insert fails on
	// the first, the ON CONFLICT insert stores nothing, and the lookup
	// reads the existing keys; every valid intent is a duplicate of its
	// first submit. Writes: the three statements, the last two prepared on
	// first use (one more each), and pgx's deallocation of the statement
	// that failed (pgx drops a cached statement on any error).
	q0, w0 = b.queries.Load(), b.writes.Load()
	again, err := b.client.SubmitMany(ctx, ins)
	require.NoError(t, err)
	require.Equal(t, int64(3), b.queries.Load()-q0, "the plain insert, the ON CONFLICT insert, then the lookup of the existing keys")
	require.LessOrEqual(t, b.writes.Load()-w0, int64(6))
	duplicates := func(again []herald.SubmitResult) {
		t.Helper()
		for i, r := range again {
			if _, bad := invalid[i]; bad {
				require.Error(t, r.Err)
				continue
			}
			require.NoError(t, r.Err, "intent %d", i)
			require.True(t, r.Receipt.Duplicate, "intent %d", i)
			require.Equal(t, res[i].Receipt.NotificationID, r.Receipt.NotificationID)
		}
	}
	duplicates(again)
	require.Equal(t, 991, b.records(t))

	// And again, soon after: the client no longer tries the plain insert
	// (accept.DefaultPessimism), so it costs the two statements.
	q0, w0 = b.queries.Load(), b.writes.Load()
	again, err = b.client.SubmitMany(ctx, ins)
	require.NoError(t, err)
	require.Equal(t, int64(2), b.queries.Load()-q0, "the ON CONFLICT insert, then the lookup")
	require.Equal(t, int64(2), b.writes.Load()-w0)
	duplicates(again)
	require.Equal(t, 991, b.records(t))
}

func TestClient_SubmitManyResolvesRepeatedKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	results := map[string]int{}
	b := setup(t, func(c *herald.Config) {
		c.ResultFunc = func(producer, result string) {
			mu.Lock()
			defer mu.Unlock()
			results[producer+" "+result]++
		}
	})
	prior, err := b.client.Submit(ctx, smallIntent(1))
	require.NoError(t, err)

	changed := smallIntent(2)
	changed.Content.SMS.Body = "something else"
	res, err := b.client.SubmitMany(ctx, []*herald.Intent{
		smallIntent(2), smallIntent(2), changed, // new, duplicate, conflict
		smallIntent(1), // duplicate of a prior submit
	})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.False(t, res[0].Receipt.Duplicate)
	require.NoError(t, res[1].Err)
	require.True(t, res[1].Receipt.Duplicate)
	require.Equal(t, res[0].Receipt.NotificationID, res[1].Receipt.NotificationID)
	var cerr *herald.ConflictError
	require.ErrorAs(t, res[2].Err, &cerr)
	require.Equal(t, res[0].Receipt.NotificationID, cerr.ExistingID)
	require.True(t, res[3].Receipt.Duplicate)
	require.Equal(t, prior.NotificationID, res[3].Receipt.NotificationID)
	require.Equal(t, 2, b.records(t))

	_, err = b.client.SubmitMany(ctx, []*herald.Intent{nil})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{
		"auth accepted": 2, "auth duplicate": 2, "auth conflict": 1, " invalid": 1,
	}, results)
}

func TestClient_SubmitManyAllInvalidSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	q0 := b.queries.Load()
	res, err := b.client.SubmitMany(context.Background(), []*herald.Intent{nil, {}})
	require.NoError(t, err)
	require.Error(t, res[0].Err)
	require.Error(t, res[1].Err)
	require.Equal(t, q0, b.queries.Load())
}

func TestClient_GetUnknownIsErrNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := b.client.Get(context.Background(), "no-such-id")
	require.ErrorIs(t, err, herald.ErrNotFound)
}

func TestClient_GetShowsProviderPerAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	rcpt, err := b.client.Submit(ctx, newIntent("k1"))
	require.NoError(t, err)

	// The dispatcher's own statements: the SMS routes fail on sms/acme and
	// fail over to sms/backup, which publishes them; email has no
	// providers (serve's configured driver); webhook is not attempted.
	require.Equal(t, 2, operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{
		Provider: "sms/acme", Status: "failed", Classification: "transient", Message: "HTTP 503"}))
	require.Equal(t, 2, operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{
		Provider: "sms/backup", Status: "published", ProviderMessageID: "bk-1"}))
	require.Equal(t, 2, operatortest.Deliver(t, b.pool, "email", operatortest.Attempt{Status: "published"}))

	check := func(n *herald.Notification) {
		t.Helper()
		require.Len(t, n.Routes, routesPerIntent)
		for _, r := range n.Routes {
			switch r.Channel {
			case herald.ChannelSMS:
				require.Equal(t, herald.RouteStatusPublished, r.Status, r.ID)
				require.Equal(t, 2, r.Attempts)
				require.Equal(t, []string{"sms/acme", "sms/backup"}, r.Providers, "in attempt order")
				require.Equal(t, "sms/backup", r.Provider(), "the one that published it")
				require.Equal(t, "bk-1", r.ProviderMessageID)
			case herald.ChannelEmail:
				require.Equal(t, herald.RouteStatusPublished, r.Status, r.ID)
				require.Empty(t, r.Providers, "a channel without providers records none")
				require.Empty(t, r.Provider())
			default:
				require.Equal(t, herald.RouteStatusPending, r.Status, r.ID)
				require.Empty(t, r.Providers, "no attempt yet")
			}
		}
	}
	n, err := b.client.Get(ctx, rcpt.NotificationID)
	require.NoError(t, err)
	check(n)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	n, err = b.client.GetTx(ctx, tx, rcpt.NotificationID)
	require.NoError(t, err)
	check(n)
}

func TestClient_CancelOpenRoutesAudited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, func(c *herald.Config) { c.Actor = "shop-service" })

	rcpt, err := b.client.Submit(ctx, newIntent("k"))
	require.NoError(t, err)
	// One route already delivered: Cancel must leave it alone. (Test-only
	// SQL standing in for the dispatcher.)
	published := rcpt.RouteIDs[0]
	_, err = b.pool.Exec(ctx, `UPDATE herald.routes SET status = 'published', next_attempt_at = NULL,
		published_at = now() WHERE route_id = $1`, published)
	require.NoError(t, err)

	res, err := b.client.Cancel(ctx, rcpt.NotificationID, &herald.CancelOpts{Reason: "order canceled"})
	require.NoError(t, err)
	require.Equal(t, rcpt.NotificationID, res.NotificationID)
	require.Len(t, res.Canceled, routesPerIntent-1)
	for _, c := range res.Canceled {
		require.NotEqual(t, published, c.RouteID)
		require.NotEmpty(t, c.Channel)
	}

	n, err := b.client.Get(ctx, rcpt.NotificationID)
	require.NoError(t, err)
	for _, r := range n.Routes {
		if r.ID == published {
			require.Equal(t, herald.RouteStatusPublished, r.Status)
			continue
		}
		require.Equal(t, herald.RouteStatusCanceled, r.Status)
		require.NotNil(t, r.CanceledAt)
		require.Nil(t, r.NextAttemptAt)
	}

	var actor, action, reason string
	var affected int
	var filter, details []byte
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT actor, action, reason, affected, filter, details
		FROM herald.audit_log`).Scan(&actor, &action, &reason, &affected, &filter, &details))
	require.Equal(t, "shop-service", actor)
	require.Equal(t, "cancel", action)
	require.Equal(t, "order canceled", reason)
	require.Equal(t, routesPerIntent-1, affected)
	require.JSONEq(t, fmt.Sprintf(`{"notification_id": %q}`, rcpt.NotificationID), string(filter))
	require.Contains(t, string(details), res.Canceled[0].RouteID)

	t.Run("AgainCancelsNothing", func(t *testing.T) {
		res, err := b.client.Cancel(ctx, rcpt.NotificationID, &herald.CancelOpts{Actor: "ops"})
		require.NoError(t, err)
		require.Empty(t, res.Canceled)
		require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.audit_log WHERE actor = 'ops' AND affected = 0"))
	})
	t.Run("UnknownIsErrNotFound", func(t *testing.T) {
		_, err := b.client.Cancel(ctx, "no-such-id", nil)
		require.ErrorIs(t, err, herald.ErrNotFound)
		require.Equal(t, 2, b.count(t, "SELECT count(*) FROM herald.audit_log"))
	})
}

func TestClient_UpsertRecipientNormalizes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)

	require.NoError(t, b.client.UpsertRecipient(ctx, herald.Recipient{
		UserID: "42", Email: "Ann <ann@EXAMPLE.com>", Phone: "+1 415 555 0123",
		WebhookURL: "HTTPS://Hooks.Example.com/u/42", Locale: "pt-BR", OptedOut: []string{"sms", "email", "sms"},
	}))
	type row struct {
		email, phone, url, locale string
		opted                     []string
	}
	get := func() row {
		var r row
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT email, phone, webhook_url, locale, opted_out
			FROM herald.recipients WHERE user_id = '42'`).Scan(&r.email, &r.phone, &r.url, &r.locale, &r.opted))
		return r
	}
	require.Equal(t, row{"ann@example.com", "+14155550123", "https://hooks.example.com/u/42", "pt-BR", []string{"email", "sms"}}, get())

	require.NoError(t, b.client.UpsertRecipient(ctx, herald.Recipient{UserID: "42", Email: "new@example.com"}))
	require.Equal(t, row{"new@example.com", "", "", "", []string{}}, get())

	err := b.client.UpsertRecipient(ctx, herald.Recipient{Phone: "0415", Email: "nope", WebhookURL: "ftp://x", OptedOut: []string{"fax"}})
	var verr *herald.ValidationError
	require.ErrorAs(t, err, &verr)
	got := map[string]herald.Code{}
	for _, fe := range verr.Errors {
		got[fe.Field] = fe.Code
	}
	require.Equal(t, map[string]herald.Code{
		"user_id": herald.CodeMissingField, "phone": herald.CodeInvalidPhone, "email": herald.CodeInvalidEmail,
		"webhook_url": herald.CodeInvalidURL, "opted_out[0]": herald.CodeUnknownChannel,
	}, got)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM herald.recipients"))
}

// listener LISTENs on the dispatchers' topic (herald_routes and the
// database's secret) on a connection of its own, as the engine does.
func listener(t *testing.T, b *testBundle) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), b.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	topic, err := store.New().NotifyTopic(context.Background(), conn, wake.RoutesTopic)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), "LISTEN "+pgx.Identifier{topic}.Sanitize())
	require.NoError(t, err)
	return conn
}

// hints waits (up to 5 s) for want herald_routes notifications, then
// 150 ms more for any extra one, and returns the payloads received.
func hints(t *testing.T, conn *pgx.Conn, want int) []string {
	t.Helper()
	var got []string
	for {
		wait := 5 * time.Second
		if len(got) >= want {
			wait = 150 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		if err != nil {
			require.True(t, errors.Is(err, context.DeadlineExceeded) || pgconnTimeout(err), "%v", err)
			return got
		}
		got = append(got, n.Payload)
	}
}

// pgconnTimeout reports a timeout of WaitForNotification.
func pgconnTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func TestClient_SubmitBurstLeadingHintPerWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A window far longer than the test: only the leading hint can arrive.
	b := setup(t, func(c *herald.Config) { c.NotifyDebounce = time.Hour })
	conn := listener(t, b)

	for i := range 20 {
		_, err := b.client.Submit(ctx, smallIntent(i))
		require.NoError(t, err)
	}
	require.Equal(t, []string{"sms"}, hints(t, conn, 1))
}

func TestClient_SubmitBurstTrailingHint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A window the five submits fit in even on a loaded machine, and short
	// enough for hints to wait out its trailing hint.
	b := setup(t, func(c *herald.Config) { c.NotifyDebounce = 3 * time.Second })
	conn := listener(t, b)

	_, err := b.client.Submit(ctx, smallIntent(1)) // leading: sms
	require.NoError(t, err)
	for i := range 5 { // within the window: one trailing hint, mixed channels
		_, err := b.client.Submit(ctx, newIntent(fmt.Sprint(i)))
		require.NoError(t, err)
	}
	require.Equal(t, []string{"sms", ""}, hints(t, conn, 2))
}

func TestClient_SubmitNoDebounceHintsEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, func(c *herald.Config) { c.NotifyDebounce = -1 })
	conn := listener(t, b)
	for i := range 3 {
		_, err := b.client.Submit(ctx, smallIntent(i))
		require.NoError(t, err)
	}
	require.Len(t, hints(t, conn, 3), 3)

	_, err := b.client.Submit(ctx, smallIntent(1)) // a duplicate: no new route
	require.NoError(t, err)
	require.Empty(t, hints(t, conn, 0))
}

func TestClient_SubmitTxHintRidesCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, func(c *herald.Config) { c.NotifyDebounce = -1 })
	conn := listener(t, b)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = b.client.SubmitTx(ctx, tx, smallIntent(1))
	require.NoError(t, err)
	require.Empty(t, hints(t, conn, 0), "no hint before commit")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, []string{"sms"}, hints(t, conn, 1))

	tx, err = b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = b.client.SubmitTx(ctx, tx, smallIntent(2))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Empty(t, hints(t, conn, 0), "no hint after rollback")
}

func TestClient_SubmitTxHintsInsideDebounce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A window far longer than the test: a debounced submit would send nothing.
	b := setup(t, func(c *herald.Config) { c.NotifyDebounce = time.Hour })
	conn := listener(t, b)

	_, err := b.client.Submit(ctx, smallIntent(1)) // opens the window
	require.NoError(t, err)
	require.Equal(t, []string{"sms"}, hints(t, conn, 1))

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = b.client.SubmitTx(ctx, tx, smallIntent(2))
	require.NoError(t, err)
	require.Empty(t, hints(t, conn, 0), "no hint before commit")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, []string{"sms"}, hints(t, conn, 1), "the committed routes are hinted at once")
}

func TestConfig_SetsKeyWindowAndPayloadLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, func(c *herald.Config) {
		c.IdempotencyWindow = time.Hour
		c.Limits.MaxPayloadBytes = 200
	})

	rcpt, err := b.client.Submit(ctx, smallIntent(1))
	require.NoError(t, err)
	n, err := b.client.Get(ctx, rcpt.NotificationID)
	require.NoError(t, err)
	require.Equal(t, n.AcceptedAt.Add(time.Hour), n.IdempotencyExpiresAt)

	big := smallIntent(2)
	big.Content.SMS.Body = fmt.Sprintf("%0300d", 0)
	_, err = b.client.Submit(ctx, big)
	var verr *herald.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, herald.CodeTooLarge, verr.Code())
	require.Equal(t, "content", verr.Errors[0].Field)
}
