package reliability_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// Figures of TestServe_SurvivesOversizedIntake: the
// issue's reproduction (100 entries of 10 MB crashed serve under a 1.5 GB
// memory limit, every time).
//
// The cap is on address space (RLIMIT_AS), which also counts what the Go
// runtime reserves and never touches: serve at rest reserves about 1.8 GB.
// Under 3 GiB, the worker before the byte budget died with 1.3 GB of heap
// in use ("runtime: out of memory"), about the limit; it peaked at
// 2.1 GB resident without a cap.
const (
	oversizedEntries   = 100
	oversizedBytes     = 10 << 20
	serveAddressSpace  = 3 << 30   // the prlimit --as cap serve runs under
	servePeakRSSBudget = 256 << 20 // what serve's peak RSS must stay under
)

// TestServe_SurvivesOversizedIntake runs the real
// `herald serve` under an address-space cap (prlimit --as) on an intake
// holding 100 entries of 10 MB beside 100 valid ones, interleaved so every
// batch meets both. The big ones must be recorded as too_large, the valid
// ones accepted and delivered, and serve must still be running, its peak
// RSS (VmHWM) far below the bodies' total.
func TestServe_SurvivesOversizedIntake(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not found")
	}
	bin := heraldBinary(t)
	rc := newReceiver(t, nil)
	dbURL := pgtemp.NewDatabase(t)
	admin := poolNamed(t, dbURL, "reliability-admin")
	ctx := context.Background()

	// Test-only SQL: the bodies are made by the server, so the test process
	// never holds them; repeated bytes compress to almost nothing, and lz4
	// (where the server has it) compresses them several times faster than
	// the default pglz.
	valid := `{"notification_type": "reliability.ping", "producer": "reliability", "idempotency_key": "mem-%1$s",
		"channels": ["webhook"], "audience": {"webhook": ["` + rc.url + `/mem/%1$s"]}, "content": {"webhook": {"i": %1$s}}}`
	insert := `INSERT INTO herald.intake (body)
		SELECT CASE WHEN g % 2 = 0
			THEN '{"notification_type": "bulk.blob", "producer": "bulk", "idempotency_key": "big-' || g ||
				'", "pad": "' || repeat('x', $1) || '"}'
			ELSE format($2, g) END
		FROM generate_series(1, $3::int) g`
	start := time.Now()
	err = pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL default_toast_compression = lz4`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insert, oversizedBytes, valid, 2*oversizedEntries)
		return err
	})
	if err != nil { // a server built without lz4
		t.Logf("insert with lz4: %v; inserting with the default compression", err)
		_, err = admin.Exec(ctx, insert, oversizedBytes, valid, 2*oversizedEntries)
	}
	require.NoError(t, err)
	t.Logf("inserted %d entries of %d MB and %d valid ones in %s",
		oversizedEntries, oversizedBytes>>20, oversizedEntries, time.Since(start).Round(time.Millisecond))

	logPath := filepath.Join(t.TempDir(), "serve.log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	defer logf.Close()
	cmd := exec.Command(prlimit, "--as="+strconv.Itoa(serveAddressSpace), "--",
		bin, "serve", "-log-format", "json", "-no-maintenance")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"HERALD_CHANNELS_WEBHOOK_DRIVER=webhook",
		"HERALD_CHANNELS_WEBHOOK_ALLOW_PRIVATE=true",
		"HERALD_CHANNELS_WEBHOOK_SECRETS_ENV=RELIABILITY_WEBHOOK_SECRETS",
		"RELIABILITY_WEBHOOK_SECRETS="+testSecret,
		"HERALD_DISPATCH_POLL_INTERVAL=100ms",
		"HERALD_INTAKE_POLL_INTERVAL=100ms",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start()) // prlimit execs serve: same pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("serve log (first 4 KiB):\n%s", out[:min(len(out), 4<<10)])
		}
	})

	alive := func() bool {
		select {
		case err := <-exited:
			exited <- err
			return false
		default:
			return true
		}
	}
	count := func(sql string) int {
		var n int
		require.NoError(t, admin.QueryRow(ctx, sql).Scan(&n))
		return n
	}
	require.True(t, poll(2*time.Minute, 100*time.Millisecond, func() bool {
		require.True(t, alive(), "serve died")
		return count(`SELECT count(*) FROM herald.intake`) == 0
	}), "serve did not drain the intake within 2 minutes")
	waitTerminal(t, admin, time.Minute)
	peak := procStatus(t, cmd.Process.Pid, "VmHWM")
	peakVirtual := procStatus(t, cmd.Process.Pid, "VmPeak")
	require.True(t, alive(), "serve died")

	t.Logf("serve peak RSS (VmHWM) %d MB, peak virtual size (VmPeak) %d MB, under prlimit --as=%d MB; "+
		"%d entries of %d MB beside %d valid ones", peak>>20, peakVirtual>>20, serveAddressSpace>>20,
		oversizedEntries, oversizedBytes>>20, oversizedEntries)
	require.Equal(t, oversizedEntries, count(`SELECT count(*) FROM herald.malformed_intents
		WHERE failure_code = 'too_large' AND producer = 'bulk' AND notification_type = 'bulk.blob'`))
	require.Equal(t, oversizedEntries, count(`SELECT count(*) FROM herald.malformed_intents`))
	require.Equal(t, oversizedEntries, count(`SELECT count(*) FROM herald.records`))
	require.Equal(t, oversizedEntries, count(`SELECT count(*) FROM herald.routes WHERE status = 'published'`))
	delivered, _, _ := rc.counts()
	require.Equal(t, oversizedEntries, delivered)
	require.Less(t, peak, int64(servePeakRSSBudget), "serve's peak RSS")
}

// procStatus returns a size field of /proc/PID/status, in bytes: VmHWM
// (peak resident set size), VmPeak (peak virtual size).
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
