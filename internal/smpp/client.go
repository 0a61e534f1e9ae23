package smpp

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/pause"
)

// Defaults for the zero values of ClientConfig, and limits.
const (
	DefaultBinds               = 1
	DefaultWindow              = 10
	DefaultResponseTimeout     = 10 * time.Second
	DefaultEnquireLinkInterval = 30 * time.Second
	DefaultBindTimeout         = 10 * time.Second
	DefaultReconnectMin        = 500 * time.Millisecond
	DefaultReconnectMax        = 30 * time.Second
	DefaultThrottleWait        = time.Second
	DefaultHandlerTimeout      = 10 * time.Second
	// MaxBinds and MaxWindow bound Binds and Window.
	MaxBinds  = 64
	MaxWindow = 1000
	// maxHandlers bounds the deliver_sm being handed over at once per
	// client; past it the reader waits, and so does the SMSC.
	maxHandlers = 64
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Addr is the SMSC's host:port. Required.
	Addr string
	// SystemID, Password and SystemType are the bind's credentials;
	// SystemID is required.
	SystemID   string
	Password   string
	SystemType string
	// Provider names the receipts and inbound messages handed over.
	Provider string
	// Binds is how many transceiver binds (connections) to keep; default 1.
	Binds int
	// Window is the most submit_sm outstanding (sent, unanswered) per
	// bind; default 10.
	Window int
	// SubmitsPerSecond paces each bind's submit_sm; 0 does not pace.
	SubmitsPerSecond float64
	// ResponseTimeout is how long a submit_sm waits for its response;
	// default 10s.
	ResponseTimeout time.Duration
	// EnquireLinkInterval is how often an enquire_link keeps each bind
	// alive; default 30s.
	EnquireLinkInterval time.Duration
	// DeadPeerTimeout closes a bind over which nothing arrived for that
	// long; default three EnquireLinkIntervals. It must exceed
	// EnquireLinkInterval.
	DeadPeerTimeout time.Duration
	// BindTimeout bounds connecting and binding, and each write; default
	// 10s.
	BindTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the backoff between binding
	// attempts, doubled after each failure, with jitter; defaults 500ms
	// and 30s.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// ThrottleWait is how long a bind rests after ESME_RTHROTTLED or
	// ESME_RMSGQFUL; default 1s.
	ThrottleWait time.Duration
	// Packed says GSM-7 in inbound messages is packed (default: one septet
	// per octet).
	Packed bool
	// ReceiptFunc takes each delivery receipt, and InboundFunc each
	// mobile-originated message, before the deliver_sm is answered; their
	// error answers ESME_RX_T_APPN. Nil funcs log at info level and
	// accept. They are called concurrently.
	ReceiptFunc ReceiptFunc
	InboundFunc InboundFunc
	// HandlerTimeout bounds one call of ReceiptFunc or InboundFunc;
	// default 10s.
	HandlerTimeout time.Duration
	// Logger receives the binds' lifecycle; default discard.
	Logger *slog.Logger
}

func (c *ClientConfig) validate() error {
	switch {
	case c.Addr == "":
		return errors.New("Addr is required")
	case c.SystemID == "":
		return errors.New("SystemID is required")
	case len(c.SystemID) >= MaxSystemIDLen:
		return fmt.Errorf("SystemID must be at most %d octets", MaxSystemIDLen-1)
	case len(c.Password) >= MaxPasswordLen:
		return fmt.Errorf("Password must be at most %d octets", MaxPasswordLen-1)
	case len(c.SystemType) >= MaxSystemTypeLen:
		return fmt.Errorf("SystemType must be at most %d octets", MaxSystemTypeLen-1)
	case c.Binds < 0 || c.Binds > MaxBinds:
		return fmt.Errorf("Binds must be between 1 and %d", MaxBinds)
	case c.Window < 0 || c.Window > MaxWindow:
		return fmt.Errorf("Window must be between 1 and %d", MaxWindow)
	case c.SubmitsPerSecond < 0:
		return errors.New("SubmitsPerSecond must not be negative")
	case c.ResponseTimeout < 0, c.EnquireLinkInterval < 0, c.DeadPeerTimeout < 0, c.BindTimeout < 0,
		c.ReconnectMin < 0, c.ReconnectMax < 0, c.ThrottleWait < 0, c.HandlerTimeout < 0:
		return errors.New("durations must not be negative")
	case c.DeadPeerTimeout > 0 && c.DeadPeerTimeout <= cmp.Or(c.EnquireLinkInterval, DefaultEnquireLinkInterval):
		return errors.New("DeadPeerTimeout must exceed EnquireLinkInterval")
	}
	return nil
}

// Errors of Submit; each says whether the submit_sm may have reached the
// SMSC.
var (
	// ErrNotBound: no bind is up and each has failed since it was last
	// up; the submit_sm was not sent. It wraps the last bind error.
	ErrNotBound = errors.New("smpp: no bind is up")
	// ErrConnectionLost: the bind's connection ended with the submit_sm
	// outstanding. The SMSC may have accepted it, so sending it again may
	// repeat it.
	ErrConnectionLost = errors.New("smpp: connection lost with the submit outstanding")
	// ErrResponseTimeout: no response came within ResponseTimeout. The
	// SMSC may have accepted it.
	ErrResponseTimeout = errors.New("smpp: no response in time")
	// ErrBadResponse: the response did not decode. The SMSC may have
	// accepted it.
	ErrBadResponse = errors.New("smpp: malformed response")
	// ErrClosed: the Client is closed; the submit_sm was not sent.
	ErrClosed = errors.New("smpp: client closed")
)

// errRepick: the chosen bind went down before the submit was sent.
var errRepick = errors.New("smpp: bind went down; pick another")

// SubmitResult is an SMSC's answer to a submit_sm.
type SubmitResult struct {
	// Status is the response's command_status (a generic_nack's, if the
	// SMSC answered with one).
	Status Status
	// MessageID is the SMSC's id for an accepted message; "" when refused.
	MessageID string
	// RetryAfter is how long the bind rests, for ESME_RTHROTTLED and
	// ESME_RMSGQFUL.
	RetryAfter time.Duration
	// Bind is the index of the bind that sent it, from 0.
	Bind int
}

// ClientStats are a Client's counters.
type ClientStats struct {
	// Bound is how many binds are up.
	Bound int
	// Outstanding is how many submit_sm are sent and unanswered.
	Outstanding int
	// Lost counts the submit_sm that were outstanding when their
	// connection ended: at most these may be repeated by retries.
	Lost uint64
	// Submitted counts every submit_sm written.
	Submitted uint64
}

// Client is an ESME: one or more transceiver binds to one SMSC, kept up
// in the background, over which Submit sends submit_sm and through which
// receipts and inbound messages arrive. It is safe for concurrent use.
type Client struct {
	cfg      ClientConfig
	log      *slog.Logger
	sessions []*session
	rr       atomic.Uint32

	// gate holds a token per window slot of every bind: a Submit takes one
	// first, blocking (and woken one at a time) while every window is
	// full, so only the rarer waits (a bind down or resting) need the
	// broadcast of changed.
	gate chan struct{}

	mu      sync.Mutex
	changed chan struct{}
	waiters atomic.Int32 // Submits waiting on changed

	closed    atomic.Bool
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	handlers  sync.WaitGroup
	hsem      chan struct{}

	lost      atomic.Uint64
	submitted atomic.Uint64
}

// NewClient validates cfg and returns a Client whose binds connect in the
// background; Submit waits for the first. It returns an error naming the
// ClientConfig field that is wrong, never quoting the password.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("smpp config: %w", err)
	}
	cfg.Binds = cmp.Or(cfg.Binds, DefaultBinds)
	cfg.Window = cmp.Or(cfg.Window, DefaultWindow)
	cfg.ResponseTimeout = cmp.Or(cfg.ResponseTimeout, DefaultResponseTimeout)
	cfg.EnquireLinkInterval = cmp.Or(cfg.EnquireLinkInterval, DefaultEnquireLinkInterval)
	cfg.DeadPeerTimeout = cmp.Or(cfg.DeadPeerTimeout, 3*cfg.EnquireLinkInterval)
	cfg.BindTimeout = cmp.Or(cfg.BindTimeout, DefaultBindTimeout)
	cfg.ReconnectMin = cmp.Or(cfg.ReconnectMin, DefaultReconnectMin)
	cfg.ReconnectMax = max(cmp.Or(cfg.ReconnectMax, DefaultReconnectMax), cfg.ReconnectMin)
	cfg.ThrottleWait = cmp.Or(cfg.ThrottleWait, DefaultThrottleWait)
	cfg.HandlerTimeout = cmp.Or(cfg.HandlerTimeout, DefaultHandlerTimeout)
	c := &Client{
		cfg:     cfg,
		log:     cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		changed: make(chan struct{}),
		gate:    make(chan struct{}, cfg.Binds*cfg.Window),
		hsem:    make(chan struct{}, maxHandlers),
		done:    make(chan struct{}),
	}
	c.log = c.log.With("provider", cfg.Provider)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for i := range cfg.Binds {
		s := &session{c: c, idx: i, slots: make(chan struct{}, cfg.Window), pending: map[uint32]chan response{}}
		c.sessions = append(c.sessions, s)
		c.wg.Add(1)
		go s.run()
	}
	return c, nil
}

// notify wakes every Submit waiting for a bind to come up, rest or free a
// slot.
func (c *Client) notify() {
	if c.waiters.Load() == 0 {
		return
	}
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *Client) waitChan() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Submit sends sm as a submit_sm over a bind with room in its window, and
// returns the SMSC's answer; a refusal is a non-zero Status, not an
// error. It waits for a bind and a slot while ctx allows, but returns
// ErrNotBound at once when every bind has failed since it was last up. Its
// errors are ErrNotBound, ErrClosed and ctx's (before sending: not sent),
// ErrConnectionLost, ErrResponseTimeout and ErrBadResponse (sent: the SMSC
// may have it; ctx's error after sending means the same), or an encoding
// error for a field SMPP cannot carry (not sent).
func (c *Client) Submit(ctx context.Context, sm *SM) (SubmitResult, error) {
	buf, err := (&PDU{Command: SubmitSM, Body: sm}).Encode()
	if err != nil {
		return SubmitResult{}, err
	}
	select {
	case c.gate <- struct{}{}:
	case <-c.done:
		return SubmitResult{}, ErrClosed
	case <-ctx.Done():
		return SubmitResult{}, ctx.Err()
	}
	defer func() { <-c.gate }()
	for {
		if c.closed.Load() {
			return SubmitResult{}, ErrClosed
		}
		c.waiters.Add(1)
		wake := c.waitChan()
		s, wait, err := c.pick()
		if s != nil || err != nil {
			c.waiters.Add(-1)
		}
		if err != nil {
			return SubmitResult{}, err
		}
		if s != nil {
			res, err := s.submit(ctx, buf)
			if errors.Is(err, errRepick) {
				continue
			}
			return res, err
		}
		err = waitFor(ctx, wake, wait)
		c.waiters.Add(-1)
		if err != nil {
			return SubmitResult{}, err
		}
	}
}

// waitFor waits for wake, for d if positive, or for ctx, whichever comes
// first; it returns ctx's error if ctx ended.
func waitFor(ctx context.Context, wake <-chan struct{}, d time.Duration) error {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-wake:
	case <-timer:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// pick returns a bind with a window slot taken for the caller, or nil and
// how long the earliest paused bind still rests (0: wait for a change), or
// ErrNotBound when no bind is up and none is still on its first try.
func (c *Client) pick() (*session, time.Duration, error) {
	n := len(c.sessions)
	start := int(c.rr.Add(1))
	now := time.Now()
	var rest time.Duration
	anyUp, waiting := false, false
	var lastErr error
	for i := range n {
		s := c.sessions[(start+i)%n]
		s.mu.Lock()
		up := s.conn != nil && !s.draining
		pause := s.pausedUntil.Sub(now)
		if !up && s.lastErr == nil {
			waiting = true
		}
		if s.lastErr != nil {
			lastErr = s.lastErr
		}
		s.mu.Unlock()
		if !up {
			continue
		}
		anyUp = true
		if pause > 0 {
			if rest == 0 || pause < rest {
				rest = pause
			}
			continue
		}
		select {
		case s.slots <- struct{}{}:
			return s, 0, nil
		default:
		}
	}
	if !anyUp && !waiting {
		return nil, 0, fmt.Errorf("%w: %w", ErrNotBound, lastErr)
	}
	return nil, rest, nil
}

// Ready returns nil while the Client can send (a bind is up) or may soon
// (a bind is making its first attempt), and otherwise ErrNotBound
// wrapping why the last bind failed (a *StatusError for a bind the SMSC
// refused, ESME_RINVPASWD say): what Submit would return at once. After
// Close it returns ErrClosed.
func (c *Client) Ready() error {
	if c.closed.Load() {
		return ErrClosed
	}
	var lastErr error
	for _, s := range c.sessions {
		s.mu.Lock()
		up, first, err := s.conn != nil && !s.draining, s.conn == nil && s.lastErr == nil, s.lastErr
		s.mu.Unlock()
		if up || first {
			return nil
		}
		lastErr = cmp.Or(lastErr, err)
	}
	return fmt.Errorf("%w: %w", ErrNotBound, lastErr)
}

// Stats returns the Client's counters.
func (c *Client) Stats() ClientStats {
	st := ClientStats{Lost: c.lost.Load(), Submitted: c.submitted.Load()}
	for _, s := range c.sessions {
		s.mu.Lock()
		if s.conn != nil {
			st.Bound++
		}
		st.Outstanding += len(s.pending)
		s.mu.Unlock()
	}
	return st
}

// Close unbinds gracefully: no new submits start, those outstanding get
// their responses (for up to ResponseTimeout), each bind sends unbind and
// waits briefly for unbind_resp, deliver_sm being handed over finish, and
// the connections close. Submits still waiting get ErrClosed. Close
// returns nil; calling it again does nothing.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.done)
		var wg sync.WaitGroup
		for _, s := range c.sessions {
			wg.Go(s.unbind)
		}
		wg.Wait()
		c.notify()
		c.cancel()
		c.wg.Wait()
		// No reader is left to start a handler: wait for those running.
		c.handlers.Wait()
	})
	return nil
}

// response is what a pending submit_sm gets: a PDU or why none came.
type response struct {
	pdu *PDU
	err error
}

// session is one bind and its connection, reconnected as needed.
type session struct {
	c     *Client
	idx   int
	slots chan struct{} // the window: a token per outstanding submit_sm
	wmu   sync.Mutex    // one writer at a time

	mu          sync.Mutex
	conn        net.Conn // nil while not bound
	draining    bool     // Close started: no new submits
	pending     map[uint32]chan response
	seq         uint32
	pausedUntil time.Time
	nextSend    time.Time
	lastErr     error // why the bind last failed or ended; nil while up or before the first try
	unbound     chan struct{}
	handling    atomic.Int32 // deliver_sm being handed over
}

func (s *session) logger() *slog.Logger { return s.c.log.With("bind", s.idx) }

// nextSeq returns the next sequence number; s.mu must be held.
func (s *session) nextSeq() uint32 {
	s.seq++
	if s.seq > MaxSequence || s.seq == 0 {
		s.seq = 1
	}
	return s.seq
}

// run keeps the bind up until the Client closes.
func (s *session) run() {
	defer s.c.wg.Done()
	cfg := &s.c.cfg
	backoff := cfg.ReconnectMin
	for s.c.ctx.Err() == nil {
		conn, err := s.connect()
		if err != nil {
			if s.c.ctx.Err() != nil {
				return
			}
			s.down(nil, err)
			s.logger().Warn("smpp bind failed", "addr", cfg.Addr, "retry_in", backoff, "err", err)
			if pause.For(s.c.ctx, jitter(backoff)) != nil {
				return
			}
			backoff = min(2*backoff, cfg.ReconnectMax)
			continue
		}
		backoff = cfg.ReconnectMin
		s.up(conn)
		s.logger().Info("smpp bound", "addr", cfg.Addr)
		err = s.serve(conn)
		_ = conn.Close()
		lost := s.down(conn, err)
		if s.c.ctx.Err() != nil {
			return
		}
		s.logger().Warn("smpp connection ended", "outstanding_lost", lost, "err", err)
		if pause.For(s.c.ctx, jitter(cfg.ReconnectMin)) != nil {
			return
		}
	}
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// connect dials and binds as a transceiver.
func (s *session) connect() (net.Conn, error) {
	cfg := &s.c.cfg
	ctx, cancel := context.WithTimeout(s.c.ctx, cfg.BindTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	bind := &PDU{Command: BindTransceiver, Sequence: 1, Body: &Bind{
		SystemID: cfg.SystemID, Password: cfg.Password, SystemType: cfg.SystemType,
		InterfaceVersion: InterfaceVersion34,
	}}
	buf, err := bind.Encode()
	if err == nil {
		_, err = conn.Write(buf)
	}
	var resp *PDU
	if err == nil {
		resp, err = ReadPDU(conn)
	}
	switch {
	case err != nil:
	case resp.Command == GenericNack:
		err = &StatusError{Command: BindTransceiver, Status: resp.Status}
	case resp.Command != BindTransceiverResp:
		err = fmt.Errorf("smpp: bind answered with %s", resp.Command)
	case resp.Status != StatusOK:
		err = &StatusError{Command: BindTransceiver, Status: resp.Status}
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	s.mu.Lock()
	s.seq = 1
	s.mu.Unlock()
	return conn, nil
}

func (s *session) up(conn net.Conn) {
	s.mu.Lock()
	s.conn, s.lastErr, s.unbound = conn, nil, make(chan struct{})
	s.mu.Unlock()
	s.c.notify()
}

// down records that conn (nil: a failed bind) ended with err, and fails
// the submits outstanding on it; it returns how many.
func (s *session) down(conn net.Conn, err error) int {
	if err == nil {
		err = errors.New("connection closed")
	}
	s.mu.Lock()
	if conn != nil && s.conn != conn {
		s.mu.Unlock()
		return 0
	}
	s.conn, s.lastErr = nil, err
	pending := s.pending
	s.pending = map[uint32]chan response{}
	s.mu.Unlock()
	for _, ch := range pending {
		ch <- response{err: ErrConnectionLost}
	}
	s.c.lost.Add(uint64(len(pending)))
	s.c.notify()
	return len(pending)
}

// write sends one encoded PDU on conn.
func (s *session) write(conn net.Conn, buf []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(s.c.cfg.BindTimeout))
	_, err := conn.Write(buf)
	return err
}

// send encodes p and writes it on conn; a failure closes conn, so the
// reader ends and the bind reconnects.
func (s *session) send(conn net.Conn, p *PDU) {
	buf, err := p.Encode()
	if err == nil {
		err = s.write(conn, buf)
	}
	if err != nil {
		_ = conn.Close()
	}
}

// pace returns how long to wait before sending, reserving the slot.
func (s *session) pace() time.Duration {
	rate := s.c.cfg.SubmitsPerSecond
	if rate <= 0 {
		return 0
	}
	interval := time.Duration(float64(time.Second) / rate)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	at := s.nextSend
	if at.Before(now) {
		at = now
	}
	s.nextSend = at.Add(interval)
	return at.Sub(now)
}

// submit sends buf, an encoded submit_sm, holding a window slot the
// caller took, and waits for its response.
func (s *session) submit(ctx context.Context, buf []byte) (SubmitResult, error) {
	defer func() {
		<-s.slots
		s.c.notify()
	}()
	res := SubmitResult{Bind: s.idx}
	if d := s.pace(); d > 0 && pause.For(ctx, d) != nil {
		return res, ctx.Err()
	}
	s.mu.Lock()
	conn := s.conn
	if conn == nil || s.draining {
		s.mu.Unlock()
		return res, errRepick
	}
	seq := s.nextSeq()
	ch := make(chan response, 1)
	s.pending[seq] = ch
	s.mu.Unlock()
	buf = append([]byte(nil), buf...)
	binary.BigEndian.PutUint32(buf[12:], seq)
	s.c.submitted.Add(1)
	if err := s.write(conn, buf); err != nil {
		// The reader notices the closed connection and fails ch.
		_ = conn.Close()
	}
	t := time.NewTimer(s.c.cfg.ResponseTimeout)
	defer t.Stop()
	var r response
	select {
	case r = <-ch:
	case <-t.C:
		s.forget(seq)
		return res, ErrResponseTimeout
	case <-ctx.Done():
		s.forget(seq)
		return res, ctx.Err()
	}
	if r.err != nil {
		return res, r.err
	}
	res.Status = r.pdu.Status
	if r.pdu.Command == GenericNack && res.Status == StatusOK {
		res.Status = StatusSysErr
	}
	if body, ok := r.pdu.Body.(*SMResp); ok && res.Status == StatusOK {
		res.MessageID = body.MessageID
	}
	if res.Status == StatusThrottled || res.Status == StatusMsgQFul {
		res.RetryAfter = s.c.cfg.ThrottleWait
		s.mu.Lock()
		if until := time.Now().Add(res.RetryAfter); until.After(s.pausedUntil) {
			s.pausedUntil = until
		}
		s.mu.Unlock()
	}
	return res, nil
}

// forget drops a pending submit that stopped waiting.
func (s *session) forget(seq uint32) {
	s.mu.Lock()
	delete(s.pending, seq)
	s.mu.Unlock()
}

// resolve hands a response to its pending submit; a response nobody waits
// for (it timed out) is dropped.
func (s *session) resolve(seq uint32, r response) {
	s.mu.Lock()
	ch, ok := s.pending[seq]
	delete(s.pending, seq)
	s.mu.Unlock()
	if ok {
		ch <- r
	} else {
		s.logger().Debug("smpp response for no outstanding request", "sequence", seq)
	}
}

// errDeadPeer: nothing arrived for DeadPeerTimeout.
var errDeadPeer = errors.New("smpp: nothing received for the dead-peer timeout")

// serve reads conn until it ends, answering what needs answering, and
// keeps it alive with enquire_link.
func (s *session) serve(conn net.Conn) error {
	cfg := &s.c.cfg
	done := make(chan struct{})
	defer close(done)
	stop := context.AfterFunc(s.c.ctx, func() { _ = conn.Close() })
	defer stop()
	go func() {
		t := time.NewTicker(cfg.EnquireLinkInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				seq := s.nextSeq()
				s.mu.Unlock()
				s.send(conn, &PDU{Command: EnquireLink, Sequence: seq})
			}
		}
	}()
	br := bufio.NewReaderSize(conn, 32<<10)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(cfg.DeadPeerTimeout))
		p, err := ReadPDU(br)
		if err != nil {
			var de *DecodeError
			if errors.As(err, &de) {
				s.answerMalformed(conn, de)
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return errDeadPeer
			}
			return err
		}
		switch p.Command {
		case SubmitSMResp, GenericNack:
			s.resolve(p.Sequence, response{pdu: p})
		case EnquireLink:
			s.send(conn, &PDU{Command: EnquireLinkResp, Sequence: p.Sequence})
		case EnquireLinkResp, DeliverSMResp, BindTransceiverResp, BindReceiverResp, BindTransmitterResp:
		case DeliverSM:
			s.deliver(conn, p)
		case Unbind:
			s.send(conn, &PDU{Command: UnbindResp, Sequence: p.Sequence})
			return errors.New("smpp: the SMSC unbound")
		case UnbindResp:
			s.mu.Lock()
			if s.unbound != nil {
				close(s.unbound)
				s.unbound = nil
			}
			s.mu.Unlock()
			return errors.New("smpp: unbound")
		default:
			// A bind or submit_sm from the SMSC: not in this state.
			s.send(conn, &PDU{Command: p.Command.Response(), Status: StatusInvBndSts, Sequence: p.Sequence})
		}
	}
}

// answerMalformed answers a PDU whose body did not decode: a request with
// its response (or generic_nack) carrying the error; a malformed response
// fails its pending submit.
func (s *session) answerMalformed(conn net.Conn, de *DecodeError) {
	s.logger().Warn("smpp malformed PDU", "command", de.Command.String(), "err", de)
	switch {
	case de.Command.IsResponse():
		s.resolve(de.Sequence, response{err: ErrBadResponse})
	case de.Command == DeliverSM:
		s.send(conn, &PDU{Command: DeliverSMResp, Status: de.Status, Sequence: de.Sequence, Body: &SMResp{}})
	default:
		s.send(conn, &PDU{Command: GenericNack, Status: de.Status, Sequence: de.Sequence})
	}
}

// deliver hands a deliver_sm to ReceiptFunc or InboundFunc, then answers
// it: ESME_ROK if the func took it, ESME_RX_T_APPN if it failed.
func (s *session) deliver(conn net.Conn, p *PDU) {
	sm := p.Body.(*SM)
	now := time.Now()
	s.c.hsem <- struct{}{}
	s.c.handlers.Add(1)
	s.handling.Add(1)
	go func() {
		defer func() {
			<-s.c.hsem
			s.handling.Add(-1)
			s.c.handlers.Done()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.HandlerTimeout)
		defer cancel()
		status := StatusOK
		if err := s.c.hand(ctx, sm, now); err != nil {
			s.logger().Warn("smpp deliver_sm not taken; the SMSC will send it again", "err", err)
			status = StatusXTAppn
		}
		s.send(conn, &PDU{Command: DeliverSMResp, Status: status, Sequence: p.Sequence, Body: &SMResp{}})
	}()
}

// hand passes one deliver_sm to the configured func.
func (c *Client) hand(ctx context.Context, sm *SM, at time.Time) error {
	if IsReceipt(sm.ESMClass) {
		r := ParseReceipt(c.cfg.Provider, sm, at)
		if c.cfg.ReceiptFunc == nil {
			c.log.Info("smpp receipt", "provider_message_id", r.ProviderMessageID, "status", r.Status, "error_code", r.ErrorCode)
			return nil
		}
		return c.cfg.ReceiptFunc(ctx, r)
	}
	_, _, text, err := UserData(sm, c.cfg.Packed)
	if err != nil {
		text = DecodeText(sm.DataCoding, sm.ShortMessage, c.cfg.Packed, 0)
	}
	m := Inbound{Provider: c.cfg.Provider, From: sm.SourceAddr, To: sm.DestinationAddr, Body: text, DataCoding: sm.DataCoding, ReceivedAt: at}
	if c.cfg.InboundFunc == nil {
		c.log.Info("smpp inbound message", "from", maskNumber(m.From), "to", maskNumber(m.To), "chars", len([]rune(m.Body)))
		return nil
	}
	return c.cfg.InboundFunc(ctx, m)
}

// maskNumber keeps a number's first four and last two characters, so a
// log never carries a whole one.
func maskNumber(s string) string {
	if len(s) <= 6 {
		return "***"
	}
	b := []byte(s)
	for i := 4; i < len(b)-2; i++ {
		b[i] = '*'
	}
	return string(b)
}

// unbind starts a graceful end of the bind for Close.
func (s *session) unbind() {
	s.mu.Lock()
	s.draining = true
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return
	}
	// Let the outstanding submits have their responses, and the
	// deliver_sm being handed over their answers.
	deadline := time.Now().Add(max(s.c.cfg.ResponseTimeout, s.c.cfg.HandlerTimeout))
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		if n == 0 && s.handling.Load() == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	seq := s.nextSeq()
	unbound := s.unbound
	s.mu.Unlock()
	s.send(conn, &PDU{Command: Unbind, Sequence: seq})
	if unbound != nil {
		select {
		case <-unbound:
		case <-time.After(2 * time.Second):
		}
	}
}
