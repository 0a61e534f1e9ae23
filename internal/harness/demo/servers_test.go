package demo_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/harness/demo"
)

func setup(t *testing.T) *demo.Servers {
	t.Helper()
	srv, err := demo.Start(context.Background())
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

func msg(addr string, content string) *channel.Message {
	return &channel.Message{NotificationID: "n1", RouteID: "r1", NotificationType: "t.t", Attempt: 1,
		Address: addr, Content: json.RawMessage(content), AcceptedAt: time.Now()}
}

func TestSMSProvider_ThrottlesFailsRefuses(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	d, err := sms.New(sms.Config{URL: srv.SMS.URL, APIKey: srv.SMS.APIKey})
	require.NoError(t, err)
	defer d.Close()
	ctx := context.Background()

	classes := map[channel.Class]int{}
	var throttled channel.Outcome
	for range 14 {
		out := d.Deliver(ctx, msg("+14155551234", `{"body":"hi"}`))
		classes[out.Class]++
		if out.Classification == sms.ClassProviderThrottled {
			throttled = out
		}
	}
	require.Equal(t, 11, classes[channel.Delivered])
	require.Equal(t, 3, classes[channel.Transient], "requests 7, 11 and 14")
	require.Equal(t, time.Second, throttled.RetryAfter)

	out := d.Deliver(ctx, msg("+14155550199", `{"body":"hi"}`)) // request 15
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, channel.ClassInvalidDestination, out.Classification)

	out = d.Deliver(ctx, msg(demo.SMSDownPrefix+"710001002", `{"body":"hi"}`)) // request 16
	require.Equal(t, channel.Transient, out.Class, "the main provider cannot reach "+demo.SMSDownPrefix)
	require.Zero(t, out.RetryAfter, "a failover need not wait")
	require.Equal(t, int64(1), srv.SMS.Unavailable.Load())

	bad, err := sms.New(sms.Config{URL: srv.SMS.URL, APIKey: "wrong"})
	require.NoError(t, err)
	defer bad.Close()
	require.Equal(t, sms.ClassProviderAuth, bad.Deliver(ctx, msg("+14155551234", `{"body":"hi"}`)).Classification)
	require.Equal(t, int64(17), srv.SMS.Requests.Load())
	require.Zero(t, srv.SMSBackup.Requests.Load())
}

func TestSMSProvider_BackupAcceptsAndCounts(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	d, err := sms.New(sms.Config{URL: srv.SMSBackup.URL, APIKey: srv.SMSBackup.APIKey})
	require.NoError(t, err)
	defer d.Close()
	ctx := context.Background()

	for range 14 {
		require.Equal(t, channel.Delivered, d.Deliver(ctx, msg("+14155551234", `{"body":"hi"}`)).Class)
	}
	require.Equal(t, channel.Delivered, d.Deliver(ctx, msg(demo.SMSDownPrefix+"710001002", `{"body":"hi"}`)).Class)
	require.Equal(t, channel.Permanent, d.Deliver(ctx, msg("+14155550199", `{"body":"hi"}`)).Class)
	require.Equal(t, int64(16), srv.SMSBackup.Requests.Load())
	require.Equal(t, int64(15), srv.SMSBackup.Accepted.Load())
	require.Equal(t, 16, srv.SMSBackup.MaxPerSecond(), "16 requests in well under a second")
	require.Zero(t, srv.SMS.MaxPerSecond())
}

func TestServers_SMTPBouncesAndGreylists(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	d, err := email.New(email.Config{Host: srv.SMTPHost, Port: srv.SMTPPort, TLS: email.TLSNone,
		From: "noreply@example.test", HeloName: "localhost"})
	require.NoError(t, err)
	defer d.Close()
	ctx := context.Background()
	content := `{"subject":"s","text":"t"}`

	require.Equal(t, channel.Delivered, d.Deliver(ctx, msg("user1@example.test", content)).Class)
	out := d.Deliver(ctx, msg(demo.MailboxBounce+"1@example.test", content))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, "smtp_550", out.Classification)
	require.Equal(t, channel.Transient, d.Deliver(ctx, msg(demo.MailboxGreylist+"1@example.test", content)).Class)
	require.Equal(t, channel.Delivered, d.Deliver(ctx, msg(demo.MailboxGreylist+"1@example.test", content)).Class)
	require.Equal(t, int64(2), srv.MailAccepted.Load())
}

func TestServers_WebhookAnswersByPath(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	d, err := webhook.New(webhook.Config{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, AllowPrivate: true})
	require.NoError(t, err)
	defer d.Close()
	ctx := context.Background()

	require.Equal(t, channel.Delivered, d.Deliver(ctx, msg(srv.Webhook+demo.WebhookPathOK+"a", `{}`)).Class)
	out := d.Deliver(ctx, msg(srv.Webhook+demo.WebhookPathGone+"a", `{}`))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, channel.Transient, d.Deliver(ctx, msg(srv.Webhook+demo.WebhookPathDown+"a", `{}`)).Class)
}
