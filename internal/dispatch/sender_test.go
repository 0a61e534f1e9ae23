package dispatch

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/smppch"
	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// The sms content's sender and flash, as intake stores them, reach the
// SMSC through the dispatcher and the SMPP driver: source_addr with its
// TON/NPI, data_coding with message class 0; a route without them goes
// with the provider's sender and no class.
func TestTheStoredSenderAndFlashReachTheSMSC(t *testing.T) {
	t.Parallel()
	b := setup(t)
	smsc, err := smsctest.Start(t, smsctest.Config{SystemID: "herald", Password: "pw"})
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(smsc.Addr())
	require.NoError(t, err)
	p, _ := strconv.Atoi(port)
	d, err := smppch.New(smppch.Config{Host: host, Port: p, SystemID: "herald", Password: "pw", SourceAddr: "DEFAULT", Provider: "sms/smsc"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })

	keys := b.insert(t,
		routeSpec{channel: channel.SMS, ref: "+447911123456", payload: `{"sms":{"body":"plain"}}`},
		routeSpec{channel: channel.SMS, ref: "+447911123456", payload: `{"sms":{"body":"from acme","from":"ACME"}}`},
		routeSpec{channel: channel.SMS, ref: "+447911123456", payload: `{"sms":{"body":"flash","flash":true,"from":"+447700900123"}}`},
	)
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: d}}})
	for _, k := range keys {
		b.waitStatus(t, k, "published")
	}
	type seen struct {
		Source   string
		TON, NPI uint8
		Coding   uint8
	}
	got := map[string]seen{}
	for _, m := range smsc.Messages() {
		got[m.Body] = seen{m.Source, m.SourceTON, m.SourceNPI, m.DataCoding}
	}
	require.Equal(t, map[string]seen{
		"plain":     {"DEFAULT", 5, 0, 0x00},
		"from acme": {"ACME", 5, 0, 0x00},
		"flash":     {"447700900123", 1, 1, 0x10},
	}, got)
}

// A templated notification's sender and flash (its payload's
// "sms_options", from intake through the content check) are added to the
// SMS rendered for it, as a content intent's sms entry carries them.
func TestATemplatedSMSGetsItsSenderAndFlash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publishTemplate(t, "otp", `{"en": {"sms": {"body": "Code {{.code}}"}}}`)
	out := b.submitTemplated(t, &heraldtype.Intent{
		NotificationType: "otp", Producer: "shop", IdempotencyKey: "otp-1",
		Audience: heraldtype.Audience{SMS: []string{"+14155550123"}}, Channels: []string{"sms"},
		Template: &heraldtype.TemplateRef{Name: "otp"}, Data: map[string]any{"code": "4242"},
		FromSender: "ACME", MessageType: heraldtype.MessageTypeFlashSMS,
	})
	plain := b.submitTemplated(t, &heraldtype.Intent{
		NotificationType: "otp", Producer: "shop", IdempotencyKey: "otp-2",
		Audience: heraldtype.Audience{SMS: []string{"+14155550124"}}, Channels: []string{"sms"},
		Template: &heraldtype.TemplateRef{Name: "otp"}, Data: map[string]any{"code": "1111"},
	})
	rec := &recorder{}
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: rec}}})
	for _, o := range []string{out.NotificationID, plain.NotificationID} {
		routes, err := b.q.RouteListByNotification(context.Background(), b.pool, o)
		require.NoError(t, err)
		b.waitStatus(t, routeKey{o, routes[0].RouteID}, "published")
	}
	require.JSONEq(t, `{"body":"Code 4242","flash":true,"from":"ACME"}`, string(rec.get("+14155550123").Content))
	require.JSONEq(t, `{"body":"Code 1111"}`, string(rec.get("+14155550124").Content))
}
