package email

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
)

const (
	testUser     = "herald"
	testPassword = "s3cret-pass"
)

// selfSignedCert returns a certificate for 127.0.0.1 and localhost and a
// pool that trusts it.
func selfSignedCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "herald test smtp"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// receivedMail is one message as the test server accepted it.
type receivedMail struct {
	from string
	to   []string
	data []byte
	tls  bool
	user string
}

// backend is a go-smtp server backend that wants AUTH PLAIN, answers 451
// then 250 for flaky@example.com, 550 for gone@example.com, and records
// what it accepts.
type backend struct {
	mu       sync.Mutex
	mails    []receivedMail
	attempts map[string]int
	// dataGate, when set, holds every DATA until it is closed.
	dataGate chan struct{}
}

func (be *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{be: be, conn: c}, nil
}

func (be *backend) received() []receivedMail {
	be.mu.Lock()
	defer be.mu.Unlock()
	return append([]receivedMail(nil), be.mails...)
}

type session struct {
	be   *backend
	conn *smtp.Conn
	user string
	from string
	to   []string
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != testUser || password != testPassword {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}
		}
		s.user = username
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.user == "" && s.conn.Server().TLSConfig != nil {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.be.mu.Lock()
	s.be.attempts[to]++
	n := s.be.attempts[to]
	s.be.mu.Unlock()
	switch to {
	case "flaky@example.com":
		if n == 1 {
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}
	case "gone@example.com":
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "<gone@example.com>: mailbox unavailable"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if gate := s.be.dataGate; gate != nil {
		<-gate
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.be.mu.Lock()
	s.be.mails = append(s.be.mails, receivedMail{from: s.from, to: s.to, data: data, tls: isTLS, user: s.user})
	s.be.mu.Unlock()
	return nil
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }

// countingListener counts accepted connections, and those the server
// closed (after the client's goodbye or the server's own timeout alike).
type countingListener struct {
	net.Listener
	accepted atomic.Int32
	closed   atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

// countedConn tells its listener when the server closes it.
type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.closed.Add(1) })
	return c.Conn.Close()
}

// testBundle is a real SMTP server on loopback and its configuration.
type testBundle struct {
	backend  *backend
	listener *countingListener
	port     int
	pool     *x509.CertPool
}

type serverOpts struct {
	noTLS    bool // no STARTTLS offered
	implicit bool // TLS from the first byte
	dataGate chan struct{}
	// readTimeout is how long the server waits for a command; default 10s.
	readTimeout time.Duration
}

func startServer(t *testing.T, opts serverOpts) *testBundle {
	t.Helper()
	cert, pool := selfSignedCert(t)
	be := &backend{attempts: map[string]int{}, dataGate: opts.dataGate}
	srv := smtp.NewServer(be)
	srv.Domain = "localhost"
	srv.ReadTimeout = cmp.Or(opts.readTimeout, 10*time.Second)
	srv.WriteTimeout = 10 * time.Second
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if !opts.noTLS && !opts.implicit {
		srv.TLSConfig = tlsConfig
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &countingListener{Listener: raw}
	var served net.Listener = l
	if opts.implicit {
		served = tls.NewListener(l, tlsConfig)
		srv.AllowInsecureAuth = true // the session is TLS, but go-smtp cannot tell
	}
	go func() { _ = srv.Serve(served) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &testBundle{backend: be, listener: l, port: raw.Addr().(*net.TCPAddr).Port, pool: pool}
}

func (b *testBundle) config() Config {
	return Config{
		Host:     "127.0.0.1",
		Port:     b.port,
		Username: testUser,
		Password: testPassword,
		From:     "Herald Notifications <noreply@example.com>",
		RootCAs:  b.pool,
		Timeout:  5 * time.Second,
		HeloName: "herald.test",
	}
}

func newDeliverer(t *testing.T, cfg Config) *Deliverer {
	t.Helper()
	d, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func testMessage(to string, c content) *channel.Message {
	raw, _ := json.Marshal(c)
	return &channel.Message{
		NotificationID:   "ntf_1",
		RouteID:          "rte_1",
		NotificationType: "order.shipped",
		Attempt:          1,
		Address:          to,
		Content:          raw,
	}
}

var fullContent = content{
	Subject: "Votre commande n°9 est expédiée",
	Text:    "Bonjour Zoë,\nvotre commande est partie. Une ligne très longue pour vérifier le repli quoted-printable au-delà de soixante-seize caractères.\n",
	HTML:    "<p>Bonjour Zoë,</p><p>votre commande est <b>partie</b>.</p>",
}

// decodeQP reads a quoted-printable body.
func decodeQP(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(quotedprintable.NewReader(r))
	require.NoError(t, err)
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

func TestDeliver_SendsMIMEOverStartTLS(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())

	out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	require.Equal(t, "smtp_250", out.Classification)
	require.Equal(t, "herald.ntf_1.rte_1@example.com", out.ProviderMessageID)

	mails := b.backend.received()
	require.Len(t, mails, 1)
	m := mails[0]
	require.True(t, m.tls, "the message must travel over TLS")
	require.Equal(t, testUser, m.user)
	require.Equal(t, "noreply@example.com", m.from)
	require.Equal(t, []string{"zoe@example.com"}, m.to)

	parsed, err := mail.ReadMessage(bytes.NewReader(m.data))
	require.NoError(t, err)
	h := parsed.Header
	from, err := h.AddressList("From")
	require.NoError(t, err)
	require.Equal(t, "Herald Notifications", from[0].Name)
	require.Equal(t, "noreply@example.com", from[0].Address)
	to, err := h.AddressList("To")
	require.NoError(t, err)
	require.Equal(t, "zoe@example.com", to[0].Address)
	require.True(t, strings.HasPrefix(h.Get("Subject"), "=?utf-8?q?"), "non-ASCII subject must be RFC 2047 encoded: %q", h.Get("Subject"))
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, fullContent.Subject, subject)
	date, err := h.Date()
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), date, time.Minute)
	require.Equal(t, "<herald.ntf_1.rte_1@example.com>", h.Get("Message-ID"))
	require.Equal(t, "1.0", h.Get("MIME-Version"))

	mediaType, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mediaType)
	mr := multipart.NewReader(parsed.Body, params["boundary"])
	var parts []string
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, "quoted-printable", p.Header.Get("Content-Transfer-Encoding"))
		parts = append(parts, p.Header.Get("Content-Type"))
		switch p.Header.Get("Content-Type") {
		case "text/plain; charset=utf-8":
			require.Equal(t, fullContent.Text, decodeQP(t, p))
		case "text/html; charset=utf-8":
			require.Equal(t, fullContent.HTML, decodeQP(t, p))
		}
	}
	require.Equal(t, []string{"text/plain; charset=utf-8", "text/html; charset=utf-8"}, parts)
	for line := range strings.SplitSeq(string(m.data), "\r\n") {
		require.LessOrEqual(t, len(line), 998, "RFC 5322 line length")
	}
}

func TestDeliver_SendsSinglePartBodies(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())

	tests := []struct {
		name  string
		c     content
		ctype string
		body  string
	}{
		{"TextOnly", content{Subject: "Plain", Text: "just text = fine\n"}, "text/plain; charset=utf-8", "just text = fine\n"},
		{"HTMLOnly", content{Subject: "Rich", HTML: "<p>ok</p>"}, "text/html; charset=utf-8", "<p>ok</p>"},
	}
	for i, tt := range tests {
		msg := testMessage("zoe@example.com", tt.c)
		msg.RouteID = fmt.Sprintf("rte_%d", i)
		out := d.Deliver(t.Context(), msg)
		require.Equal(t, channel.Delivered, out.Class, out.Message)
		mails := b.backend.received()
		parsed, err := mail.ReadMessage(bytes.NewReader(mails[len(mails)-1].data))
		require.NoError(t, err)
		require.Equal(t, tt.ctype, parsed.Header.Get("Content-Type"), tt.name)
		require.Equal(t, "quoted-printable", parsed.Header.Get("Content-Transfer-Encoding"), tt.name)
		require.Equal(t, tt.c.Subject, parsed.Header.Get("Subject"), "an ASCII subject stays as it is")
		require.Equal(t, strings.TrimSpace(tt.body), strings.TrimSpace(decodeQP(t, parsed.Body)), tt.name)
	}
}

func TestDeliver_RetriesTemporaryRecipient(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())
	msg := testMessage("flaky@example.com", fullContent)

	out := d.Deliver(t.Context(), msg)
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, "smtp_451", out.Classification)
	require.Contains(t, out.Message, "RCPT TO")
	require.Empty(t, b.backend.received())

	msg.Attempt = 2
	out = d.Deliver(t.Context(), msg)
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	require.Len(t, b.backend.received(), 1)
}

func TestDeliver_UnknownMailboxIsPermanent(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())

	out := d.Deliver(t.Context(), testMessage("gone@example.com", fullContent))
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, "smtp_550", out.Classification)
	require.Contains(t, out.RecoveryHint, "mailbox rejected: check the recipient's address")
	require.Contains(t, out.Message, "5.1.1")
	require.NotContains(t, out.Message, "gone@example.com", "the server's echo of the address must be masked")
	require.Contains(t, out.Message, "g***@example.com")

	// The connection survives a rejected recipient and carries the next
	// message.
	out = d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	require.EqualValues(t, 1, b.listener.accepted.Load())
}

func TestDeliver_ReusesConnections(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())

	for i := range 3 {
		msg := testMessage("zoe@example.com", fullContent)
		msg.RouteID = fmt.Sprintf("rte_%d", i)
		require.Equal(t, channel.Delivered, d.Deliver(t.Context(), msg).Class)
	}
	require.Len(t, b.backend.received(), 3)
	require.EqualValues(t, 1, b.listener.accepted.Load())

	t.Run("NoReuseWhenDisabled", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{})
		cfg := b.config()
		cfg.MaxIdleConns = -1
		d := newDeliverer(t, cfg)
		for range 2 {
			require.Equal(t, channel.Delivered, d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent)).Class)
		}
		require.EqualValues(t, 2, b.listener.accepted.Load())
	})
	t.Run("ReconnectsAfterIdleTimeout", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{})
		cfg := b.config()
		cfg.IdleTimeout = time.Millisecond
		d := newDeliverer(t, cfg)
		require.Equal(t, channel.Delivered, d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent)).Class)
		require.Eventually(t, func() bool { // the pooled connection outlives IdleTimeout
			d.mu.Lock()
			defer d.mu.Unlock()
			return len(d.idle) == 1 && time.Since(d.idle[0].idleSince) >= cfg.IdleTimeout
		}, 5*time.Second, time.Millisecond)
		require.Equal(t, channel.Delivered, d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent)).Class)
		require.EqualValues(t, 2, b.listener.accepted.Load())
	})
	t.Run("ReconnectsWhenServerDroppedIdleConnection", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{readTimeout: 200 * time.Millisecond})
		d := newDeliverer(t, b.config())
		require.Equal(t, channel.Delivered, d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent)).Class)
		require.Eventually(t, func() bool { return b.listener.closed.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
			"the server times the idle session out")
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Delivered, out.Class, "a stale pooled connection must not cost an attempt: %s", out.Message)
		require.EqualValues(t, 2, b.listener.accepted.Load())
	})
}

func TestDeliver_WrongPasswordIsTransientAuth(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	cfg := b.config()
	cfg.Password = "wrong-password"
	d := newDeliverer(t, cfg)

	out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, ClassAuth, out.Classification)
	require.Contains(t, out.RecoveryHint, "Username and Password")
	require.NotContains(t, out.Message, "wrong-password")
	require.NotContains(t, out.RecoveryHint, "wrong-password")
}

func TestDeliver_TLSModes(t *testing.T) {
	t.Parallel()

	t.Run("StartTLSRequiredButNotOffered", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{noTLS: true})
		d := newDeliverer(t, b.config())
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, ClassTLSRequired, out.Classification)
		require.Empty(t, b.backend.received())
	})
	t.Run("OpportunisticUpgradesWhenOffered", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{})
		cfg := b.config()
		cfg.TLS = TLSOpportunistic
		d := newDeliverer(t, cfg)
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
		require.True(t, b.backend.received()[0].tls)
	})
	t.Run("OpportunisticFallsBackToPlainWithoutCredentials", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{noTLS: true})
		cfg := b.config()
		cfg.TLS, cfg.Username, cfg.Password = TLSOpportunistic, "", ""
		d := newDeliverer(t, cfg)
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
		require.False(t, b.backend.received()[0].tls)
	})
	t.Run("OpportunisticNeverSendsCredentialsInClear", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{noTLS: true})
		cfg := b.config()
		cfg.TLS = TLSOpportunistic
		d := newDeliverer(t, cfg)
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, ClassTLSRequired, out.Classification)
	})
	t.Run("Implicit", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{implicit: true})
		cfg := b.config()
		cfg.TLS = TLSImplicit
		d := newDeliverer(t, cfg)
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
		require.Equal(t, testUser, b.backend.received()[0].user)
	})
	t.Run("NoneSendsPlain", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{noTLS: true})
		cfg := b.config()
		cfg.TLS, cfg.Username, cfg.Password = TLSNone, "", ""
		d := newDeliverer(t, cfg)
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
	})
	t.Run("UntrustedCertificate", func(t *testing.T) {
		t.Parallel()
		b := startServer(t, serverOpts{})
		cfg := b.config()
		_, otherPool := selfSignedCert(t)
		cfg.RootCAs = otherPool
		d := newDeliverer(t, cfg)
		out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, channel.ClassTLSCertificate, out.Classification)
		require.Empty(t, b.backend.received())
	})
}

func TestDeliver_RespectsContextDeadline(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	b := startServer(t, serverOpts{dataGate: gate})
	cfg := b.config()
	cfg.Timeout = time.Minute
	d := newDeliverer(t, cfg)

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	out := d.Deliver(ctx, testMessage("zoe@example.com", fullContent))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, channel.ClassTimeout, out.Classification)
	require.Less(t, time.Since(start), 3*time.Second)
}

func TestDeliver_ConnectionRefusedIsTransient(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	d := newDeliverer(t, Config{Host: "127.0.0.1", Port: port, From: "noreply@example.com", Timeout: time.Second})

	out := d.Deliver(t.Context(), testMessage("zoe@example.com", fullContent))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, channel.ClassConnectionRefused, out.Classification)
}

func TestDeliver_RejectsBadInputOffline(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())

	tests := []struct {
		name           string
		address        string
		content        json.RawMessage
		class          channel.Class
		classification string
	}{
		{"NoAddress", "", json.RawMessage(`{"text":"x"}`), channel.Skip, channel.ClassNoAddress},
		{"NotAnAddress", "zoe at example", json.RawMessage(`{"text":"x"}`), channel.Permanent, channel.ClassInvalidDestination},
		{"InvalidJSON", "zoe@example.com", json.RawMessage(`{"text":`), channel.Permanent, channel.ClassBadContent},
		{"WrongType", "zoe@example.com", json.RawMessage(`{"text":42}`), channel.Permanent, channel.ClassBadContent},
		{"NotAnObject", "zoe@example.com", json.RawMessage(`"hello"`), channel.Permanent, channel.ClassBadContent},
		{"NoBody", "zoe@example.com", json.RawMessage(`{"subject":"only a subject"}`), channel.Permanent, channel.ClassBadContent},
		{"Empty", "zoe@example.com", nil, channel.Permanent, channel.ClassBadContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := testMessage(tt.address, content{})
			msg.Content = tt.content
			out := d.Deliver(t.Context(), msg)
			require.Equal(t, tt.class, out.Class)
			require.Equal(t, tt.classification, out.Classification)
			require.NotContains(t, out.Message, "zoe@example.com")
		})
	}
	require.Zero(t, b.listener.accepted.Load())
}

func TestDeliver_SubjectBreaksStayOutOfHeaders(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())

	out := d.Deliver(t.Context(), testMessage("zoe@example.com", content{Subject: "Hi\r\nBcc: evil@example.net", Text: "x"}))
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	parsed, err := mail.ReadMessage(bytes.NewReader(b.backend.received()[0].data))
	require.NoError(t, err)
	require.Empty(t, parsed.Header.Get("Bcc"))
	require.Equal(t, "Hi Bcc: evil@example.net", parsed.Header.Get("Subject"))
}

func TestDeliver_SafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	b := startServer(t, serverOpts{})
	d := newDeliverer(t, b.config())

	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			msg := testMessage("zoe@example.com", fullContent)
			msg.RouteID = fmt.Sprintf("rte_%d", i)
			out := d.Deliver(t.Context(), msg)
			require.Equal(t, channel.Delivered, out.Class, out.Message)
		})
	}
	wg.Wait()
	require.Len(t, b.backend.received(), 16)
}

func TestClassifySMTPError_Codes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		err            *smtp.SMTPError
		class          channel.Class
		classification string
		hint           string
	}{
		{"ServiceClosing", &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 4, 2}}, channel.Transient, "smtp_421", ""},
		{"Greylisted", &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}}, channel.Transient, "smtp_451", ""},
		{"StorageFull", &smtp.SMTPError{Code: 452}, channel.Transient, "smtp_452", ""},
		{"NoMailbox", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}}, channel.Permanent, "smtp_550", "mailbox rejected"},
		{"MailboxFull", &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 2, 2}}, channel.Permanent, "smtp_552", "full"},
		{"TooLarge", &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}}, channel.Permanent, "smtp_552", "too large"},
		{"RelayDenied", &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}}, channel.Permanent, "smtp_554", "policy"},
		{"AuthRequired", &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}}, channel.Transient, ClassAuth, "Username"},
		{"BadCredentials", &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}}, channel.Transient, ClassAuth, "Username"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := classifySMTPError("RCPT TO", tt.err)
			require.Equal(t, tt.class, out.Class)
			require.Equal(t, tt.classification, out.Classification)
			require.Contains(t, out.RecoveryHint, tt.hint)
		})
	}
}

func TestNew_ValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"NoHost", Config{From: "a@example.com"}, "Host"},
		{"NoFrom", Config{Host: "smtp.example.com"}, "From"},
		{"BadFrom", Config{Host: "smtp.example.com", From: "not an address"}, "From"},
		{"BadTLS", Config{Host: "smtp.example.com", From: "a@example.com", TLS: "always"}, "TLS"},
		{"BadPort", Config{Host: "smtp.example.com", From: "a@example.com", Port: 70000}, "Port"},
		{"PasswordWithoutUser", Config{Host: "smtp.example.com", From: "a@example.com", Password: "hunter2"}, "Username"},
		{"NegativeTimeout", Config{Host: "smtp.example.com", From: "a@example.com", Timeout: -time.Second}, "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestDeliver_NilMessageDoesNotPanic(t *testing.T) {
	t.Parallel()
	d := newDeliverer(t, Config{Host: "127.0.0.1", From: "noreply@example.com"})
	out := d.Deliver(t.Context(), nil)
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, channel.ClassBadContent, out.Classification)
}
