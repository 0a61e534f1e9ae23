package reliability_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
)

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestServe_AnsweredReceiptsNeverLost posts receipts to serve's endpoint
// while serve is killed and started again and the database crashes and
// restarts: every receipt answered 2xx is in the inbox afterwards. The
// endpoint answers only once a receipt is stored, so a sender that got no
// answer, or a 503, sends it again.
func TestServe_AnsweredReceiptsNeverLost(t *testing.T) {
	t.Parallel()
	c, dbURL := ownCluster(t, true)
	admin := poolNamed(t, dbURL, "reliability-admin")
	f, err := routing.Parse([]byte(`
providers:
  - name: sms/acme
    driver: sms-http
    sms_http: {url: "http://127.0.0.1:9/send", api_key: {env: RELIABILITY_WEBHOOK_SECRETS}}
    receipts: {token: {env: RELIABILITY_WEBHOOK_SECRETS}}
`))
	require.NoError(t, err)
	_, err = routing.Apply(context.Background(), admin, f, "reliability", nil)
	require.NoError(t, err)

	bin := heraldBinary(t)
	addr := freeAddr(t)
	logs := t.TempDir()
	logPath := filepath.Join(logs, "serve.log")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("serve logs (last 8 KiB):\n%s", out[max(0, len(out)-8<<10):])
		}
	})
	// serve runs under a supervisor, as under systemd's Restart=always: a
	// serve that starts while the database is down exits with an error
	// (it pings the database before anything else), and is started again.
	var (
		mu       sync.Mutex
		proc     *serveProcess
		restarts int
	)
	stopSupervising := make(chan struct{})
	supervised := make(chan struct{})
	start := func() {
		mu.Lock()
		defer mu.Unlock()
		proc = startServe(t, bin, dbURL, logPath, "HERALD_RECEIPTS_LISTEN="+addr)
	}
	start()
	go func() {
		defer close(supervised)
		for {
			mu.Lock()
			done := proc.done
			mu.Unlock()
			select {
			case <-stopSupervising:
				return
			case err := <-done:
				done <- err
			}
			select {
			case <-stopSupervising:
				return
			case <-time.After(100 * time.Millisecond):
			}
			restarts++
			start()
		}
	}()
	killServe := func() {
		mu.Lock()
		p := proc
		mu.Unlock()
		p.kill() // the supervisor starts it again
	}

	receipts := scale(1_500, 15_000)
	var next, acked, refused, failed atomic.Int64
	ackedIDs := make([]bool, receipts)
	client := &http.Client{Timeout: 5 * time.Second}
	var senders sync.WaitGroup
	deadline := time.Now().Add(2 * time.Minute)
	for range 8 {
		senders.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= receipts {
					return
				}
				for time.Now().Before(deadline) {
					resp, err := client.Post("http://"+addr+"/receipts/sms/acme?token="+testSecret, "application/json",
						strings.NewReader(fmt.Sprintf(`{"id":"m-%d","status":"DELIVRD"}`, i)))
					if err != nil {
						failed.Add(1)
						time.Sleep(20 * time.Millisecond)
						continue
					}
					resp.Body.Close()
					if resp.StatusCode/100 == 2 {
						ackedIDs[i] = true
						acked.Add(1)
						break
					}
					refused.Add(1)
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	// serve killed and started again; the database restarted, then crashed.
	// Each fault waits for receipts/15 more answered receipts: it strikes
	// while receipts flow, and after serve (or the database) is back.
	ackedMore := func() {
		target := min(acked.Load()+int64(receipts/15), int64(receipts))
		require.Eventually(t, func() bool { return acked.Load() >= target }, time.Minute, 5*time.Millisecond,
			"receipts are answered again")
	}
	ackedMore()
	killServe()
	ackedMore()
	require.NoError(t, c.Halt())
	require.NoError(t, c.StartAgain(context.Background()))
	ackedMore()
	require.NoError(t, c.Crash())
	require.NoError(t, c.StartAgain(context.Background()))
	senders.Wait()
	close(stopSupervising)
	<-supervised

	stored := map[string]bool{}
	rows, err := admin.Query(context.Background(),
		`SELECT DISTINCT provider_message_id FROM herald.delivery_receipts WHERE provider = 'sms/acme'`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		stored[id] = true
	}
	require.NoError(t, rows.Err())
	var lost int
	for i, ok := range ackedIDs {
		if ok && !stored[fmt.Sprintf("m-%d", i)] {
			lost++
		}
	}
	t.Logf("receipts: sent=%d answered_2xx=%d refused_non_2xx=%d connection_failures=%d serve_restarts=%d stored_distinct=%d lost=%d",
		receipts, acked.Load(), refused.Load(), failed.Load(), restarts, len(stored), lost)
	fmt.Printf("reliability receipts: sent=%d answered_2xx=%d refused=%d connection_failures=%d lost=%d\n",
		receipts, acked.Load(), refused.Load(), failed.Load(), lost)
	require.EqualValues(t, receipts, acked.Load(), "every receipt was answered 2xx in the end")
	require.Zero(t, lost, "a receipt answered 2xx is missing from the inbox")
}
