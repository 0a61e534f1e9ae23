package dispatch

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/email"
)

// smtpBackend answers 451 to the first RCPT for flaky@example.com, 550 to
// every RCPT for gone@example.com, and accepts the rest.
type smtpBackend struct {
	mu       sync.Mutex
	attempts map[string]int
	accepted []string
}

func (be *smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return &smtpSession{be: be}, nil }

func (be *smtpBackend) count(to string) int {
	be.mu.Lock()
	defer be.mu.Unlock()
	return be.attempts[to]
}

type smtpSession struct {
	be *smtpBackend
	to string
}

func (s *smtpSession) Mail(string, *smtp.MailOptions) error { return nil }

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.be.mu.Lock()
	s.be.attempts[to]++
	n := s.be.attempts[to]
	s.be.mu.Unlock()
	switch {
	case to == "flaky@example.com" && n == 1:
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	case to == "gone@example.com":
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "mailbox unavailable"}
	}
	s.to = to
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	s.be.mu.Lock()
	s.be.accepted = append(s.be.accepted, s.to)
	s.be.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        { s.to = "" }
func (s *smtpSession) Logout() error { return nil }

// smtpDeliverer starts a go-smtp server on loopback and returns the email
// channel's Deliverer talking to it (plain SMTP: the TLS and AUTH paths
// are the email package's own tests).
func smtpDeliverer(t *testing.T) (*smtpBackend, channel.Deliverer) {
	t.Helper()
	be := &smtpBackend{attempts: map[string]int{}}
	srv := smtp.NewServer(be)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	d, err := email.New(email.Config{
		Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, TLS: "none",
		From: "Herald <noreply@example.com>", HeloName: "herald.test", Timeout: 5 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return be, d
}

func TestDispatcher_SMTPRetriesOrDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	be, d := smtpDeliverer(t)
	b.start(t, &Config{Channels: map[string]ChannelConfig{
		channel.Email: {Deliverer: d, Backoff: BackoffConfig{Base: 20 * time.Millisecond}},
	}})
	ks := b.insert(t,
		routeSpec{channel: channel.Email, ref: "flaky@example.com"},
		routeSpec{channel: channel.Email, ref: "gone@example.com"},
	)

	r := b.waitStatus(t, ks[0], "published")
	require.EqualValues(t, 2, r.AttemptCount, "451, then 250")
	require.Equal(t, "smtp_451", r.LastErrorClassification)
	require.Equal(t, "flaky@example.com", r.ResolvedEmail)
	require.Equal(t, 2, be.count("flaky@example.com"))

	r = b.waitStatus(t, ks[1], "dead_letter")
	require.EqualValues(t, 1, r.AttemptCount, "550 is not retried")
	dl := b.deadLetter(t, ks[1])
	require.Equal(t, "smtp_550", dl.FailureClassification)
	require.NotEmpty(t, dl.FailureMessage)
	require.NotEmpty(t, dl.RecoveryHint)
	require.Equal(t, 1, be.count("gone@example.com"))
}
