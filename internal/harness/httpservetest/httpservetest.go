// Package httpservetest holds what tests of herald's listeners share:
// reading a raw connection until the server closes it.
package httpservetest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// UntilClosed reads conn until the server closes it and returns the status
// of the answer it sent first (0: none). It waits a minute at most: a
// bound on a broken test, not an assertion about speed; a server that
// keeps the connection open that long fails the test.
func UntilClosed(t testing.TB, conn net.Conn) int {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	br := bufio.NewReader(conn)
	status := 0
	if resp, err := http.ReadResponse(br, nil); err == nil {
		status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	_, err := br.ReadByte()
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server kept the connection open")
	require.Error(t, err)
	return status
}
