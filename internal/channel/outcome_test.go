package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDiscard_DeliversEverything(t *testing.T) {
	t.Parallel()
	out := Discard.Deliver(t.Context(), &Message{Content: json.RawMessage(`not json`)})
	require.Equal(t, Delivered, out.Class)
	require.Equal(t, "discarded", out.Classification)
}

func TestParseRetryAfter_Forms(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"Empty", "", 0},
		{"Seconds", "120", 2 * time.Minute},
		{"SecondsWithSpace", " 5 ", 5 * time.Second},
		{"Zero", "0", 0},
		{"Negative", "-3", 0},
		{"Huge", "99999999999999", 365 * 24 * time.Hour},
		{"HTTPDate", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"PastDate", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"Garbage", "soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ParseRetryAfter(tt.in, now))
		})
	}
}

func TestNetworkOutcome_TransientNamingCause(t *testing.T) {
	t.Parallel()
	expired, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	canceled, cancel2 := context.WithCancel(t.Context())
	cancel2()
	opErr := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"ContextDeadlineWins", expired, io.EOF, ClassTimeout},
		{"ContextCanceled", canceled, io.EOF, ClassCanceled},
		{"Refused", t.Context(), opErr(syscall.ECONNREFUSED), ClassConnectionRefused},
		{"Reset", t.Context(), opErr(syscall.ECONNRESET), ClassConnectionReset},
		{"EOF", t.Context(), fmt.Errorf("read: %w", io.EOF), ClassConnectionReset},
		{"DNS", t.Context(), &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, ClassDNS},
		{"DeadlineError", t.Context(), context.DeadlineExceeded, ClassTimeout},
		{"Other", t.Context(), errors.New("boom"), ClassNetwork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := NetworkOutcome(tt.ctx, tt.err, "https://hooks.example.com/p?token=x")
			require.Equal(t, Transient, out.Class)
			require.Equal(t, tt.want, out.Classification)
			require.Contains(t, out.Message, "https://hooks.example.com")
			require.NotContains(t, out.Message, "token")
		})
	}
}

func TestBadContent_DescribesWithoutQuoting(t *testing.T) {
	t.Parallel()
	var v struct {
		Body string `json:"body"`
	}
	syntaxErr := json.Unmarshal([]byte(`{"body": "4111111111111111`), &v)
	typeErr := json.Unmarshal([]byte(`{"body": 4111111111111111}`), &v)
	for _, err := range []error{syntaxErr, typeErr, nil} {
		out := BadContent("sms", err)
		require.Equal(t, Permanent, out.Class)
		require.Equal(t, ClassBadContent, out.Classification)
		require.NotContains(t, out.Message, "4111")
		require.NotEmpty(t, out.RecoveryHint)
	}
}

func TestNoAddress_Skips(t *testing.T) {
	t.Parallel()
	out := NoAddress(SMS)
	require.Equal(t, Skip, out.Class)
	require.Equal(t, ClassNoAddress, out.Classification)
}
