package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// Servers are the three loopback channel servers of a demo run.
type Servers struct {
	// Webhook is the receiver's base URL, e.g. http://127.0.0.1:41234.
	Webhook string
	// SMTPHost and SMTPPort address the SMTP server (no TLS, no AUTH).
	SMTPHost string
	SMTPPort int
	// SMS is the provider's send endpoint URL.
	SMS string
	// SMSAPIKey is the key the provider expects as a bearer token.
	SMSAPIKey string

	// Counts of what each server saw.
	WebhookRequests, WebhookAccepted atomic.Int64
	MailRcpts, MailAccepted          atomic.Int64
	SMSRequests, SMSAccepted         atomic.Int64
	SMSThrottled, SMSFailed          atomic.Int64

	closers []func()
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

// SMSUnknownNumbers are valid E.164 numbers the SMS provider says it
// cannot reach (HTTP 400, invalid_destination): permanent failures.
var SMSUnknownNumbers = map[string]bool{
	"+14155550199":   true,
	"+4915112345999": true,
	"+5511900000999": true,
}

// Start starts the three servers on loopback. Close stops them.
func Start(ctx context.Context) (*Servers, error) {
	s := &Servers{SMSAPIKey: "demo-sms-key"}
	var err error
	if s.Webhook, err = s.serveHTTP(ctx, http.HandlerFunc(s.webhook)); err != nil {
		s.Close()
		return nil, err
	}
	sms, err := s.serveHTTP(ctx, http.HandlerFunc(s.sms))
	if err != nil {
		s.Close()
		return nil, err
	}
	s.SMS = sms + "/v1/messages"
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

// sms is the provider: bearer auth, JSON {"to", "from", "body"}; one request
// in seven is throttled (429 with Retry-After: 1), one in eleven fails with
// 500, and SMSUnknownNumbers are refused as invalid destinations.
func (s *Servers) sms(w http.ResponseWriter, r *http.Request) {
	n := s.SMSRequests.Add(1)
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+s.SMSAPIKey {
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
	case n%7 == 0:
		s.SMSThrottled.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":"rate_limited","message":"too many requests"}`)
	case n%11 == 0:
		s.SMSFailed.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":"internal","message":"upstream carrier timeout"}`)
	case SMSUnknownNumbers[req.To]:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_destination","message":"unknown number"}`)
	default:
		s.SMSAccepted.Add(1)
		_, _ = fmt.Fprintf(w, `{"id":"sm_%06d","status":"queued"}`, n)
	}
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
