package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// outageProviders is the staged outage's providers file: a primary that
// fails and a backup, one failover rule, circuits that open after two
// attempts and cool down in a second.
const outageProviders = `
providers:
  - name: sms/primary
    driver: sms-http
    timeout: 1s
    circuit: {failure_ratio: 0.5, min_attempts: 2, cooldown: 1s}
    sms_http: {url: %q, api_key: {env: PRIMARY_KEY}}
  - name: sms/backup
    driver: sms-http
    sms_http: {url: %q, api_key: {env: BACKUP_KEY}}
rules:
  sms:
    - {name: all, providers: [sms/primary, sms/backup]}
`

// failingProvider is a loopback SMS provider that answers HTTP 500 to its
// first errors requests and then hangs (until the caller gives up).
func failingProvider(t *testing.T, errors int64) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	done := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= errors {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(done) }) // first: Close waits for the handlers
	return s
}

func okProvider(t *testing.T) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprint(n.Add(1))})
	}))
	t.Cleanup(s.Close)
	return s
}

// startEngine runs an engine on b's database, with the SQL door, until the
// test ends. It returns the engine's logs (JSON lines).
func startEngine(t *testing.T, b *opBundle, getenv map[string]string) *lockedBuffer {
	t.Helper()
	logs := &lockedBuffer{}
	e, err := engine.New(b.pool, &engine.Config{
		Logger:     slog.New(slog.NewJSONHandler(logs, nil)),
		GetenvFunc: func(k string) string { return getenv[k] },
		Dispatch:   dispatch.Config{PollInterval: 50 * time.Millisecond},
		Intake:     &sqldoor.WorkerConfig{PollInterval: 50 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return logs
}

// submitSMS puts SMS intents of producer, one per key, on the SQL door.
func submitSMS(t *testing.T, b *opBundle, producer string, keys ...string) {
	t.Helper()
	var bodies []string
	for _, k := range keys {
		bodies = append(bodies, fmt.Sprintf(`{"notification_type":"otp.sent","producer":%q,"idempotency_key":%q,
			"channels":["sms"],"audience":{"sms":["+254712345678"]},"content":{"sms":{"body":"Your code is 1234"}}}`, producer, k))
	}
	_, err := benchstore.New().IntakeInsertReturning(context.Background(), b.pool, bodies)
	require.NoError(t, err)
}

// deadLetters seeds n dead letters of producer whose last attempt was
// provider's, with classification.
func deadLetters(t *testing.T, b *opBundle, n int, producer, provider, classification string) {
	t.Helper()
	for _, r := range operatortest.Seed(t, b.pool, operatortest.Spec{N: n, Channel: "sms", Producer: producer, Dead: true}) {
		_, err := b.pool.Exec(context.Background(), `UPDATE herald.dead_letters SET provider = $3, failure_classification = $4
			WHERE notification_id = $1 AND route_id = $2`, r.NotificationID, r.RouteID, provider, classification)
		require.NoError(t, err)
	}
}

// TestOnCall_StagedOutageAnsweredOneCommandEach stages a provider outage
// (the primary answers HTTP 500, then hangs; routes fail over to the
// backup; dead letters pile up; a malformed entry comes in through the SQL
// door) and answers each question the person on call asks with one herald
// command.
func TestOnCall_StagedOutageAnsweredOneCommandEach(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	primary, backup := failingProvider(t, 3), okProvider(t)
	file := writeProviders(t, fmt.Sprintf(outageProviders, primary.URL+"/send", backup.URL+"/send"))
	_, stderr, code := execute(t, b.env, "providers", "apply", "-f", file, "-reason", "setup")
	require.Zero(t, code, stderr)
	// Dead letters of earlier attempts at the primary (seeded before the
	// engine runs, which would otherwise deliver the seed's routes).
	deadLetters(t, b, 3, "billing", "sms/primary", "http_500")
	deadLetters(t, b, 2, "billing", "sms/primary", "invalid_destination")
	deadLetters(t, b, 1, "shop", "sms/primary", "timeout")
	logs := startEngine(t, b, map[string]string{"PRIMARY_KEY": "k1", "BACKUP_KEY": "k2"})
	// A circuit counts the attempts of the two-second health buckets after
	// the one it was created in: fail the primary's in the next one.
	time.Sleep(2100 * time.Millisecond)

	keys := []string{"t-1", "t-2", "t-3", "t-4", "t-5", "t-6"}
	submitSMS(t, b, "shop", keys...)
	_, err := benchstore.New().IntakeInsertReturning(context.Background(), b.pool, []string{`{"producer": "shop", "channels": "sms"`})
	require.NoError(t, err)

	// Every intent is published by the backup, most (if not all) after
	// the primary failed them.
	for _, k := range keys {
		var st operator.Status
		require.Eventually(t, func() bool {
			out, _, err := run(t, b.env, "find", "-producer", "shop", "-key", k, "--json")
			return err == nil && json.Unmarshal([]byte(out), &st) == nil && st.Routes[0].Status == "published"
		}, 30*time.Second, 100*time.Millisecond, "intent %s", k)
		require.Equal(t, "sms/backup", st.Routes[0].Providers[len(st.Routes[0].Providers)-1])
	}

	// 5. A support ticket's producer and key: the notification's story.
	var found operator.Status
	runJSON(t, b.env, &found, "find", "-producer", "shop", "-key", "t-1")
	require.Equal(t, "t-1", found.Record.IdempotencyKey)
	require.Equal(t, "published", found.Routes[0].Status)
	require.Equal(t, "sms/backup", found.Routes[0].Providers[len(found.Routes[0].Providers)-1])

	// 5b. A customer's phone number, as they spell it: what herald sent it.
	var sent operator.RecipientSearch
	runJSON(t, b.env, &sent, "find", "-recipient", "+254 712 345 678")
	require.Len(t, sent.Routes, len(keys))
	for _, r := range sent.Routes {
		require.Equal(t, "+254712345678", r.RecipientRef)
		require.Equal(t, "published", r.Status)
	}

	// 1. Dead letters per producer, and per provider and classification.
	var byProducer render.DeadLetterCounts
	runJSON(t, b.env, &byProducer, "dead-letters", "count", "-by", "producer")
	require.Equal(t, []string{"producer"}, byProducer.By)
	require.Len(t, byProducer.Groups, 2)
	require.Equal(t, "billing", byProducer.Groups[0].Producer)
	require.EqualValues(t, 5, byProducer.Groups[0].DeadLetters)
	require.EqualValues(t, 1, byProducer.Groups[1].DeadLetters)
	out, _, err := run(t, b.env, "dead-letters", "count", "-by", "provider,classification")
	require.NoError(t, err)
	require.Contains(t, out, "http_500")
	require.Contains(t, out, "total: 6")

	// 2. Whether routes failed over, how often, and when last (once the
	// serve has flushed its health counts).
	var st operator.Stats
	require.Eventually(t, func() bool {
		o, _, err := run(t, b.env, "stats", "-window", "15m", "--json")
		st = operator.Stats{}
		return err == nil && json.Unmarshal([]byte(o), &st) == nil && len(st.Failovers) > 0
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, "sms/primary", st.Failovers[0].From)
	require.Equal(t, "sms/backup", st.Failovers[0].To)
	require.False(t, st.Failovers[0].LastAt.IsZero())
	require.EqualValues(t, 900, st.WindowSeconds)
	require.Len(t, st.DeadLettersByProducer, 2, "stats has the dead letters by producer too")

	// 3 and 4. When the primary started failing, its circuit as it
	// behaves, its outcomes over fifteen minutes. The serve flushes its
	// health counts while the commands run, so the two commands' failover
	// counts are compared once both read the same flush: stats is read
	// again after each health read until they agree.
	var health []operator.ProviderHealth
	require.Eventually(t, func() bool {
		o, _, err := run(t, b.env, "providers", "health", "-window", "15m", "--json")
		health = nil
		if err != nil || json.Unmarshal([]byte(o), &health) != nil || len(health) != 2 || health[1].Circuit == "closed" {
			return false
		}
		o, _, err = run(t, b.env, "stats", "-window", "15m", "--json")
		st = operator.Stats{}
		return err == nil && json.Unmarshal([]byte(o), &st) == nil && len(st.Failovers) > 0 &&
			st.Failovers[0].Failovers == health[1].Window.FailedOverTo
	}, 30*time.Second, 100*time.Millisecond, "the primary's circuit opens, and stats and health count the same failovers")
	p := health[1]
	require.Equal(t, "sms/primary", p.Provider)
	require.NotNil(t, p.FailingSince, "the primary has failed since its first error")
	require.Contains(t, []string{"open", "half-open"}, p.Circuit, "it has not delivered since its circuit opened")
	require.GreaterOrEqual(t, p.Window.Transient, int64(3))
	require.Zero(t, p.Window.Delivered)
	require.Equal(t, st.Failovers[0].Failovers, p.Window.FailedOverTo)
	require.Nil(t, health[0].FailingSince, "the backup is not failing")

	// 6. Replay the primary's retryable dead letters; a dry run without a
	// classification leaves the permanent ones out and says so.
	var dry operator.ReplayOutcome
	runJSON(t, b.env, &dry, "dead-letters", "replay", "-provider", "sms/primary", "-classification", "http_500,timeout", "-dry-run")
	require.EqualValues(t, 4, dry.Matched)
	dry = operator.ReplayOutcome{}
	runJSON(t, b.env, &dry, "dead-letters", "replay", "-provider", "sms/primary", "-dry-run")
	require.EqualValues(t, 4, dry.Matched)
	require.EqualValues(t, 2, dry.LeftOutPermanent)
	dry = operator.ReplayOutcome{}
	runJSON(t, b.env, &dry, "dead-letters", "replay", "-provider", "sms/primary", "-dry-run", "-include-permanent")
	require.EqualValues(t, 6, dry.Matched)

	// 7. Take the primary out: new routes go straight to the backup.
	var changed operator.ProviderStateChange
	runJSON(t, b.env, &changed, "providers", "disable", "sms/primary", "-reason", "HTTP 500, then hangs")
	require.True(t, changed.Changed)
	// The engine follows within seconds: wait for it to load the version
	// the change made, then submit.
	var version int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT version FROM herald.routing_state`).Scan(&version))
	require.Eventually(t, func() bool {
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, `"providers and rules loaded"`) && strings.Contains(l, fmt.Sprintf(`"version":%d,`, version)) {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the engine loads the disabled primary")
	submitSMS(t, b, "shop", "t-7")
	var after operator.Status
	require.Eventually(t, func() bool {
		out, _, err := run(t, b.env, "find", "-producer", "shop", "-key", "t-7", "--json")
		return err == nil && json.Unmarshal([]byte(out), &after) == nil && after.Routes[0].Status == "published"
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, []string{"sms/backup"}, after.Routes[0].Providers, "the disabled primary got no attempt")

	// The providers file, exported and applied again, changes nothing.
	exported, _, err := run(t, b.env, "providers", "export")
	require.NoError(t, err)
	var applied operator.RoutingApplied
	runJSON(t, b.env, &applied, "providers", "apply", "-f", writeProviders(t, exported), "-dry-run")
	require.Empty(t, applied.Changes, exported)

	// 8. The figures, watched: two answers, then an interrupt.
	var watched bytes.Buffer
	m, _, errb := testMain(b.env)
	m.Stdout = &watched
	ctx, cancel := context.WithCancel(context.Background())
	renders := 0
	m.watched = func() {
		if renders++; renders == 2 {
			cancel()
		}
	}
	require.Zero(t, m.Execute(ctx, []string{"dead-letters", "count", "--watch", "-interval", "100ms", "--json"}), errb.String())
	dec := json.NewDecoder(strings.NewReader(watched.String()))
	for range 2 {
		var c render.DeadLetterCounts
		require.NoError(t, dec.Decode(&c))
		require.Len(t, c.Groups, 2)
	}
	require.False(t, dec.More(), "two answers, no more")
}
