// Package smsctest is an SMSC for tests and the demo: an SMPP 3.4 server
// on loopback that accepts transceiver binds, answers submit_sm (after a
// delay, with chosen errors, throttling on demand, or never, dropping the
// connection mid-window), records every submit and reassembles long
// messages, and sends delivery receipts (one per part, or for the last
// part only) and mobile-originated messages as deliver_sm, recording how
// the ESME answered them. It can refuse binds, and restart with its
// message id counter reset, as SMSCs do.
package smsctest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/smpp"
)

// Config configures a Server.
type Config struct {
	// SystemID and Password are the credentials a bind must give.
	SystemID string
	Password string
	// Packed says GSM-7 in submits is packed (else one septet per octet),
	// for reassembling texts.
	Packed bool
	// Addr to listen on; default 127.0.0.1:0.
	Addr string
}

// Submit is one submit_sm the server received.
type Submit struct {
	SM *smpp.SM
	// MessageID is the id the server gave it ("" if refused).
	MessageID string
	// Status is what it answered; Held is set when it never answered.
	Status smpp.Status
	Held   bool
	// Text is the part's text; Concat its place in a long message.
	Text   string
	Concat smpp.Concat
	IsPart bool
	At     time.Time
}

// Message is a whole message the server accepted (or held): one submit,
// or the parts of a long one reassembled.
type Message struct {
	Source, Destination string
	// SourceTON and SourceNPI are the submit's source_addr_ton and
	// source_addr_npi.
	SourceTON, SourceNPI uint8
	// DataCoding is the submit's data_coding as sent: a flash SMS's
	// carries message class 0 (0x10 for GSM-7, 0x18 for UCS-2).
	DataCoding uint8
	Body       string
	// Parts is how many submits carried it; MessageIDs their ids.
	Parts      int
	MessageIDs []string
}

// ReceiptPlan says which receipts the server sends by itself for each
// accepted submit.
type ReceiptPlan struct {
	// Stat is the receipt's stat: "DELIVRD", "UNDELIV", "EXPIRED" ...
	Stat string
	// Err is its err: value; default "000".
	Err string
	// After delays the receipt (a late receipt).
	After time.Duration
	// Twice sends it twice (a duplicated receipt).
	Twice bool
	// TextOnly leaves the receipted_message_id and message_state TLVs out.
	TextOnly bool
	// LastPartOnly sends a long message's receipt once, for the part that
	// completed its reassembly (with that part's id), as many SMSCs do;
	// otherwise every part accepted gets its own receipt, whatever its
	// registered_delivery says, as many others do.
	LastPartOnly bool
}

// Server is a test SMSC.
type Server struct {
	cfg Config
	ln  net.Listener
	wg  sync.WaitGroup

	mu           sync.Mutex
	conns        map[*conn]bool
	delay        time.Duration
	throttle     int
	windowStart  time.Time
	windowCount  int
	holdDrop     int
	held         []held
	failDest     map[string]smpp.Status
	receipts     *ReceiptPlan
	submits      []Submit
	parts        map[string][]*Submit
	messages     []Message
	nextID       int
	deliverResps []smpp.Status
	binds        int
	bindsRefused int
	maxBound     int
	// boundChanged is closed and replaced whenever a bind succeeds, so
	// WaitBound can wait for it instead of polling.
	boundChanged chan struct{}
	// unanswered counts submit_sm received and not yet answered (held ones
	// stay counted); maxUnanswered is its high-water mark.
	unanswered    int
	maxUnanswered int
	refuseBinds   smpp.Status
	closed        bool
	ctx           context.Context // ends at Close
	cancel        context.CancelFunc
}

type held struct {
	c   *conn
	seq uint32
}

// Start starts a Server on loopback; it is closed when t's test ends.
func Start(t interface{ Cleanup(func()) }, cfg Config) (*Server, error) {
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, conns: map[*conn]bool{}, failDest: map[string]smpp.Status{}, parts: map[string][]*Submit{},
		boundChanged: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s, nil
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops listening and closes every connection.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.cancel()
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	_ = s.ln.Close()
	s.wg.Wait()
}

// SetDelay makes the server answer each submit_sm after d.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// SetThrottle answers ESME_RTHROTTLED to submits beyond perSecond in each
// one-second window, across all binds; 0 stops throttling.
func (s *Server) SetThrottle(perSecond int) {
	s.mu.Lock()
	s.throttle, s.windowCount, s.windowStart = perSecond, 0, time.Now()
	s.mu.Unlock()
}

// FailDestination answers every submit to dest (as written in
// destination_addr) with st.
func (s *Server) FailDestination(dest string, st smpp.Status) {
	s.mu.Lock()
	s.failDest[dest] = st
	s.mu.Unlock()
}

// HoldAndDrop makes the server stop answering submits; once n are
// unanswered, it closes every connection without answering them, and
// answers normally again.
func (s *Server) HoldAndDrop(n int) {
	s.mu.Lock()
	s.holdDrop = n
	s.mu.Unlock()
}

// SetReceipts makes the server send a receipt per plan after each submit
// it accepts; nil stops.
func (s *Server) SetReceipts(plan *ReceiptPlan) {
	s.mu.Lock()
	s.receipts = plan
	s.mu.Unlock()
}

// RefuseBinds answers every bind with st (ESME_RBINDFAIL, say) whatever
// its credentials; StatusOK accepts them again.
func (s *Server) RefuseBinds(st smpp.Status) {
	s.mu.Lock()
	s.refuseBinds = st
	s.mu.Unlock()
}

// Restart is the SMSC restarting: every connection closes, and its
// message id counter starts again, so the ids it gives repeat those it
// gave before ("m1", "m2", ...). Messages, submits and parts received
// before are kept for the test to read.
func (s *Server) Restart() {
	s.mu.Lock()
	s.nextID = 0
	s.parts = map[string][]*Submit{}
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
}

// MaxBound returns the most connections that were bound at once.
func (s *Server) MaxBound() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxBound
}

// DropAll closes every connection at once.
func (s *Server) DropAll() {
	s.mu.Lock()
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
}

// Submits returns every submit_sm received, in order.
func (s *Server) Submits() []Submit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.submits)
}

// Messages returns every message accepted or held, long ones once all
// their parts arrived, in the order they completed.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages)
}

// DeliverResps returns the command_status of every deliver_sm_resp
// received, in order.
func (s *Server) DeliverResps() []smpp.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deliverResps)
}

// Bound returns how many connections are bound now.
func (s *Server) Bound() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.bound {
			n++
		}
	}
	return n
}

// Binds returns how many binds succeeded since start.
func (s *Server) Binds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.binds
}

// BindsRefused returns how many binds the server refused since start
// (wrong credentials, or refused on demand by RefuseBinds).
func (s *Server) BindsRefused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bindsRefused
}

// WaitBound waits until at least n connections are bound at once; it
// returns ctx's error if ctx ends first.
func (s *Server) WaitBound(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		changed := s.boundChanged
		s.mu.Unlock()
		if s.Bound() >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// MaxUnanswered returns the most submit_sm the server has held received
// and unanswered at once since start: what a client's window let through.
// A submit held by HoldAndDrop stays counted.
func (s *Server) MaxUnanswered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxUnanswered
}

// ReceiptFor returns a receipt deliver_sm for messageID, from the submit
// that got it last (its addresses reversed), or an error if there is none.
func (s *Server) ReceiptFor(messageID string, plan ReceiptPlan) (*smpp.SM, error) {
	s.mu.Lock()
	var sub *Submit
	for i := len(s.submits) - 1; i >= 0; i-- { // the latest: ids repeat after a Restart
		if s.submits[i].MessageID == messageID {
			sub = &s.submits[i]
			break
		}
	}
	s.mu.Unlock()
	if sub == nil {
		return nil, fmt.Errorf("smsctest: no submit got message id %q", messageID)
	}
	return Receipt(sub.SM.DestinationAddr, sub.SM.SourceAddr, messageID, plan, sub.At), nil
}

// Receipt returns a receipt deliver_sm for any message id, known or not.
func Receipt(from, to, messageID string, plan ReceiptPlan, submitted time.Time) *smpp.SM {
	stat := plan.Stat
	if stat == "" {
		stat = "DELIVRD"
	}
	errCode := plan.Err
	if errCode == "" {
		errCode = "000"
	}
	text := smpp.FormatReceiptText(messageID, stat, errCode, submitted, time.Now(), "")
	sm := &smpp.SM{
		SourceAddrTON: 1, SourceAddrNPI: 1, SourceAddr: from,
		DestAddrTON: 1, DestAddrNPI: 1, DestinationAddr: to,
		ESMClass: smpp.ESMClassReceipt, ShortMessage: []byte(text),
	}
	if !plan.TextOnly {
		sm.ReceiptedMessageID = messageID
		sm.MessageState = stateOf(stat)
	}
	return sm
}

func stateOf(stat string) smpp.MessageState {
	for st := smpp.MessageEnroute; st <= smpp.MessageRejected; st++ {
		if st.Stat() == stat {
			return st
		}
	}
	return smpp.MessageUnknown
}

// MO returns a mobile-originated deliver_sm of body (one part).
func MO(from, to, body string) (*smpp.SM, error) {
	parts, err := smpp.Message(smpp.SM{SourceAddrTON: 1, SourceAddrNPI: 1, SourceAddr: from, DestinationAddr: to}, body, smpp.MessageOpts{})
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 {
		return nil, errors.New("smsctest: an MO body must fit one part")
	}
	return parts[0], nil
}

// Deliver sends sm as a deliver_sm over a bound connection and returns
// the status of the ESME's deliver_sm_resp.
func (s *Server) Deliver(ctx context.Context, sm *smpp.SM) (smpp.Status, error) {
	s.mu.Lock()
	var c *conn
	for cc := range s.conns {
		if cc.bound {
			c = cc
			break
		}
	}
	s.mu.Unlock()
	if c == nil {
		return 0, errors.New("smsctest: no bound connection")
	}
	return c.deliver(ctx, sm)
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := &conn{s: s, nc: nc, waiting: map[uint32]chan smpp.Status{}}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go c.serve()
	}
}

// conn is one ESME connection.
type conn struct {
	s     *Server
	nc    net.Conn
	wmu   sync.Mutex
	bound bool // under s.mu

	mu      sync.Mutex
	seq     uint32
	waiting map[uint32]chan smpp.Status
}

func (c *conn) send(p *smpp.PDU) {
	b, err := p.Encode()
	if err != nil {
		panic(err) // the test server builds only valid PDUs
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.nc.Write(b)
}

func (c *conn) deliver(ctx context.Context, sm *smpp.SM) (smpp.Status, error) {
	ch := make(chan smpp.Status, 1)
	c.mu.Lock()
	c.seq++
	seq := c.seq
	c.waiting[seq] = ch
	c.mu.Unlock()
	c.send(&smpp.PDU{Command: smpp.DeliverSM, Sequence: seq, Body: sm})
	select {
	case st := <-ch:
		return st, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (c *conn) serve() {
	s := c.s
	defer s.wg.Done()
	defer func() {
		_ = c.nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	br := bufio.NewReader(c.nc)
	for {
		p, err := smpp.ReadPDU(br)
		if err != nil {
			var de *smpp.DecodeError
			if errors.As(err, &de) {
				c.send(&smpp.PDU{Command: smpp.GenericNack, Status: de.Status, Sequence: de.Sequence})
				continue
			}
			return
		}
		switch p.Command {
		case smpp.BindTransceiver, smpp.BindTransmitter, smpp.BindReceiver:
			b := p.Body.(*smpp.Bind)
			st := smpp.StatusOK
			s.mu.Lock()
			refused := s.refuseBinds
			s.mu.Unlock()
			switch {
			case refused != smpp.StatusOK:
				st = refused
			case b.SystemID != s.cfg.SystemID:
				st = smpp.StatusInvSysID
			case b.Password != s.cfg.Password:
				st = smpp.StatusInvPaswd
			}
			if st != smpp.StatusOK {
				s.mu.Lock()
				s.bindsRefused++
				s.mu.Unlock()
			}
			if st == smpp.StatusOK {
				s.mu.Lock()
				c.bound = true
				s.binds++
				close(s.boundChanged)
				s.boundChanged = make(chan struct{})
				n := 0
				for cc := range s.conns {
					if cc.bound {
						n++
					}
				}
				s.maxBound = max(s.maxBound, n)
				s.mu.Unlock()
			}
			c.send(&smpp.PDU{Command: p.Command.Response(), Status: st, Sequence: p.Sequence, Body: &smpp.BindResp{SystemID: "smsctest"}})
			if st != smpp.StatusOK {
				return
			}
		case smpp.SubmitSM:
			c.submit(p)
		case smpp.DeliverSMResp:
			s.mu.Lock()
			s.deliverResps = append(s.deliverResps, p.Status)
			s.mu.Unlock()
			c.mu.Lock()
			ch := c.waiting[p.Sequence]
			delete(c.waiting, p.Sequence)
			c.mu.Unlock()
			if ch != nil {
				ch <- p.Status
			}
		case smpp.EnquireLink:
			c.send(&smpp.PDU{Command: smpp.EnquireLinkResp, Sequence: p.Sequence})
		case smpp.Unbind:
			c.send(&smpp.PDU{Command: smpp.UnbindResp, Sequence: p.Sequence})
			return
		case smpp.EnquireLinkResp, smpp.GenericNack:
		default:
			c.send(&smpp.PDU{Command: p.Command.Response(), Status: smpp.StatusInvCmdID, Sequence: p.Sequence})
		}
	}
}

// submit records a submit_sm and answers it as the server is set to.
func (c *conn) submit(p *smpp.PDU) {
	s := c.s
	sm := p.Body.(*smpp.SM)
	concat, isPart, text, err := smpp.UserData(sm, s.cfg.Packed)
	now := time.Now()
	s.mu.Lock()
	if !c.bound {
		s.mu.Unlock()
		c.send(&smpp.PDU{Command: smpp.SubmitSMResp, Status: smpp.StatusInvBndSts, Sequence: p.Sequence})
		return
	}
	sub := Submit{SM: sm, Text: text, Concat: concat, IsPart: isPart, At: now}
	s.unanswered++
	s.maxUnanswered = max(s.maxUnanswered, s.unanswered)
	st, failed := s.failDest[sm.DestinationAddr]
	if s.throttle > 0 {
		if now.Sub(s.windowStart) >= time.Second {
			s.windowStart, s.windowCount = now, 0
		}
		s.windowCount++
		if s.windowCount > s.throttle {
			st, failed = smpp.StatusThrottled, true
		}
	}
	if err != nil && !failed {
		st, failed = smpp.StatusInvESMClass, true
	}
	var drop []*conn
	completed := false
	if failed {
		sub.Status = st
	} else {
		s.nextID++
		sub.MessageID = "m" + strconv.Itoa(s.nextID)
		completed = s.collect(&sub)
		if s.holdDrop > 0 {
			sub.Held = true
			s.held = append(s.held, held{c, p.Sequence})
			if len(s.held) >= s.holdDrop {
				for cc := range s.conns {
					drop = append(drop, cc)
				}
				s.held, s.holdDrop = nil, 0
			}
		}
	}
	s.submits = append(s.submits, sub)
	delay, plan := s.delay, s.receipts
	s.mu.Unlock()
	for _, cc := range drop {
		_ = cc.nc.Close()
	}
	if sub.Held {
		return
	}
	resp := &smpp.PDU{Command: smpp.SubmitSMResp, Status: sub.Status, Sequence: p.Sequence, Body: &smpp.SMResp{MessageID: sub.MessageID}}
	answer := func() {
		// Counted as answered before the response is written, so a client
		// that sends its next submit_sm on reading it is never counted
		// beside the one answered.
		s.mu.Lock()
		s.unanswered--
		s.mu.Unlock()
		c.send(resp)
		if plan != nil && sub.MessageID != "" && (completed || !plan.LastPartOnly) {
			c.sendReceipt(sub, *plan)
		}
	}
	if delay > 0 {
		time.AfterFunc(delay, answer)
	} else {
		answer()
	}
}

// sendReceipt sends the plan's receipt(s) for sub, in the background.
func (c *conn) sendReceipt(sub Submit, plan ReceiptPlan) {
	c.s.wg.Add(1)
	go func() {
		defer c.s.wg.Done()
		if plan.After > 0 {
			select {
			case <-time.After(plan.After):
			case <-c.s.ctx.Done():
				return
			}
		}
		n := 1
		if plan.Twice {
			n = 2
		}
		for range n {
			sm := Receipt(sub.SM.DestinationAddr, sub.SM.SourceAddr, sub.MessageID, plan, sub.At)
			ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
			_, _ = c.deliver(ctx, sm)
			cancel()
		}
	}()
}

// collect adds an accepted submit to the messages, reassembling parts,
// and reports whether it completed a message; s.mu is held.
func (s *Server) collect(sub *Submit) bool {
	sm := sub.SM
	if !sub.IsPart {
		s.messages = append(s.messages, Message{Source: sm.SourceAddr, Destination: sm.DestinationAddr,
			SourceTON: sm.SourceAddrTON, SourceNPI: sm.SourceAddrNPI, DataCoding: sm.DataCoding, Body: sub.Text, Parts: 1, MessageIDs: []string{sub.MessageID}})
		return true
	}
	key := fmt.Sprintf("%s|%s|%d|%d", sm.SourceAddr, sm.DestinationAddr, sub.Concat.Ref, sub.Concat.Total)
	parts := append(s.parts[key], sub)
	// A repeated part (a retry) replaces the one before.
	seen := map[uint8]*Submit{}
	for _, p := range parts {
		seen[p.Concat.Seq] = p
	}
	if len(seen) < int(sub.Concat.Total) {
		s.parts[key] = parts
		return false
	}
	delete(s.parts, key)
	m := Message{Source: sm.SourceAddr, Destination: sm.DestinationAddr, SourceTON: sm.SourceAddrTON, SourceNPI: sm.SourceAddrNPI,
		DataCoding: sm.DataCoding, Parts: int(sub.Concat.Total)}
	for i := 1; i <= int(sub.Concat.Total); i++ {
		p, ok := seen[uint8(i)]
		if !ok {
			s.parts[key] = parts // a sequence number out of range: keep waiting
			return false
		}
		m.Body += p.Text
		m.MessageIDs = append(m.MessageIDs, p.MessageID)
	}
	s.messages = append(s.messages, m)
	return true
}
