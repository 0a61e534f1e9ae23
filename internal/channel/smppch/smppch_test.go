package smppch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/smppch"
	"github.com/heraldhq/herald/internal/gsm7"
	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/smpp"
)

type testBundle struct {
	smsc *smsctest.Server
	d    *smppch.Deliverer
}

func setup(t *testing.T, cfg smppch.Config) *testBundle {
	t.Helper()
	smsc, err := smsctest.Start(t, smsctest.Config{SystemID: "herald", Password: "pw", Packed: cfg.GSM7Packed})
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(smsc.Addr())
	require.NoError(t, err)
	cfg.Host = host
	cfg.Port, _ = strconv.Atoi(port)
	cfg.Provider = "sms/smsc"
	cfg.SystemID = "herald"
	if cfg.Password == "" {
		cfg.Password = "pw"
	}
	cfg.SourceAddr = "HERALD"
	d, err := smppch.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return &testBundle{smsc: smsc, d: d}
}

func msg(to, body string) *channel.Message {
	c, _ := json.Marshal(map[string]string{"body": body})
	return &channel.Message{NotificationID: "n1", RouteID: "r1", Attempt: 1, Address: to, Content: c}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDeliver_TenPartUCS2Reassembles(t *testing.T) {
	t.Parallel()
	// 605 Cyrillic letters and spaces, and 20 emoji (two code units each,
	// never split): 645 code units.
	body := strings.Repeat("Доставка ", 65) + strings.Repeat("📦", 20) + strings.Repeat("ж", 20)
	enc, segments := gsm7.Encoding(body)
	require.Equal(t, gsm7.EncodingUCS2, enc)
	require.Equal(t, 10, segments)
	for _, mode := range []string{"udh", "sar", "payload"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t, smppch.Config{LongMessages: mode})
			out := b.d.Deliver(ctxT(t), msg("+254711000001", body))
			require.Equal(t, channel.Delivered, out.Class, out.Message)
			require.Equal(t, "m1", out.ProviderMessageID, "the first part's id")
			wantSubmits := 10
			if mode == "payload" {
				wantSubmits = 1
			}
			subs := b.smsc.Submits()
			require.Len(t, subs, wantSubmits)
			var ids []string
			for _, s := range subs {
				require.Equal(t, uint8(smpp.CodingUCS2), s.SM.DataCoding)
				require.Equal(t, "254711000001", s.SM.DestinationAddr)
				require.Equal(t, uint8(smpp.ReceiptsFinal), s.SM.RegisteredDelivery,
					"every part asks for a receipt: SMSCs differ in which part's they read")
				ids = append(ids, s.MessageID)
			}
			if wantSubmits > 1 {
				require.Equal(t, ids, out.PartMessageIDs, "every part's id, in part order")
			} else {
				require.Nil(t, out.PartMessageIDs)
			}
			msgs := b.smsc.Messages()
			require.Len(t, msgs, 1)
			require.Equal(t, body, msgs[0].Body)
			require.Equal(t, wantSubmits, msgs[0].Parts)
		})
	}
}

func TestDeliver_PackedGSM7LongReassembles(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("Your code is 1234 {valid} for 5 min € ", 10)
	b := setup(t, smppch.Config{GSM7Packed: true})
	out := b.d.Deliver(ctxT(t), msg("+254711000001", body))
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	_, segments := gsm7.Encoding(body)
	require.Len(t, b.smsc.Submits(), segments)
	require.Equal(t, body, b.smsc.Messages()[0].Body)
}

// deliverLikeTheDispatcher retries Transient outcomes after their
// RetryAfter (or 100ms, shorter than any dispatcher backoff), as the dispatcher would, up to
// maxAttempts; it returns the last outcome and the attempts it took.
func deliverLikeTheDispatcher(ctx context.Context, d channel.Deliverer, m *channel.Message, maxAttempts int, seen func(channel.Outcome)) (channel.Outcome, int) {
	for attempt := 1; ; attempt++ {
		out := d.Deliver(ctx, m)
		if seen != nil {
			seen(out)
		}
		if out.Class != channel.Transient || attempt == maxAttempts {
			return out, attempt
		}
		time.Sleep(max(out.RetryAfter, 100*time.Millisecond))
	}
}

func TestDeliver_ThrottlingSlowsNotDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t, smppch.Config{Binds: 2, ThrottleWait: 200 * time.Millisecond})
	b.smsc.SetThrottle(20)
	ctx := ctxT(t)
	const n, maxAttempts = 60, 10
	var mu sync.Mutex
	throttled := 0
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, _ := deliverLikeTheDispatcher(ctx, b.d, msg("+254711000001", fmt.Sprintf("message %d", i)), maxAttempts, func(o channel.Outcome) {
				if o.Classification == smppch.ClassThrottled {
					mu.Lock()
					throttled++
					mu.Unlock()
					require.Equal(t, channel.Transient, o.Class)
					require.Equal(t, 200*time.Millisecond, o.RetryAfter)
				}
			})
			require.Equal(t, channel.Delivered, out.Class, "message %d was not delivered within %d attempts: %s", i, maxAttempts, out.Message)
		})
	}
	wg.Wait()
	require.Positive(t, throttled, "the SMSC throttled")
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second, "60 messages at 20 a second take at least two seconds")
	require.Len(t, b.smsc.Messages(), n, "every message delivered once")
}

func TestDeliver_DroppedConnLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, smppch.Config{Window: 100})
	ctx := ctxT(t)
	const n = 50
	b.smsc.HoldAndDrop(n)
	first := make([]channel.Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { first[i] = b.d.Deliver(ctx, msg("+254711000001", fmt.Sprintf("message %d", i))) })
	}
	wg.Wait()
	for i, out := range first {
		require.Equal(t, channel.Transient, out.Class, "message %d", i)
		require.Equal(t, smppch.ClassConnectionLost, out.Classification, "message %d", i)
		require.Contains(t, out.Message, "may have accepted it")
	}
	require.Equal(t, uint64(n), b.d.Client().Stats().Lost)

	// The dispatcher retries each (the lease makes the route due again).
	for i := range n {
		wg.Go(func() {
			out, _ := deliverLikeTheDispatcher(ctx, b.d, msg("+254711000001", fmt.Sprintf("message %d", i)), 20, nil)
			require.Equal(t, channel.Delivered, out.Class, out.Message)
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, m := range b.smsc.Messages() {
		count[m.Body]++
	}
	repeats := 0
	for i := range n {
		c := count[fmt.Sprintf("message %d", i)]
		require.GreaterOrEqual(t, c, 1, "message %d was lost", i)
		repeats += c - 1
	}
	require.Len(t, count, n)
	require.LessOrEqual(t, repeats, n, "only the submits outstanding at the drop may repeat")
	t.Logf("repeated after the drop: %d of %d outstanding", repeats, n)
}

func TestDeliverer_ReceiptsAndInboundReachFuncs(t *testing.T) {
	t.Parallel()
	receipts := make(chan smpp.Receipt, 4)
	inbound := make(chan smpp.Inbound, 1)
	b := setup(t, smppch.Config{
		ReceiptFunc: func(ctx context.Context, r smpp.Receipt) error { receipts <- r; return nil },
		InboundFunc: func(ctx context.Context, m smpp.Inbound) error { inbound <- m; return nil },
	})
	b.smsc.SetReceipts(&smsctest.ReceiptPlan{Stat: "UNDELIV", Err: "001"})
	ctx := ctxT(t)
	out := b.d.Deliver(ctx, msg("+254711000001", "hello"))
	require.Equal(t, channel.Delivered, out.Class)
	r := <-receipts
	require.Equal(t, out.ProviderMessageID, r.ProviderMessageID)
	require.Equal(t, "UNDELIV", r.Status)
	require.Equal(t, "sms/smsc", r.Provider)

	mo, err := smsctest.MO("254711000001", "HERALD", "STOP")
	require.NoError(t, err)
	st, err := b.smsc.Deliver(ctx, mo)
	require.NoError(t, err)
	require.Equal(t, smpp.StatusOK, st)
	require.Equal(t, "STOP", (<-inbound).Body)
}

func TestDeliver_ErrorsMapToOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t, smppch.Config{})
	b.smsc.FailDestination("254700000001", smpp.StatusInvDstAdr)
	b.smsc.FailDestination("254700000002", smpp.StatusSysErr)
	b.smsc.FailDestination("254700000003", smpp.Status(0x401))
	ctx := ctxT(t)
	out := b.d.Deliver(ctx, msg("+254700000001", "x"))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, "smpp_0x0000000b", out.Classification)
	require.Contains(t, out.Message, "ESME_RINVDSTADR")
	require.NotEmpty(t, out.RecoveryHint)
	out = b.d.Deliver(ctx, msg("+254700000002", "x"))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, "smpp_0x00000008", out.Classification)
	out = b.d.Deliver(ctx, msg("+254700000003", "x"))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, "smpp_0x00000401", out.Classification)

	out = b.d.Deliver(ctx, msg("0711000001", "x"))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, channel.ClassInvalidDestination, out.Classification)
	require.NotContains(t, out.Message, "0711000001")
	out = b.d.Deliver(ctx, &channel.Message{Address: "+254711000001", Content: json.RawMessage(`{"body":""}`)})
	require.Equal(t, channel.ClassBadContent, out.Classification)
	require.Empty(t, b.smsc.Messages())
}

func TestDeliver_RefusedBindIsTransientWithHint(t *testing.T) {
	t.Parallel()
	b := setup(t, smppch.Config{Password: "wrong"})
	ctx := ctxT(t)
	var out channel.Outcome
	require.Eventually(t, func() bool {
		out = b.d.Deliver(ctx, msg("+254711000001", "x"))
		return out.Classification == smppch.ClassNotBound
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, channel.Transient, out.Class)
	require.Contains(t, out.Message, "ESME_RINVPASWD")
	require.Contains(t, out.RecoveryHint, "password")
}

// TestClassify_EveryStatusHasAClass: whatever an SMSC answers,
// the outcome says what it was.
func TestClassify_EveryStatusHasAClass(t *testing.T) {
	t.Parallel()
	for _, st := range smpp.Statuses() {
		out := smppch.StatusOutcome(st)
		require.NotEmpty(t, out.Classification, st.String())
		if st == smpp.StatusOK {
			require.Equal(t, channel.Delivered, out.Class)
			continue
		}
		require.Contains(t, out.Message, st.Name())
		require.Contains(t, []channel.Class{channel.Transient, channel.Permanent}, out.Class, st.String())
		if out.Class == channel.Permanent {
			require.NotEmpty(t, out.RecoveryHint, st.String())
		}
	}
	require.Equal(t, smppch.ClassThrottled, smppch.StatusOutcome(smpp.StatusThrottled).Classification)
	require.Equal(t, smppch.ClassQueueFull, smppch.StatusOutcome(smpp.StatusMsgQFul).Classification)
	for _, st := range []smpp.Status{smpp.StatusInvDstAdr, smpp.StatusInvSrcAdr, smpp.StatusInvMsgLen} {
		require.Equal(t, channel.Permanent, smppch.StatusOutcome(st).Class, st.String())
	}
	for _, st := range []smpp.Status{smpp.StatusSysErr, smpp.StatusThrottled, smpp.StatusMsgQFul, smpp.StatusXTAppn, smpp.StatusInvPaswd, 0x4FF} {
		require.Equal(t, channel.Transient, smppch.StatusOutcome(st).Class, st.String())
	}
}

func TestNew_NamesTheWrongField(t *testing.T) {
	t.Parallel()
	for want, cfg := range map[string]smppch.Config{
		"smpp config: Host is required":                                    {SystemID: "x"},
		"smpp config: LongMessages: \"pigeon\" is not udh, sar or payload": {Host: "h", SystemID: "x", LongMessages: "pigeon"},
		"smpp config: Receipts: \"all\" is not final, failure or none":     {Host: "h", SystemID: "x", Receipts: "all"},
		"smpp config: SystemID is required":                                {Host: "h"},
	} {
		_, err := smppch.New(cfg)
		require.EqualError(t, err, want)
	}
}

// TestDeliver_MarksThrottledAndUnsent: the SMSC's
// ESME_RTHROTTLED is a Transient outcome marked Throttled (the provider's
// health counts it as throttling); with every bind refused nothing is
// sent, the outcome is marked Unsent and Ready says why.
func TestDeliver_MarksThrottledAndUnsent(t *testing.T) {
	t.Parallel()
	b := setup(t, smppch.Config{})
	b.smsc.SetThrottle(1)
	var throttled channel.Outcome
	for range 3 {
		out := b.d.Deliver(ctxT(t), msg("+254711000001", "hello"))
		if out.Class == channel.Transient {
			throttled = out
		}
	}
	require.Equal(t, smppch.ClassThrottled, throttled.Classification)
	require.True(t, throttled.Throttled)
	require.False(t, throttled.Unsent)

	b.smsc.RefuseBinds(smpp.StatusInvPaswd)
	b.smsc.DropAll()
	require.Eventually(t, func() bool {
		err := b.d.Ready()
		return err != nil && strings.Contains(err.Error(), "the SMSC refuses herald's bind: ESME_RINVPASWD (0x0000000E)")
	}, 10*time.Second, 10*time.Millisecond, "Ready says the bind is refused, and why")
	n := len(b.smsc.Submits())
	out := b.d.Deliver(ctxT(t), msg("+254711000001", "hello"))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, smppch.ClassNotBound, out.Classification)
	require.True(t, out.Unsent)
	require.Contains(t, out.Message, "(0x0000000E)", "the status code is not redacted")
	require.Len(t, b.smsc.Submits(), n, "nothing was sent")
}
