package logch

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func setup(t *testing.T) (*Deliverer, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	d, err := New(Config{Logger: slog.New(slog.NewJSONHandler(buf, nil)), Channel: channel.SMS})
	require.NoError(t, err)
	return d, buf
}

func TestDeliver_LogsMaskedAddressAtInfo(t *testing.T) {
	t.Parallel()
	d, buf := setup(t)

	out := d.Deliver(t.Context(), &channel.Message{
		NotificationID:   "ntf_1",
		RouteID:          "rte_1",
		NotificationType: "otp.requested",
		Attempt:          2,
		Address:          "+14155550100",
		Content:          json.RawMessage(`{"body":"your code is 981273"}`),
	})
	require.Equal(t, channel.Delivered, out.Class)
	require.Equal(t, ClassLogged, out.Classification)

	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(buf.String()), &rec))
	require.Equal(t, "INFO", rec["level"])
	require.Equal(t, "ntf_1", rec["notification_id"])
	require.Equal(t, "rte_1", rec["route_id"])
	require.Equal(t, "sms", rec["channel"])
	require.EqualValues(t, 2, rec["attempt"])
	require.Equal(t, "+1415*****00", rec["address"])
	require.NotContains(t, buf.String(), "+14155550100")
	require.NotContains(t, buf.String(), "981273", "the payload is never logged")
}

func TestDeliver_DeliversAnyContent(t *testing.T) {
	t.Parallel()
	d, _ := setup(t)

	var wg sync.WaitGroup
	for _, c := range []string{``, `not json`, `{"subject":1}`, `null`} {
		wg.Go(func() {
			out := d.Deliver(t.Context(), &channel.Message{Address: "jane@example.com", Content: json.RawMessage(c)})
			require.Equal(t, channel.Delivered, out.Class)
		})
	}
	wg.Wait()
}

func TestNew_RequiresLogger(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	require.ErrorContains(t, err, "Logger")
}

func TestDeliver_NilMessageIsDelivered(t *testing.T) {
	t.Parallel()
	d, _ := setup(t)
	require.Equal(t, channel.Delivered, d.Deliver(t.Context(), nil).Class)
}
