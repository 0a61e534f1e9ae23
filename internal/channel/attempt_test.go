package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAttempt_GuardsMessageLogsNoAddress(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	calls := 0
	deliver := func(context.Context, *Message) Outcome { calls++; return Outcome{Class: Delivered} }
	ctx := context.Background()

	require.Equal(t, Permanent, Attempt(ctx, logger, SMS, nil, deliver).Class, "a nil message is bad content")
	out := Attempt(ctx, logger, SMS, &Message{Address: "  "}, deliver)
	require.Equal(t, NoAddress(SMS), out)
	require.Zero(t, calls, "no address: the channel is not called")

	logs.Reset()
	msg := &Message{NotificationID: "n1", RouteID: "sms:1", Attempt: 2, Address: "+33612345678", Content: json.RawMessage(`{"body":"secret code 1234"}`)}
	require.Equal(t, Delivered, Attempt(ctx, logger, SMS, msg, deliver).Class)
	require.Equal(t, 1, calls)
	line := logs.String()
	require.Contains(t, line, `"msg":"sms attempt"`)
	require.Contains(t, line, `"route_id":"sms:1"`)
	require.NotContains(t, line, "+33612345678")
	require.False(t, strings.Contains(line, "secret code"), "content is never logged")
}
