package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/engine"
)

// TestRun_ProviderModeRiverSendsTheSameRequests runs the provider mode
// against River with a fifth of the attempts failing (503): each engine's
// sink receives one checked request per attempt (the sms-http driver's,
// with its API key and body), none rejected, and River retries its failed
// deliveries as herald does.
func TestRun_ProviderModeRiverSendsTheSameRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.cfg.Intents = 300
	b.cfg.Provider = true
	b.cfg.FailShare = 0.2
	b.cfg.IdleSamples = -1
	b.cfg.Vs = "river"

	rep, err := Run(ctx, b.db, b.cfg)
	require.NoError(t, err)
	require.Equal(t, riverWorkerHTTP, rep.Config.RiverWorker)
	require.Len(t, rep.Rows, 2)
	for _, r := range rep.Rows {
		require.Equal(t, int64(300), r.Published, r.Engine)
		require.NotNil(t, r.HTTPRequests, r.Engine)
		require.Zero(t, *r.HTTPRejected, r.Engine)
		// Every attempt, failed or not, was one request to the sink.
		require.Equal(t, r.Attempts, *r.HTTPRequests, r.Engine)
		require.Greater(t, r.Attempts, r.Published, "%s retried its failed deliveries", r.Engine)
	}
	require.Contains(t, rep.Rows[1].Settings, "worker http")
	// River's phase ran last: its jobs are still there, the retried ones
	// completed after an error that is the provider's 503.
	var retried int64
	var errs []byte
	require.NoError(t, b.db.Pool.QueryRow(ctx, `
SELECT count(*), (array_agg(errors[1]))[1]::text::bytea FROM herald.river_job
WHERE state = 'completed' AND attempt > 1`).Scan(&retried, &errs))
	require.Positive(t, retried)
	var first struct{ Error string }
	require.NoError(t, json.Unmarshal(errs, &first))
	require.Contains(t, first.Error, "http_503")
}

// TestRiverPhase_WebhookWorkerSignsAsHerald runs River alone in the
// configuration of herald's two serve processes: two River worker
// processes (this test binary, see TestMain), each POSTing every job
// through herald's webhook driver to the sink, which checks each
// signature and body.
func TestRiverPhase_WebhookWorkerSignsAsHerald(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Intents = 500
	b.cfg.Processes = 2
	b.cfg.FailShare = 0.2
	b.cfg.IdleSamples = -1
	c := b.cfg.withDefaults()
	require.NoError(t, c.validate())
	sk := newSink(0, c.FailShare)
	s := newRiverSubject(&c, b.db, sk, newWorkload(&c, "riverhook", 1))
	row, err := runPhase(context.Background(), b.db, &c, s, sk)
	require.NoError(t, err)
	require.Equal(t, int64(500), row.Published)
	require.Zero(t, *row.HTTPRejected)
	require.Equal(t, row.Attempts, *row.HTTPRequests)
	require.Greater(t, row.Attempts, row.Published)
	require.Contains(t, row.Settings, "2 River worker processes")
	require.Len(t, row.PeakRSS, 2)
}

// TestSink_RejectsWhatHeraldWouldNotSend delivers through herald's webhook
// driver to the sink: signed with the bench's secret it is delivered,
// signed with another it is refused (400, a permanent failure) and
// counted as rejected.
func TestSink_RejectsWhatHeraldWouldNotSend(t *testing.T) {
	t.Parallel()
	sk := newSink(0, 0)
	url, stop, err := sk.serveHTTP()
	require.NoError(t, err)
	defer stop()
	msg := &channel.Message{NotificationID: "n", RouteID: "r", NotificationType: benchType,
		Address: url + "/0", Content: payload(64), AcceptedAt: time.Now()}

	good, err := newWebhookDeliverer(DefaultConcurrency)
	require.NoError(t, err)
	require.Equal(t, channel.Delivered, good.Deliver(context.Background(), msg).Class)

	other, err := webhook.New(webhook.Config{Secrets: []string{"whsec_" + "b3RoZXItc2VjcmV0LW9mLTI0LWJ5dGVzIQ=="}, AllowPrivate: true})
	require.NoError(t, err)
	out := other.Deliver(context.Background(), msg)
	require.Equal(t, channel.Permanent, out.Class, out.Message)
	msg.Content = []byte(`{"not":"the bench's"}`)
	require.Equal(t, channel.Permanent, good.Deliver(context.Background(), msg).Class)

	require.Equal(t, int64(3), sk.requests.Load())
	require.Equal(t, int64(2), sk.rejected.Load())
	require.Contains(t, *sk.rejection.Load(), "body")
	require.Equal(t, int64(1), sk.delivered.Load())
}

// TestRiverPhase_ProfilesEachWorkerProcessWhenAsked runs the River phase of
// two worker processes with engine.CPUProfileEnv set in the bench's
// environment: each process writes a CPU profile of its own beside the
// path given (serve processes get theirs the same way, profileEnv).
func TestRiverPhase_ProfilesEachWorkerProcessWhenAsked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv(engine.CPUProfileEnv, path)
	b := setup(t)
	b.cfg.Intents = 200
	b.cfg.Processes = 2
	b.cfg.IdleSamples = -1
	c := b.cfg.withDefaults()
	require.NoError(t, c.validate())
	sk := newSink(0, 0)
	row, err := runPhase(context.Background(), b.db, &c, newRiverSubject(&c, b.db, sk, newWorkload(&c, "riverprof", 1)), sk)
	require.NoError(t, err)
	require.Equal(t, int64(200), row.Published)
	for _, name := range []string{"river1", "river2"} {
		prof, err := os.ReadFile(path + "." + name)
		require.NoError(t, err)
		require.Greater(t, len(prof), 2)
		require.Equal(t, []byte{0x1f, 0x8b}, prof[:2], "a gzipped pprof profile, flushed as the process stopped")
	}
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "the bench's own path is only the stem")
	require.Equal(t, []string{"A=1"}, profileEnv([]string{"A=1"}, "herald", 0)[:1])
	require.Equal(t, engine.CPUProfileEnv+"="+path+".herald3", profileEnv(nil, "herald", 2)[0])
}
