package smpp_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/smpp"
)

type testBundle struct {
	smsc   *smsctest.Server
	client *smpp.Client
}

func setup(t *testing.T, cfg smpp.ClientConfig) *testBundle {
	t.Helper()
	smsc, err := smsctest.Start(t, smsctest.Config{SystemID: "herald", Password: "pw"})
	require.NoError(t, err)
	cfg.Addr = smsc.Addr()
	if cfg.SystemID == "" {
		cfg.SystemID, cfg.Password = "herald", "pw"
	}
	cfg.Provider = "sms/test"
	cfg.ReconnectMin = 20 * time.Millisecond
	cfg.ReconnectMax = 100 * time.Millisecond
	client, err := smpp.NewClient(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	return &testBundle{smsc: smsc, client: client}
}

func textSM(dest, body string) *smpp.SM {
	return &smpp.SM{DestAddrTON: 1, DestAddrNPI: 1, DestinationAddr: dest, SourceAddr: "HERALD", SourceAddrTON: 5, ShortMessage: []byte(body)}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClient_SubmitAnsweredWithMessageID(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{Binds: 2})
	res, err := b.client.Submit(ctxT(t), textSM("254711000001", "hello"))
	require.NoError(t, err)
	require.Equal(t, smpp.StatusOK, res.Status)
	require.Equal(t, "m1", res.MessageID)
	msgs := b.smsc.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, "hello", msgs[0].Body)
	require.Eventually(t, func() bool { return b.client.Stats().Bound == 2 }, 5*time.Second, 5*time.Millisecond)
}

func TestClient_RefusedBindFailsSubmitsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{SystemID: "herald", Password: "wrong"})
	ctx := ctxT(t)
	var err error
	require.Eventually(t, func() bool {
		_, err = b.client.Submit(ctx, textSM("254711000001", "x"))
		return errors.Is(err, smpp.ErrNotBound)
	}, 5*time.Second, 10*time.Millisecond)
	var se *smpp.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, smpp.StatusInvPaswd, se.Status)
	require.NotContains(t, err.Error(), "wrong", "the password never shows")
}

func TestClient_ErrorReturnedAsStatus(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{})
	b.smsc.FailDestination("254700000000", smpp.StatusInvDstAdr)
	res, err := b.client.Submit(ctxT(t), textSM("254700000000", "x"))
	require.NoError(t, err)
	require.Equal(t, smpp.StatusInvDstAdr, res.Status)
	require.Empty(t, res.MessageID)
}

func TestClient_ThrottledBindRests(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{ThrottleWait: 150 * time.Millisecond})
	b.smsc.SetThrottle(1)
	ctx := ctxT(t)
	res, err := b.client.Submit(ctx, textSM("254711000001", "a"))
	require.NoError(t, err)
	require.Equal(t, smpp.StatusOK, res.Status)
	res, err = b.client.Submit(ctx, textSM("254711000001", "b"))
	require.NoError(t, err)
	require.Equal(t, smpp.StatusThrottled, res.Status)
	require.Equal(t, 150*time.Millisecond, res.RetryAfter)
	b.smsc.SetThrottle(0)
	start := time.Now()
	res, err = b.client.Submit(ctx, textSM("254711000001", "c"))
	require.NoError(t, err)
	require.Equal(t, smpp.StatusOK, res.Status)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "the bind rested")
}

func TestClient_WindowBoundsOutstanding(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{Window: 3})
	b.smsc.SetDelay(100 * time.Millisecond)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for range 9 {
		wg.Go(func() {
			res, err := b.client.Submit(ctx, textSM("254711000001", "x"))
			require.NoError(t, err)
			require.Equal(t, smpp.StatusOK, res.Status)
		})
	}
	wg.Wait()
	// The SMSC counts what it holds unanswered: every submit_sm it has
	// read and not yet answered, exactly what the window bounds.
	require.LessOrEqual(t, b.smsc.MaxUnanswered(), 3)
	require.Len(t, b.smsc.Submits(), 9)
}

func TestClient_MissingResponseTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{ResponseTimeout: 100 * time.Millisecond})
	b.smsc.SetDelay(time.Second)
	_, err := b.client.Submit(ctxT(t), textSM("254711000001", "x"))
	require.ErrorIs(t, err, smpp.ErrResponseTimeout)
}

func TestClient_DroppedConnFailsAndRebinds(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{Window: 64})
	ctx := ctxT(t)
	_, err := b.client.Submit(ctx, textSM("254711000001", "warm-up"))
	require.NoError(t, err)
	b.smsc.HoldAndDrop(50)
	errs := make(chan error, 50)
	for range 50 {
		go func() {
			_, err := b.client.Submit(ctx, textSM("254711000001", "x"))
			errs <- err
		}()
	}
	for range 50 {
		require.ErrorIs(t, <-errs, smpp.ErrConnectionLost)
	}
	require.Equal(t, uint64(50), b.client.Stats().Lost)
	require.Eventually(t, func() bool {
		res, err := b.client.Submit(ctx, textSM("254711000001", "after"))
		return err == nil && res.Status == smpp.StatusOK
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 2, b.smsc.Binds())
}

func TestClient_ReceiptFuncBeforeResponse(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		got      []smpp.Receipt
		respsNow []int
		fail     atomic.Bool
		smsc     *smsctest.Server
	)
	b := setup(t, smpp.ClientConfig{ReceiptFunc: func(ctx context.Context, r smpp.Receipt) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		respsNow = append(respsNow, len(smsc.DeliverResps()))
		if fail.Load() {
			return errors.New("inbox unavailable")
		}
		return nil
	}})
	smsc = b.smsc
	ctx := ctxT(t)
	res, err := b.client.Submit(ctx, textSM("254711000001", "hello"))
	require.NoError(t, err)

	dr, err := b.smsc.ReceiptFor(res.MessageID, smsctest.ReceiptPlan{Stat: "DELIVRD"})
	require.NoError(t, err)
	st, err := b.smsc.Deliver(ctx, dr)
	require.NoError(t, err)
	require.Equal(t, smpp.StatusOK, st)

	fail.Store(true)
	st, err = b.smsc.Deliver(ctx, smsctest.Receipt("254711000001", "HERALD", "no-such-id", smsctest.ReceiptPlan{Stat: "UNDELIV", Err: "034", TextOnly: true}, time.Now()))
	require.NoError(t, err)
	require.Equal(t, smpp.StatusXTAppn, st, "a failed ReceiptFunc asks the SMSC to send it again")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	require.Equal(t, []int{0, 1}, respsNow, "each receipt was handed over before its deliver_sm_resp")
	require.Equal(t, "sms/test", got[0].Provider)
	require.Equal(t, res.MessageID, got[0].ProviderMessageID)
	require.Equal(t, "DELIVRD", got[0].Status)
	require.Equal(t, "000", got[0].ErrorCode)
	require.Contains(t, got[0].Raw, "id:"+res.MessageID)
	require.False(t, got[0].ReceivedAt.IsZero())
	require.Equal(t, "no-such-id", got[1].ProviderMessageID, "a receipt for an unknown id is handed over too")
	require.Equal(t, "UNDELIV", got[1].Status)
	require.Equal(t, "034", got[1].ErrorCode)
}

func TestClient_HandsOverEveryReceipt(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	b := setup(t, smpp.ClientConfig{ReceiptFunc: func(ctx context.Context, r smpp.Receipt) error {
		n.Add(1)
		return nil
	}})
	b.smsc.SetReceipts(&smsctest.ReceiptPlan{Stat: "DELIVRD", After: 50 * time.Millisecond, Twice: true})
	_, err := b.client.Submit(ctxT(t), textSM("254711000001", "x"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return n.Load() == 2 }, 5*time.Second, 5*time.Millisecond)
}

func TestClient_MOGoesToInboundFunc(t *testing.T) {
	t.Parallel()
	got := make(chan smpp.Inbound, 1)
	b := setup(t, smpp.ClientConfig{InboundFunc: func(ctx context.Context, m smpp.Inbound) error {
		got <- m
		return nil
	}})
	ctx := ctxT(t)
	require.Eventually(t, func() bool { return b.smsc.Bound() == 1 }, 5*time.Second, 5*time.Millisecond)
	mo, err := smsctest.MO("254711000001", "22555", "STOP ж")
	require.NoError(t, err)
	st, err := b.smsc.Deliver(ctx, mo)
	require.NoError(t, err)
	require.Equal(t, smpp.StatusOK, st)
	m := <-got
	require.Equal(t, "254711000001", m.From)
	require.Equal(t, "22555", m.To)
	require.Equal(t, "STOP ж", m.Body)
	require.Equal(t, uint8(smpp.CodingUCS2), m.DataCoding)
}

func TestClient_CloseUnbindsGracefully(t *testing.T) {
	t.Parallel()
	b := setup(t, smpp.ClientConfig{Binds: 3})
	require.Eventually(t, func() bool { return b.smsc.Bound() == 3 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, b.client.Close())
	require.Eventually(t, func() bool { return b.smsc.Bound() == 0 }, 5*time.Second, 5*time.Millisecond)
	_, err := b.client.Submit(ctxT(t), textSM("254711000001", "x"))
	require.ErrorIs(t, err, smpp.ErrClosed)
}

// TestClient_SilentPeerIsRebound binds to a server that answers the
// bind and then says nothing, not even to enquire_link.
func TestClient_SilentPeerIsRebound(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var binds atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				p, err := smpp.ReadPDU(c)
				if err != nil {
					return
				}
				binds.Add(1)
				b, _ := (&smpp.PDU{Command: p.Command.Response(), Sequence: p.Sequence, Body: &smpp.BindResp{SystemID: "mute"}}).Encode()
				_, _ = c.Write(b)
				for {
					if _, err := smpp.ReadPDU(c); err != nil {
						return
					}
				}
			}()
		}
	}()
	client, err := smpp.NewClient(smpp.ClientConfig{Addr: ln.Addr().String(), SystemID: "x",
		EnquireLinkInterval: 30 * time.Millisecond, DeadPeerTimeout: 100 * time.Millisecond, ReconnectMin: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	require.Eventually(t, func() bool { return binds.Load() >= 2 }, 5*time.Second, 10*time.Millisecond)
}

func TestNewClient_NamesTheWrongField(t *testing.T) {
	t.Parallel()
	for want, cfg := range map[string]smpp.ClientConfig{
		"Addr is required":                                {SystemID: "x"},
		"SystemID is required":                            {Addr: "a:1"},
		"Password must be at most 8 octets":               {Addr: "a:1", SystemID: "x", Password: "123456789"},
		"Window must be between 1 and 1000":               {Addr: "a:1", SystemID: "x", Window: 1001},
		"DeadPeerTimeout must exceed EnquireLinkInterval": {Addr: "a:1", SystemID: "x", EnquireLinkInterval: time.Second, DeadPeerTimeout: time.Second},
	} {
		_, err := smpp.NewClient(cfg)
		require.EqualError(t, err, "smpp config: "+want)
	}
}

// TestClient_ReadySaysWhyNotBound: while the SMSC refuses the
// binds, Ready returns ErrNotBound with the SMSC's refusal; once a bind is
// accepted it returns nil; after Close, ErrClosed.
func TestClient_ReadySaysWhyNotBound(t *testing.T) {
	t.Parallel()
	smsc, err := smsctest.Start(t, smsctest.Config{SystemID: "herald", Password: "pw"})
	require.NoError(t, err)
	smsc.RefuseBinds(smpp.StatusBindFail)
	client, err := smpp.NewClient(smpp.ClientConfig{Addr: smsc.Addr(), SystemID: "herald", Password: "pw",
		Binds: 2, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	require.Eventually(t, func() bool { return client.Ready() != nil }, 5*time.Second, 5*time.Millisecond)
	err = client.Ready()
	require.ErrorIs(t, err, smpp.ErrNotBound)
	se, ok := errors.AsType[*smpp.StatusError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, smpp.StatusBindFail, se.Status)
	_, err = client.Submit(ctxT(t), textSM("254711000001", "hello"))
	require.ErrorIs(t, err, smpp.ErrNotBound, "Submit says the same, at once")

	smsc.RefuseBinds(smpp.StatusOK)
	require.Eventually(t, func() bool { return client.Ready() == nil }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, client.Close())
	require.ErrorIs(t, client.Ready(), smpp.ErrClosed)
}
