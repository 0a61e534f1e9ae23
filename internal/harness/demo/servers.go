package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/internal/harness/smsctest"
)

// Servers are the loopback channel servers of a demo run: a webhook
// receiver, an SMTP server, two HTTP SMS providers that post delivery
// receipts, an SMSC speaking SMPP, and the demo producer's receiver of
// status callbacks.
type Servers struct {
	// Webhook is the receiver's base URL, e.g. http://127.0.0.1:41234.
	Webhook string
	// SMTPHost and SMTPPort address the SMTP server (no TLS, no AUTH).
	SMTPHost string
	SMTPPort int
	// SMS is the demo's main SMS provider (sms/acme): it throttles, fails
	// now and then, refuses unknown numbers and cannot reach SMSDownPrefix.
	SMS *SMSProvider
	// SMSBackup is the backup SMS provider (sms/backup): it accepts every
	// number but the unknown ones.
	SMSBackup *SMSProvider
	// SMSC is an operator's SMSC (sms/operator) on SMPP 3.4: it accepts
	// every submit and sends a delivery receipt for each message, a long
	// one's for its last part only.
	SMSC *smsctest.Server
	// Callbacks is the demo producer's endpoint for status callbacks.
	Callbacks *CallbackReceiver

	// Counts of what the webhook receiver and the SMTP server saw.
	WebhookRequests, WebhookAccepted atomic.Int64
	MailRcpts, MailAccepted          atomic.Int64

	closers []func()
}

// SMSProvider is one loopback HTTP SMS provider: bearer auth, JSON {"to",
// "from", "body"} in, {"id", "status"} out. It counts what it receives, and
// when, so that a cap can be checked at the provider itself. Once told
// where (SendReceiptsTo), it posts a delivery receipt for every message it
// accepts, as receiptPlan says: some early, some twice, and now and then
// one for a message id it never gave.
type SMSProvider struct {
	// URL is its send endpoint.
	URL string
	// APIKey is the key it expects as a bearer token.
	APIKey string
	// ReceiptsToken is the bearer token it posts receipts with.
	ReceiptsToken string

	// Requests counts every request; Accepted, Throttled (429), Failed
	// (500) and Unavailable (503) the answers of each kind.
	Requests, Accepted, Throttled, Failed, Unavailable atomic.Int64
	// ReceiptsSent counts the receipts the endpoint took (answered 200),
	// repeats and unknown ids included; ReceiptsLost those it never took.
	ReceiptsSent, ReceiptsLost atomic.Int64

	idPrefix    string                 // of its message ids
	receiptsURL atomic.Pointer[string] // nil: it sends no receipts
	pending     atomic.Int64           // receipts scheduled, not yet posted

	// quirky: throttle one request in seven, fail one in eleven, and answer
	// 503 to SMSDownPrefix's numbers.
	quirky bool
	mu     sync.Mutex
	times  []time.Time // when each request arrived
}

// Paths and address patterns the servers treat specially.
const (
	// WebhookPathOK answers 204 (nine requests in ten) or 503.
	WebhookPathOK = "/hooks/ok/"
	// WebhookPathGone answers 410 Gone: a permanent failure.
	WebhookPathGone = "/hooks/gone/"
	// WebhookPathDown always answers 503: retried until the attempt
	// budget runs out.
	WebhookPathDown = "/hooks/down/"
	// MailboxBounce is the local-part prefix the SMTP server refuses with
	// 550 5.1.1 (no such mailbox).
	MailboxBounce = "bounce"
	// MailboxGreylist is the local-part prefix the SMTP server refuses with
	// 451 at the first try, as greylisting does.
	MailboxGreylist = "greylist"
)

// SMSUnknownNumbers are valid E.164 numbers both SMS providers say they
// cannot reach (HTTP 400, invalid_destination): permanent failures.
var SMSUnknownNumbers = map[string]bool{
	"+14155550199":   true,
	"+4915112345999": true,
	"+5511900000999": true,
}

// Destination prefixes the demo routes by.
const (
	// SMSDownPrefix is the destination prefix the main SMS provider
	// cannot reach: it answers 503 to every number that starts with it, as
	// a provider whose link to one country's operators is down does. A
	// transient failure: the demo's routing rule for the prefix fails over
	// to the backup.
	SMSDownPrefix = "+254"
	// SMSCPrefix is the destination prefix the demo's rules send to the
	// SMSC (sms/operator, over SMPP).
	SMSCPrefix = "+44"
	// LegacyPrefix is the destination prefix the demo's rules send to
	// sms/legacy, whose binds the SMSC refuses, failing over to
	// sms/operator: the demo's long SMS goes there.
	LegacyPrefix = "+353"
)

// The SMSC's credentials (a system_id of at most 15 characters, a
// password of at most 8).
const (
	smscSystemID = "herald-demo"
	smscPassword = "demo-pw"
)

// Start starts the servers on loopback. Close stops them.
func Start(ctx context.Context) (*Servers, error) {
	s := &Servers{
		SMS: &SMSProvider{APIKey: "demo-sms-key", ReceiptsToken: "demo-sms-receipts", quirky: true,
			idPrefix: "ac-"},
		SMSBackup: &SMSProvider{APIKey: "demo-backup-key", ReceiptsToken: "demo-backup-receipts", idPrefix: "bk-"},
		Callbacks: newCallbackReceiver(),
	}
	var err error
	if s.Webhook, err = s.serveHTTP(ctx, http.HandlerFunc(s.webhook)); err != nil {
		s.Close()
		return nil, err
	}
	if s.Callbacks.URL, err = s.serveHTTP(ctx, s.Callbacks); err != nil {
		s.Close()
		return nil, err
	}
	s.Callbacks.URL += "/herald/callbacks"
	if s.SMSC, err = smsctest.Start(nil, smsctest.Config{SystemID: smscSystemID, Password: smscPassword}); err != nil {
		s.Close()
		return nil, fmt.Errorf("start the SMSC: %w", err)
	}
	s.closers = append(s.closers, s.SMSC.Close)
	// A long message's receipt comes once, for the part that completed it,
	// as many SMSCs send it: herald decides the route from its parts.
	s.SMSC.SetReceipts(&smsctest.ReceiptPlan{Stat: "DELIVRD", LastPartOnly: true})
	for _, p := range []*SMSProvider{s.SMS, s.SMSBackup} {
		base, err := s.serveHTTP(ctx, http.HandlerFunc(p.serve))
		if err != nil {
			s.Close()
			return nil, err
		}
		p.URL = base + "/v1/messages"
	}
	if err := s.serveSMTP(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the servers.
func (s *Servers) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

func listen(ctx context.Context) (net.Listener, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	return ln, nil
}

func (s *Servers) serveHTTP(ctx context.Context, h http.Handler) (string, error) {
	ln, err := listen(ctx)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.closers = append(s.closers, func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

// webhook is the receiver: it reads the signed POST and answers by path.
func (s *Servers) webhook(w http.ResponseWriter, r *http.Request) {
	n := s.WebhookRequests.Add(1)
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	switch {
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case strings.HasPrefix(r.URL.Path, WebhookPathGone):
		w.WriteHeader(http.StatusGone)
	case strings.HasPrefix(r.URL.Path, WebhookPathDown):
		w.WriteHeader(http.StatusServiceUnavailable)
	case n%10 == 3:
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		s.WebhookAccepted.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}
}

// serve is the provider's endpoint. Both providers refuse
// SMSUnknownNumbers as invalid destinations; the quirky one also answers
// 503 to SMSDownPrefix's numbers, throttles one request in seven (429 with
// Retry-After: 1) and fails one in eleven with 500.
func (p *SMSProvider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.times = append(p.times, time.Now())
	p.mu.Unlock()
	n := p.Requests.Add(1)
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+p.APIKey {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"unauthorized"}`)
		return
	}
	var req struct {
		To   string `json:"to"`
		Body string `json:"body"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"bad_request","message":"body is not JSON"}`)
		return
	}
	switch {
	case p.quirky && strings.HasPrefix(req.To, SMSDownPrefix):
		p.Unavailable.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":"unavailable","message":"no route to the destination's operator"}`)
	case p.quirky && n%7 == 0:
		p.Throttled.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":"rate_limited","message":"too many requests"}`)
	case p.quirky && n%11 == 0:
		p.Failed.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":"internal","message":"upstream carrier timeout"}`)
	case SMSUnknownNumbers[req.To]:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_destination","message":"unknown number"}`)
	default:
		k := p.Accepted.Add(1)
		id := fmt.Sprintf("%s%06d", p.idPrefix, n)
		plan := receiptPlan(k)
		if plan.early {
			// Before the answer: herald has not written the id yet.
			p.postReceipts(id, plan)
		} else {
			p.later(id, plan)
		}
		if plan.unknownID {
			p.later(fmt.Sprintf("%snever-sent-%06d", p.idPrefix, n), receiptSend{statuses: []string{"DELIVRD"}})
		}
		_, _ = fmt.Fprintf(w, `{"id":%q,"status":"queued"}`, id)
	}
}

// MaxPerSecond returns the most requests the provider received in any
// one-second window (any window, not only those starting on a whole
// second), and 0 before any.
func (p *SMSProvider) MaxPerSecond() int {
	p.mu.Lock()
	times := slices.Clone(p.times)
	p.mu.Unlock()
	return maxInWindow(times, time.Second)
}

// maxInWindow returns the most of times (in any order) that fall in one
// half-open window [t, t+width).
func maxInWindow(times []time.Time, width time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most, first := 0, 0
	for last, t := range times {
		for t.Sub(times[first]) >= width {
			first++
		}
		most = max(most, last-first+1)
	}
	return most
}

func (s *Servers) serveSMTP(ctx context.Context) error {
	ln, err := listen(ctx)
	if err != nil {
		return err
	}
	srv := smtp.NewServer(&smtpBackend{s: s, seen: map[string]int{}})
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.AllowInsecureAuth = true
	go func() { _ = srv.Serve(ln) }()
	s.closers = append(s.closers, func() { _ = srv.Close() })
	addr := ln.Addr().(*net.TCPAddr)
	s.SMTPHost, s.SMTPPort = addr.IP.String(), addr.Port
	return nil
}

type smtpBackend struct {
	s    *Servers
	mu   sync.Mutex
	seen map[string]int
}

func (b *smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &smtpSession{b: b}, nil
}

type smtpSession struct {
	b     *smtpBackend
	rcpts int
}

func (s *smtpSession) Mail(string, *smtp.MailOptions) error { return nil }

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.b.s.MailRcpts.Add(1)
	local, _, _ := strings.Cut(to, "@")
	switch {
	case strings.HasPrefix(local, MailboxBounce):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "mailbox unavailable"}
	case strings.HasPrefix(local, MailboxGreylist):
		s.b.mu.Lock()
		s.b.seen[to]++
		first := s.b.seen[to] == 1
		s.b.mu.Unlock()
		if first {
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "greylisted, try again later"}
		}
	}
	s.rcpts++
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	if s.rcpts == 0 {
		return errors.New("no valid recipients")
	}
	s.b.s.MailAccepted.Add(int64(s.rcpts))
	return nil
}

func (s *smtpSession) Reset()        { s.rcpts = 0 }
func (s *smtpSession) Logout() error { return nil }
