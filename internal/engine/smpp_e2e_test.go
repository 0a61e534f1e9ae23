package engine

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/smpp"
	"github.com/heraldhq/herald/internal/sqldoor"
)

// TestSMPP_ReceiptsAndInboundStored delivers through an
// SMPP provider from the database to the test SMSC, which sends a receipt
// (twice) and a mobile-originated message: the receipt sets the route's
// delivery status once, and the message is stored for operators.
func TestSMPP_ReceiptsAndInboundStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	smsc := startSMPPEngine(t, b, &smsctest.ReceiptPlan{Stat: "DELIVRD", Twice: true})
	ctx := context.Background()

	b.submitSMS(t, "smpp-1", "+254712345678")
	require.Equal(t, []string{"sms/smsc"}, b.providersOf(t, "smpp-1"))
	require.Eventually(t, func() bool {
		var s *string
		err := b.pool.QueryRow(ctx, `
			SELECT r.delivery_status FROM herald.routes r JOIN herald.records rec USING (notification_id)
			WHERE rec.idempotency_key = 'smpp-1'`).Scan(&s)
		return err == nil && s != nil && *s == "delivered"
	}, 15*time.Second, 20*time.Millisecond, "the SMSC's receipt set the delivery status")
	require.Eventually(t, func() bool {
		var matched, duplicate int
		err := b.pool.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE state = 'matched'), count(*) FILTER (WHERE state = 'duplicate')
			FROM herald.delivery_receipts WHERE source = 'smpp'`).Scan(&matched, &duplicate)
		return err == nil && matched == 1 && duplicate == 1
	}, 15*time.Second, 20*time.Millisecond, "the duplicated receipt changed nothing")

	mo, err := smsctest.MO("254700000001", "447911123456", "STOP")
	require.NoError(t, err)
	st, err := smsc.Deliver(ctx, mo)
	require.NoError(t, err)
	require.Equal(t, smpp.StatusOK, st, "answered only once stored")
	var body, from string
	require.NoError(t, b.pool.QueryRow(ctx,
		`SELECT body, from_addr FROM herald.inbound_messages WHERE provider = 'sms/smsc'`).Scan(&body, &from))
	require.Equal(t, "STOP", body)
	require.Equal(t, "254700000001", from)
}

// startSMPPEngine starts a test SMSC (sending receipts as plan says; nil
// sends none) and an engine whose sms channel goes to it through provider
// sms/smsc, password from the environment, stopped at the test's end.
func startSMPPEngine(t *testing.T, b *testBundle, plan *smsctest.ReceiptPlan) *smsctest.Server {
	t.Helper()
	smsc, _ := startSMPPEngineWith(t, b, smppEngineOpts{plan: plan})
	return smsc
}

// smppEngineOpts vary startSMPPEngineWith's set-up.
type smppEngineOpts struct {
	plan *smsctest.ReceiptPlan
	// smpp adds settings to the provider's smpp: map ("long_messages:
	// sar"); provider adds keys to the provider ("receipts: {...}").
	smpp, provider string
	// password is the one herald binds with; default the SMSC's, "pw".
	password string
}

// startSMPPEngineWith is startSMPPEngine with opts; it returns the
// routing file it applied too.
func startSMPPEngineWith(t *testing.T, b *testBundle, opts smppEngineOpts) (*smsctest.Server, string) {
	t.Helper()
	smsc, err := smsctest.Start(t, smsctest.Config{SystemID: "herald", Password: "pw"})
	require.NoError(t, err)
	if opts.plan != nil {
		smsc.SetReceipts(opts.plan)
	}
	host, port, err := net.SplitHostPort(smsc.Addr())
	require.NoError(t, err)
	extra := ""
	if opts.smpp != "" {
		extra = ", " + opts.smpp
	}
	file := fmt.Sprintf(`
providers:
  - name: sms/smsc
    driver: smpp
    smpp: {host: %q, port: %s, system_id: herald, password: {env: SMSC_PASSWORD}%s}
%s
rules:
  sms:
    - name: all
      providers: [sms/smsc]
`, host, port, extra, opts.provider)
	b.applyRouting(t, file)
	e, err := New(b.pool, &Config{
		Logger:     discardLogger(),
		GetenvFunc: env(map[string]string{"SMSC_PASSWORD": cmp.Or(opts.password, "pw")}),
		Dispatch: dispatch.Config{
			Channels:     map[string]dispatch.ChannelConfig{"webhook": {Deliverer: &closingDeliverer{}}},
			PollInterval: 50 * time.Millisecond,
		},
		Intake: &sqldoor.WorkerConfig{PollInterval: 50 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return smsc, file
}
