package reliability_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

var heraldBuild struct {
	once sync.Once
	path string
	err  error
}

// heraldBinary builds cmd/herald once per test run.
func heraldBinary(t *testing.T) string {
	t.Helper()
	heraldBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "herald-reliability-")
		if err != nil {
			heraldBuild.err = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..", "..")
		heraldBuild.path = filepath.Join(dir, "herald")
		cmd := exec.Command("go", "build", "-o", heraldBuild.path, "./cmd/herald")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			heraldBuild.err = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	require.NoError(t, heraldBuild.err)
	return heraldBuild.path
}

// serveProcess is one `herald serve` child process.
type serveProcess struct {
	cmd  *exec.Cmd
	done chan error
}

// startServe runs `herald serve` against dbURL (with env added to its
// environment) with the webhook channel
// reaching loopback receivers, short timeouts and leases so a killed
// process's routes come due again quickly.
func startServe(t *testing.T, bin, dbURL, logPath string, env ...string) *serveProcess {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	cmd := exec.Command(bin, "serve", "-log-format", "json", "-no-maintenance")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"HERALD_CHANNELS_WEBHOOK_DRIVER=webhook",
		"HERALD_CHANNELS_WEBHOOK_ALLOW_PRIVATE=true",
		"HERALD_CHANNELS_WEBHOOK_SECRETS_ENV=RELIABILITY_WEBHOOK_SECRETS",
		"RELIABILITY_WEBHOOK_SECRETS="+testSecret,
		"HERALD_CHANNELS_WEBHOOK_CONCURRENCY=32",
		"HERALD_CHANNELS_WEBHOOK_MAX_ATTEMPTS=25",
		"HERALD_CHANNELS_WEBHOOK_TIMEOUT=1s",
		"HERALD_CHANNELS_WEBHOOK_LEASE=2s",
		"HERALD_CHANNELS_WEBHOOK_BACKOFF_BASE=50ms",
		"HERALD_CHANNELS_WEBHOOK_BACKOFF_CAP=200ms",
		"HERALD_DISPATCH_POLL_INTERVAL=100ms",
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	p := &serveProcess{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); _ = logf.Close() }()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *serveProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func TestServe_KilledAtRandomLosesNothing(t *testing.T) {
	t.Parallel()
	bin := heraldBinary(t)
	// A little latency per delivery, so deliveries are in flight when the
	// process dies.
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ string, _ int) bool {
		time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
		return true
	})
	dbURL := pgtemp.NewDatabase(t)
	admin := poolNamed(t, dbURL, "reliability-admin")
	p := newProducer(t, poolNamed(t, dbURL, "reliability-producer"), rc.url, "crash")
	routes := scale(4_000, 40_000)
	kills := scale(4, 20)
	logPath := filepath.Join(t.TempDir(), "serve.log")

	ctx := context.Background()
	submitted := make(chan error, 1)
	go func() {
		_, err := p.submit(ctx, 0, routes, 200)
		submitted <- err
	}()
	srv := startServe(t, bin, dbURL, logPath)
	// The leases the dead process held, each named by route and attempt, are
	// exactly the deliveries it had in flight (started, about to start, or
	// done but not yet written): only they may be repeated. A lease still
	// unexpired from an earlier kill is the same claim and counts once.
	type claim struct {
		notificationID, routeID string
		attempt                 int32
	}
	inFlight := map[claim]bool{}
	q := benchstore.New()
	// Each kill comes a random number of deliveries after the last start,
	// so it strikes while deliveries are under way; the kills together
	// come well before every route is delivered.
	step := routes / (4 * kills)
	for k := range kills {
		rc.requireRequests(t, rc.requestsSoFar()+step/2+rand.IntN(step), 2*time.Minute)
		srv.kill()
		rows, err := q.BenchRouteListClaimed(ctx, admin)
		require.NoError(t, err)
		added := 0
		for _, r := range rows {
			c := claim{r.NotificationID, r.RouteID, r.AttemptCount}
			if !inFlight[c] {
				inFlight[c] = true
				added++
			}
		}
		t.Logf("kill %d: %d deliveries were in flight", k+1, added)
		srv = startServe(t, bin, dbURL, logPath)
	}
	inflight := int64(len(inFlight))
	require.NoError(t, <-submitted)
	waitTerminal(t, admin, 2*time.Minute)
	srv.kill()

	v := judge(t, admin, rc, rc.url)
	t.Logf("crash: routes=%d kills=%d in_flight_at_kills=%d requests=%d duplicates=%d lost=%d statuses=%v",
		v.routes, kills, inflight, v.requests, v.duplicates, v.lost, v.byStatus)
	require.Equal(t, routes, v.routes)
	require.Zero(t, v.lost)
	require.Equal(t, routes, v.published)
	require.LessOrEqual(t, int64(v.duplicates), inflight, "duplicates bounded by the deliveries in flight at the kills")
	fmt.Printf("reliability crash: routes=%d kills=%d duplicates=%d (bound %d in flight at kills) lost=%d\n",
		v.routes, kills, v.duplicates, inflight, v.lost)
}
