// Package email delivers notifications by SMTP submission, through
// github.com/emersion/go-smtp: STARTTLS (required by default), implicit
// TLS, or plain; AUTH PLAIN or LOGIN; one MIME message per route, with a
// Message-ID derived from the route so retries are recognisable. A few
// authenticated connections are kept open between deliveries.
//
// Replies map onto outcomes as the SMTP codes say: 4xx is Transient and 5xx
// is Permanent ("smtp_550", with a hint), except that a rejected login is
// Transient ("smtp_auth"): it is the relay's configuration that is wrong,
// not the route, and once an operator fixes the credentials the retries
// succeed.
package email

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/internal/channel"
)

// TLS modes.
const (
	// TLSStartTLS upgrades the connection with STARTTLS and fails if the
	// server does not offer it. The default.
	TLSStartTLS = "starttls"
	// TLSOpportunistic upgrades with STARTTLS when the server offers it and
	// otherwise goes on in clear text (without sending credentials).
	TLSOpportunistic = "opportunistic"
	// TLSNone never uses TLS: for a relay on localhost or in tests.
	TLSNone = "none"
	// TLSImplicit speaks TLS from the first byte (SMTPS, port 465).
	TLSImplicit = "implicit"
)

// Classifications specific to the e-mail channel.
const (
	// ClassAuth: the server refused the credentials or demands a login
	// herald is not configured for (Transient).
	ClassAuth = "smtp_auth"
	// ClassTLSRequired: TLS is required by the configuration but the
	// server does not offer it (Transient).
	ClassTLSRequired = "smtp_tls_unavailable"
	// ClassProtocol: the server broke the protocol or herald could not use
	// it (Transient).
	ClassProtocol = "smtp_protocol"
)

// Defaults for the zero values of Config.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxIdleConns = 2
	DefaultIdleTimeout  = 30 * time.Second
)

// Config configures an e-mail Deliverer.
type Config struct {
	// Host is the submission server's host name. Required.
	Host string
	// Port defaults to 587 for starttls and opportunistic, 465 for
	// implicit and 25 for none.
	Port int
	// Username and Password log in with AUTH PLAIN (or LOGIN when PLAIN is
	// not offered). Empty Username means no login. Credentials are only
	// ever sent over TLS, unless TLS is "none".
	Username string
	Password string
	// From is the sender, "noreply@example.com" or
	// "Example <noreply@example.com>"; its domain also names the
	// Message-ID. Required.
	From string
	// TLS is "starttls" (default), "opportunistic", "none" or "implicit".
	TLS string
	// InsecureSkipVerify skips certificate verification. For tests only.
	InsecureSkipVerify bool
	// RootCAs verifies the server's certificate; nil means the system
	// pool.
	RootCAs *x509.CertPool
	// Timeout bounds each SMTP command and the connection set-up, and the
	// whole attempt is bounded by the caller's context too. Default 30s.
	Timeout time.Duration
	// HeloName is the name sent in EHLO. Default: this machine's host
	// name. (With starttls the pre-TLS EHLO says "localhost", a limitation
	// of the client library.)
	HeloName string
	// MaxIdleConns is how many logged-in connections are kept for reuse;
	// default 2, negative means a new connection per delivery.
	MaxIdleConns int
	// IdleTimeout is how long an unused connection is kept; default 30s,
	// short enough to be closed before most servers give up on it.
	IdleTimeout time.Duration
	// Logger receives a debug record per attempt, with the recipient
	// masked. Default: discard.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if strings.TrimSpace(c.Host) == "" {
		return errors.New("Host is required")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("Port must be between 1 and 65535, got %d", c.Port)
	}
	if c.From == "" {
		return errors.New("From is required")
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return fmt.Errorf("From must be an e-mail address: %w", err)
	}
	if !slices.Contains([]string{"", TLSStartTLS, TLSOpportunistic, TLSNone, TLSImplicit}, c.TLS) {
		return fmt.Errorf("TLS must be one of starttls, opportunistic, none, implicit; got %q", c.TLS)
	}
	if c.Timeout < 0 {
		return errors.New("Timeout must not be negative")
	}
	if c.IdleTimeout < 0 {
		return errors.New("IdleTimeout must not be negative")
	}
	if c.Username == "" && c.Password != "" {
		return errors.New("Username is required when Password is set")
	}
	if strings.ContainsAny(c.HeloName, "\r\n ") {
		return errors.New("HeloName must be a single host name")
	}
	return nil
}

// Deliverer sends e-mail through one submission server. It is safe for
// concurrent use.
type Deliverer struct {
	addr      string
	host      string
	tlsMode   string
	tlsConfig *tls.Config
	username  string
	password  string
	from      *mail.Address
	domain    string
	timeout   time.Duration
	helo      string
	logger    *slog.Logger
	now       func() time.Time

	mu          sync.Mutex
	idle        []*conn
	maxIdle     int
	idleTimeout time.Duration
	closed      bool
}

// New returns an e-mail Deliverer, or an error naming the Config field
// that is wrong. It does not connect: a server that is down shows up as
// Transient outcomes, not as a failure to start.
func New(cfg Config) (*Deliverer, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("email config: %w", err)
	}
	from, _ := mail.ParseAddress(cfg.From)
	mode := cmp.Or(cfg.TLS, TLSStartTLS)
	port := cfg.Port
	if port == 0 {
		port = map[string]int{TLSStartTLS: 587, TLSOpportunistic: 587, TLSImplicit: 465, TLSNone: 25}[mode]
	}
	helo := cfg.HeloName
	if helo == "" {
		helo, _ = os.Hostname()
		if helo == "" || strings.ContainsAny(helo, "\r\n ") {
			helo = "localhost"
		}
	}
	host := strings.TrimSpace(cfg.Host)
	maxIdle := cmp.Or(cfg.MaxIdleConns, DefaultMaxIdleConns)
	if maxIdle < 0 {
		maxIdle = 0
	}
	return &Deliverer{
		addr:    net.JoinHostPort(host, strconv.Itoa(port)),
		host:    host,
		tlsMode: mode,
		tlsConfig: &tls.Config{
			ServerName:         host,
			RootCAs:            cfg.RootCAs,
			InsecureSkipVerify: cfg.InsecureSkipVerify, //nolint:gosec // documented as for tests only
			MinVersion:         tls.VersionTLS12,
		},
		username:    cfg.Username,
		password:    cfg.Password,
		from:        from,
		domain:      from.Address[strings.LastIndexByte(from.Address, '@')+1:],
		timeout:     cmp.Or(cfg.Timeout, DefaultTimeout),
		helo:        helo,
		logger:      cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		now:         time.Now,
		maxIdle:     maxIdle,
		idleTimeout: cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout),
	}, nil
}

// Close closes the idle connections; later deliveries open new ones.
func (d *Deliverer) Close() error {
	d.mu.Lock()
	idle := d.idle
	d.idle = nil
	d.closed = true
	d.mu.Unlock()
	for _, c := range idle {
		c.quit()
	}
	return nil
}

// Deliver sends msg to msg.Address and classifies the result. It never
// panics and never returns an outcome quoting a full address, the
// credentials or the content.
func (d *Deliverer) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	return channel.Attempt(ctx, d.logger, channel.Email, msg, d.deliver)
}

func (d *Deliverer) deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	to, err := mail.ParseAddress(msg.Address)
	if err != nil || strings.ContainsAny(to.Address, "\r\n<>") {
		return channel.Outcome{
			Class:          channel.Permanent,
			Classification: channel.ClassInvalidDestination,
			Message:        "recipient is not a valid e-mail address (" + channel.MaskAddress(msg.Address) + ")",
			RecoveryHint:   "correct the recipient's e-mail address, then replay the dead letter",
		}
	}
	var c content
	if len(msg.Content) == 0 {
		return channel.BadContent(channel.Email, nil)
	}
	if err := json.Unmarshal(msg.Content, &c); err != nil {
		return channel.BadContent(channel.Email, err)
	}
	if c.Text == "" && c.HTML == "" {
		return channel.BadContent(channel.Email, errors.New(`neither "text" nor "html" is set`))
	}
	if !utf8.ValidString(c.Subject + c.Text + c.HTML) {
		return channel.BadContent(channel.Email, errors.New("not valid UTF-8"))
	}
	id := messageID(msg.NotificationID, msg.RouteID, d.domain)
	body, err := buildMessage(d.from, &mail.Address{Address: to.Address}, c, id, d.now())
	if err != nil {
		return channel.BadContent(channel.Email, err)
	}

	cn, out, ok := d.get(ctx)
	if !ok {
		return out
	}
	// Closing the connection is the only way to interrupt the client in
	// the middle of a command, so that is what the context's end does.
	stop := context.AfterFunc(ctx, cn.close)
	out, reusable := d.send(ctx, cn, to.Address, body)
	if !stop() {
		reusable = false
	}
	if out.Class == channel.Delivered {
		out.ProviderMessageID = id
	}
	if reusable {
		d.put(cn)
	} else {
		cn.close()
	}
	return out
}

// send runs one mail transaction on cn. reusable reports whether cn is in
// a state to carry the next one.
func (d *Deliverer) send(ctx context.Context, cn *conn, rcpt string, body []byte) (out channel.Outcome, reusable bool) {
	c := cn.client
	var opts *smtp.MailOptions
	if !isASCII(rcpt) || !isASCII(d.from.Address) {
		if ok, _ := c.Extension("SMTPUTF8"); !ok {
			return channel.Outcome{
				Class:          channel.Permanent,
				Classification: "smtp_utf8_unsupported",
				Message:        "the address is internationalised and the server does not support SMTPUTF8",
				RecoveryHint:   "use a submission server that supports SMTPUTF8, or an ASCII address for the recipient, then replay",
			}, true
		}
		opts = &smtp.MailOptions{UTF8: true}
	}
	if err := c.Mail(d.from.Address, opts); err != nil {
		return d.commandOutcome(ctx, "MAIL FROM", err), d.reset(cn, err)
	}
	if err := c.Rcpt(rcpt, nil); err != nil {
		return d.commandOutcome(ctx, "RCPT TO", err), d.reset(cn, err)
	}
	w, err := c.Data()
	if err != nil {
		return d.commandOutcome(ctx, "DATA", err), d.reset(cn, err)
	}
	if _, err := w.Write(body); err != nil {
		return d.commandOutcome(ctx, "DATA", err), false
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return d.commandOutcome(ctx, "DATA", err), d.reset(cn, err)
	}
	return channel.Outcome{
		Class:          channel.Delivered,
		Classification: "smtp_250",
		Message:        "accepted: " + channel.Redact(resp.StatusText, 200),
	}, true
}

// reset ends a failed transaction so the connection can carry the next
// one; it reports whether the connection is still usable.
func (d *Deliverer) reset(cn *conn, err error) bool {
	var smtpErr *smtp.SMTPError
	if !errors.As(err, &smtpErr) || smtpErr.Code == 421 {
		return false
	}
	return cn.client.Reset() == nil
}

// commandOutcome classifies an error from an SMTP command.
func (d *Deliverer) commandOutcome(ctx context.Context, phase string, err error) channel.Outcome {
	var smtpErr *smtp.SMTPError
	if !errors.As(err, &smtpErr) {
		var netErr net.Error
		if ctx.Err() != nil || errors.As(err, &netErr) || isConnErr(err) {
			out := channel.NetworkOutcome(ctx, err, "")
			out.Message = phase + ": " + out.Message
			return out
		}
		return channel.Outcome{
			Class:          channel.Transient,
			Classification: ClassProtocol,
			Message:        phase + ": " + channel.Redact(err.Error(), 200),
		}
	}
	return classifySMTPError(phase, smtpErr)
}

// classifySMTPError maps a server reply onto an outcome: 4xx Transient,
// 5xx Permanent with a hint chosen from the (enhanced) code, and login
// problems Transient as "smtp_auth".
func classifySMTPError(phase string, e *smtp.SMTPError) channel.Outcome {
	out := channel.Outcome{
		Classification: "smtp_" + strconv.Itoa(e.Code),
		Message:        fmt.Sprintf("%s rejected: %d %s", phase, e.Code, channel.Redact(e.Message, 200)),
	}
	if e.EnhancedCode != smtp.EnhancedCodeNotSet && e.EnhancedCode != smtp.NoEnhancedCode {
		out.Message = fmt.Sprintf("%s rejected: %d %d.%d.%d %s", phase, e.Code,
			e.EnhancedCode[0], e.EnhancedCode[1], e.EnhancedCode[2], channel.Redact(e.Message, 200))
	}
	if isAuthReply(e) {
		out.Class = channel.Transient
		out.Classification = ClassAuth
		out.RecoveryHint = "the mail server wants a login herald does not have or refused it: check the e-mail channel's Username and Password; queued deliveries retry by themselves"
		return out
	}
	switch e.Code / 100 {
	case 4:
		out.Class = channel.Transient
		return out
	case 5:
		out.Class = channel.Permanent
		out.RecoveryHint = hint5xx(phase, e)
		return out
	default:
		out.Class = channel.Transient
		out.Classification = ClassProtocol
		return out
	}
}

// isAuthReply reports whether a reply is about the client's login rather
// than the message: 530 authentication required, 534/538 mechanism
// problems, 535 credentials invalid, or an X.7.8 / X.7.0-at-AUTH code.
func isAuthReply(e *smtp.SMTPError) bool {
	switch e.Code {
	case 530, 534, 535, 538:
		return true
	}
	return e.EnhancedCode[1] == 7 && e.EnhancedCode[2] == 8
}

// hint5xx says what an operator can do about a permanent rejection.
func hint5xx(phase string, e *smtp.SMTPError) string {
	ec := e.EnhancedCode
	switch {
	case ec[1] == 1 && phase == "MAIL FROM", phase == "MAIL FROM" && (e.Code == 553 || e.Code == 550):
		return "the server refused the sender: check the e-mail channel's From address is allowed on this server, then replay"
	case ec[1] == 1 || e.Code == 550 || e.Code == 551 || e.Code == 553:
		return "mailbox rejected: check the recipient's address, then replay; do not replay to the same address unchanged"
	case ec[1] == 2 && ec[2] == 2:
		return "the recipient's mailbox is full: try again later by replaying, or use another address"
	case e.Code == 552 || ec[1] == 3 && ec[2] == 4:
		return "the message is too large for the server: shorten the content, then resubmit"
	case ec[1] == 7:
		return "rejected by policy (relay, spam or sender authentication): check the server's relay permission and the From domain's SPF/DKIM, then replay"
	default:
		return fmt.Sprintf("the mail server rejected the message permanently (SMTP %d): read its reply in the message, fix the cause, then replay", e.Code)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
