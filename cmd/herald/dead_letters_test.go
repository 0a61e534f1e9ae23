package main

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
)

// opBundle is a test database with a pool for seeding and the environment
// that points the CLI at it.
type opBundle struct {
	pool *pgxpool.Pool
	env  map[string]string
}

func opSetup(t *testing.T) *opBundle {
	t.Helper()
	dbURL := pgtemp.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &opBundle{pool: pool, env: map[string]string{"DATABASE_URL": dbURL, "USER": "tester"}}
}

// runJSON runs a command with --json and decodes its output into v.
func runJSON(t *testing.T, env map[string]string, v any, args ...string) {
	t.Helper()
	out, stderr, err := run(t, env, append(args, "--json")...)
	require.NoError(t, err, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
}

func TestDeadLettersCmd_ListFiltersPagesShows(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	sms := seed(t, b, operatortest.Spec{N: 3, Channel: "sms", Producer: "billing", Dead: true, Classification: "attempts_exhausted"})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "email", Dead: true})

	var page operator.DeadLetterPage
	runJSON(t, b.env, &page, "dead-letters", "list")
	require.Len(t, page.DeadLetters, 5)

	runJSON(t, b.env, &page, "dead-letters", "list", "--channel", "sms", "--producer", "billing", "--classification", "attempts_exhausted", "--since", "1h")
	require.Len(t, page.DeadLetters, 3)
	for _, dl := range page.DeadLetters {
		require.Equal(t, "sms", dl.Channel)
	}

	var first, second operator.DeadLetterPage
	runJSON(t, b.env, &first, "dead-letters", "list", "--limit", "3")
	require.Len(t, first.DeadLetters, 3)
	require.NotEmpty(t, first.Next)
	runJSON(t, b.env, &second, "dead-letters", "list", "--limit", "3", "--after", first.Next)
	require.Len(t, second.DeadLetters, 2)
	require.Empty(t, second.Next)

	var shown []operator.DeadLetter
	runJSON(t, b.env, &shown, "dead-letters", "show", sms[1].String())
	require.Len(t, shown, 1)
	require.Equal(t, sms[1].RouteID, shown[0].RouteID)
	require.Equal(t, "attempts_exhausted", shown[0].Classification)

	out, _, err := run(t, b.env, "dead-letters", "list", "--channel", "sms")
	require.NoError(t, err)
	require.Contains(t, out, "CLASS")
	require.Contains(t, out, sms[0].NotificationID)
	out, _, err = run(t, b.env, "dead-letters", "show", sms[0].NotificationID)
	require.NoError(t, err)
	require.Contains(t, out, "recovery hint:")

	_, _, err = run(t, b.env, "dead-letters", "show", "0192f1c2-3b4a-7d5e-8f60-123456789abc")
	require.ErrorIs(t, err, operator.ErrNotFound)
	_, _, err = run(t, b.env, "dead-letters", "show", "ntf_missing")
	require.Equal(t, 2, exitCode(err), "not a notification id")
	_, _, err = run(t, b.env, "dead-letters", "list", "--after", "nonsense!")
	require.Equal(t, 2, exitCode(err))
	_, _, err = run(t, b.env, "dead-letters", "list", "--since", "yesterday")
	require.Equal(t, 2, exitCode(err))
}

func TestDeadLettersCmd_ReplayDryRunIDsFilter(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	refs := seed(t, b, operatortest.Spec{N: 4, Channel: "webhook", Dead: true})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "sms", Dead: true})

	var dry operator.ReplayResult
	runJSON(t, b.env, &dry, "dead-letters", "replay", "--channel", "webhook", "--dry-run")
	require.True(t, dry.DryRun)
	require.Equal(t, int64(4), dry.Matched)
	require.Zero(t, dry.Moved)
	require.Len(t, dry.Sample, 4)

	var byID operator.ReplayResult
	runJSON(t, b.env, &byID, "dead-letters", "replay", "--reason", "endpoint fixed", refs[0].String(), refs[1].NotificationID)
	require.Equal(t, 2, byID.Moved)

	var st operator.Status
	runJSON(t, b.env, &st, "status", refs[0].NotificationID)
	require.Equal(t, "pending", st.Routes[0].Status)
	require.Zero(t, st.Routes[0].Attempts)
	last := st.Timeline[len(st.Timeline)-2]
	require.Equal(t, operator.ActionReplay, last.Event)
	// The actor named, and the login the database recorded.
	require.Regexp(t, `^by tester \(login \w+\): endpoint fixed$`, last.Detail)

	var byFilter operator.ReplayResult
	runJSON(t, b.env, &byFilter, "dead-letters", "replay", "--channel", "webhook", "--actor", "ops", "--reason", "endpoint fixed")
	require.Equal(t, 2, byFilter.Moved)
	var page operator.DeadLetterPage
	runJSON(t, b.env, &page, "dead-letters", "list")
	require.Len(t, page.DeadLetters, 2, "the sms dead letters stay")

	var prog operator.ReplayProgress
	runJSON(t, b.env, &prog, "dead-letters", "progress", byFilter.ReplayID)
	require.Equal(t, int64(2), prog.Moved)

	out, _, err := run(t, b.env, "dead-letters", "replay", "--channel", "sms", "--dry-run")
	require.NoError(t, err)
	require.Contains(t, out, "dry run: 2 dead letters would move")

	_, _, err = run(t, b.env, "dead-letters", "replay")
	require.Equal(t, 2, exitCode(err), "no filter, no ids, no -all")
	_, _, err = run(t, map[string]string{"DATABASE_URL": b.env["DATABASE_URL"]}, "dead-letters", "replay", "--all")
	require.Equal(t, 2, exitCode(err), "no actor")
}

func TestDeadLettersCmd_ReplayAboveThresholdQueues(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 5, Dead: true})

	var out struct{ Queued operator.Queued }
	runJSON(t, b.env, &out, "dead-letters", "replay", "--all", "--async-threshold", "3", "--reason", "bulk")
	require.Equal(t, int64(5), out.Queued.Matched)
	require.NotZero(t, out.Queued.JobID)

	var prog operator.ReplayProgress
	runJSON(t, b.env, &prog, "dead-letters", "progress", out.Queued.ReplayID)
	require.Zero(t, prog.Moved, "nothing works the job in this test")
	var page operator.DeadLetterPage
	runJSON(t, b.env, &page, "dead-letters", "list")
	require.Len(t, page.DeadLetters, 5)
}

// TestDeadLettersCmd_ConcurrentReplaysMoveOnce runs the CLI
// twice at once on 10,000 dead letters selected by filter.
func TestDeadLettersCmd_ConcurrentReplaysMoveOnce(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	const n = 10_000
	operatortest.Seed(t, b.pool, operatortest.Spec{N: n, Channel: "email", Producer: "shop", Dead: true})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 10, Channel: "email", Producer: "other", Dead: true})

	var wg sync.WaitGroup
	results := make([]operator.ReplayResult, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() {
			out, _, err := run(t, b.env, "dead-letters", "replay", "--producer", "shop", "--reason", "twice", "--json")
			if err == nil {
				err = json.Unmarshal([]byte(out), &results[i])
			}
			errs[i] = err
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, n, results[0].Moved+results[1].Moved)
	var audited int64
	for _, r := range results {
		var prog operator.ReplayProgress
		runJSON(t, b.env, &prog, "dead-letters", "progress", r.ReplayID)
		audited += prog.Moved
	}
	require.Equal(t, int64(n), audited)

	var st operator.Stats
	runJSON(t, b.env, &st, "stats")
	require.Len(t, st.Backlog, 1)
	require.Equal(t, int64(n), st.Backlog[0].Routes)
	require.Equal(t, "pending", st.Backlog[0].Status)
	require.Len(t, st.DeadLetters, 1)
	require.Equal(t, int64(10), st.DeadLetters[0].DeadLetters)
}

// seedDead seeds n dead letters on the email channel.
func seedDead(t *testing.T, b *opBundle, n int) []operator.RouteRef {
	t.Helper()
	return seed(t, b, operatortest.Spec{N: n, Dead: true})
}

func TestDeadLettersCmd_NamesFinalProvider(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	dead := seed(t, b, operatortest.Spec{Channel: "sms"})[0]
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/acme", Status: "failed", Classification: "transient", Message: "HTTP 503"})
	operatortest.Deliver(t, b.pool, "sms", operatortest.Attempt{Provider: "sms/backup", Status: "dead_letter", Classification: "permanent", Message: "number barred"})
	seed(t, b, operatortest.Spec{Channel: "email", Dead: true}) // no provider

	var page operator.DeadLetterPage
	runJSON(t, b.env, &page, "dead-letters", "list", "--channel", "sms")
	require.Len(t, page.DeadLetters, 1)
	require.Equal(t, "sms/backup", page.DeadLetters[0].Provider)
	var shown []operator.DeadLetter
	runJSON(t, b.env, &shown, "dead-letters", "show", dead.String())
	require.Equal(t, "sms/backup", shown[0].Provider)

	out, _, err := run(t, b.env, "dead-letters", "list")
	require.NoError(t, err)
	require.Regexp(t, `DEAD LETTERED\s+ROUTE\s+CHANNEL\s+PROVIDER\s+PRODUCER`, out)
	require.Regexp(t, `/sms:0\s+sms\s+sms/backup\s+shop`, out)
	require.Regexp(t, `/email:0\s+email\s+-\s+shop`, out)
	out, _, err = run(t, b.env, "dead-letters", "show", dead.String())
	require.NoError(t, err)
	require.Regexp(t, `(?m)^provider:\s+sms/backup$`, out)
}
