package httpserve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/httpservetest"
	"github.com/heraldhq/herald/internal/httpserve"
)

// bound is how long a test waits for what must happen before it gives
// up: a bound on a broken test, never an assertion about speed.
const bound = time.Minute

// serve serves handler with cfg on 127.0.0.1 until the test ends.
func serve(t *testing.T, cfg *httpserve.Config, handler http.Handler) string {
	t.Helper()
	srv, err := httpserve.New(handler, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := httpserve.Listen(ctx, "test", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ln.Addr().String()
}

// readsBody is a handler that reads the whole body, answering 408 when
// the read timed out.
var readsBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, err := io.ReadAll(r.Body)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		w.WriteHeader(http.StatusRequestTimeout)
		return
	}
	w.WriteHeader(http.StatusOK)
})

func TestServer_CutsOffSlowBody(t *testing.T) {
	t.Parallel()
	addr := serve(t, &httpserve.Config{ReadTimeout: 200 * time.Millisecond, WriteTimeout: bound}, readsBody)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprint(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, httpservetest.UntilClosed(t, conn))
}

func TestServer_CutsOffSlowHeaders(t *testing.T) {
	t.Parallel()
	addr := serve(t, &httpserve.Config{ReadTimeout: 200 * time.Millisecond}, readsBody)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	require.NoError(t, err)
	require.NotEqual(t, http.StatusOK, httpservetest.UntilClosed(t, conn))
}

func TestServer_ClosesIdleKeepAlive(t *testing.T) {
	t.Parallel()
	addr := serve(t, &httpserve.Config{IdleTimeout: 200 * time.Millisecond}, readsBody)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, httpservetest.UntilClosed(t, conn), "answered, then closed once idle")
}

func TestServer_ServesAtMostMaxConns(t *testing.T) {
	t.Parallel()
	addr := serve(t, &httpserve.Config{MaxConns: 2}, readsBody)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		held = append(held, c) // kept alive: each holds a slot
	}
	third, err := net.Dial("tcp", addr) // the kernel's backlog takes it; the server does not
	require.NoError(t, err)
	defer third.Close()
	_, err = fmt.Fprint(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(third)
	require.NoError(t, third.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a third connection is not served while two are open")

	require.NoError(t, held[0].Close()) // a slot frees: the third is served
	require.NoError(t, third.SetReadDeadline(time.Now().Add(bound)))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestNew_RefusesNegativeBounds(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]httpserve.Config{
		"ReadTimeout":     {ReadTimeout: -1},
		"WriteTimeout":    {WriteTimeout: -1},
		"IdleTimeout":     {IdleTimeout: -1},
		"MaxConns":        {MaxConns: -1},
		"ShutdownTimeout": {ShutdownTimeout: -1},
	} {
		_, err := httpserve.New(http.NotFoundHandler(), &cfg)
		require.ErrorContains(t, err, field)
	}
}
