package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/intake"
)

// submit accepts one sms intent through the client's own statement, which
// sends the herald_routes hint.
func (b *testBundle) submit(t *testing.T, key string) {
	t.Helper()
	v, err := intake.Validate(&intake.Intent{
		NotificationType: "otp.sent", Producer: "test", IdempotencyKey: key,
		Audience: intake.Audience{SMS: []string{"+33612345678"}}, Channels: []string{channel.SMS},
		Content: intake.Content{SMS: &intake.SMSContent{Body: "code 123456"}},
	}, intake.Limits{}, time.Now())
	require.NoError(t, err)
	hint := channel.SMS
	_, err = accept.Accept(context.Background(), b.pool, []*intake.Validated{v}, accept.Params{Notify: &hint})
	require.NoError(t, err)
}

func TestListener_ReconnectsAfterConnDies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	delivered := make(chan string, 10)
	d := b.start(t, &Config{
		Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.DelivererFunc(
			func(_ context.Context, m *channel.Message) channel.Outcome {
				delivered <- m.NotificationID
				return channel.Outcome{Class: channel.Delivered}
			})}},
		// Only a NOTIFY can explain a pick-up within this test's time.
		PollInterval: time.Hour,
	})
	waitListening := func() int {
		var pid int
		require.Eventually(t, func() bool {
			// Test-only probe of the dispatcher's LISTEN connection.
			err := b.pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
				WHERE datname = current_database() AND query LIKE 'LISTEN %' LIMIT 1`).Scan(&pid)
			return err == nil
		}, 10*time.Second, 10*time.Millisecond)
		return pid
	}
	pid := waitListening()
	// The loop is asleep after the wake-up the connection brought.
	awaitMoment(t, d, moment{kind: signalListening})
	awaitMoment(t, d, moment{signalIdle, channel.SMS})
	b.submit(t, "before")
	select {
	case <-delivered:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no pick-up on NOTIFY")
	}

	_, err := b.pool.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return waitListening() != pid }, 10*time.Second, 20*time.Millisecond)
	// The reconnect's own wake-up has passed: the loop is asleep again.
	awaitMoment(t, d, moment{kind: signalListening})
	awaitMoment(t, d, moment{signalIdle, channel.SMS})
	for i := range 3 {
		b.submit(t, fmt.Sprintf("after-%d", i))
		select {
		case <-delivered:
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no pick-up on NOTIFY after the listener reconnected")
		}
	}
}
