package email

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/internal/channel"
)

// conn is one logged-in SMTP connection.
type conn struct {
	client    *smtp.Client
	netConn   net.Conn
	idleSince time.Time
	closeOnce sync.Once
}

// close drops the connection without a goodbye; safe to call many times
// and from the context's AfterFunc.
func (c *conn) close() {
	c.closeOnce.Do(func() { _ = c.netConn.Close() })
}

// quit says goodbye politely, within a short deadline, then closes.
func (c *conn) quit() {
	_ = c.netConn.SetDeadline(time.Now().Add(time.Second))
	_ = c.client.Quit()
	c.close()
}

// get returns a usable connection: an idle one that still answers NOOP,
// or a new one. When it returns ok false, out says why.
func (d *Deliverer) get(ctx context.Context) (cn *conn, out channel.Outcome, ok bool) {
	for {
		c := d.takeIdle()
		if c == nil {
			break
		}
		stop := context.AfterFunc(ctx, c.close)
		err := c.client.Noop()
		if stop() && err == nil {
			return c, channel.Outcome{}, true
		}
		c.close()
		if ctx.Err() != nil {
			return nil, channel.NetworkOutcome(ctx, ctx.Err(), ""), false
		}
	}
	return d.dial(ctx)
}

// takeIdle pops the most recently used idle connection, closing those that
// have been idle too long.
func (d *Deliverer) takeIdle() *conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.idle) > 0 {
		c := d.idle[len(d.idle)-1]
		d.idle = d.idle[:len(d.idle)-1]
		if time.Since(c.idleSince) < d.idleTimeout {
			return c
		}
		go c.quit()
	}
	return nil
}

// put returns a connection to the idle list, or closes it when the list is
// full.
func (d *Deliverer) put(c *conn) {
	d.mu.Lock()
	if d.closed || len(d.idle) >= d.maxIdle {
		d.mu.Unlock()
		c.quit()
		return
	}
	c.idleSince = time.Now()
	d.idle = append(d.idle, c)
	d.mu.Unlock()
}

// dial connects, greets, secures and logs in per the configuration. The
// whole set-up is bounded by the configured Timeout as well as by ctx.
func (d *Deliverer) dial(ctx context.Context) (*conn, channel.Outcome, bool) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	upgrade := d.tlsMode == TLSStartTLS
	if d.tlsMode == TLSOpportunistic {
		offered, out, ok := d.probeStartTLS(ctx)
		if !ok {
			return nil, out, false
		}
		upgrade = offered
	}
	nc, err := d.dialNet(ctx)
	if err != nil {
		return nil, d.connectOutcome(ctx, err), false
	}
	cn := &conn{netConn: nc}
	stop := context.AfterFunc(ctx, cn.close)
	out, ok := d.handshake(ctx, cn, upgrade)
	if !stop() {
		ok = false
		out = channel.NetworkOutcome(ctx, ctx.Err(), "smtp://"+d.addr)
	}
	if !ok {
		cn.close()
		return nil, out, false
	}
	return cn, channel.Outcome{}, true
}

// dialNet opens the TCP (or, for implicit TLS, TLS) connection.
func (d *Deliverer) dialNet(ctx context.Context) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: d.timeout}
	if d.tlsMode == TLSImplicit {
		return (&tls.Dialer{NetDialer: dialer, Config: d.tlsConfig}).DialContext(ctx, "tcp", d.addr)
	}
	return dialer.DialContext(ctx, "tcp", d.addr)
}

// probeStartTLS asks the server whether it offers STARTTLS, on a
// connection of its own: the client library cannot upgrade a connection
// whose EHLO answer it has already read.
func (d *Deliverer) probeStartTLS(ctx context.Context) (offered bool, out channel.Outcome, ok bool) {
	nc, err := d.dialNet(ctx)
	if err != nil {
		return false, d.connectOutcome(ctx, err), false
	}
	cn := &conn{netConn: nc, client: d.newClient(nc)}
	stop := context.AfterFunc(ctx, cn.close)
	defer stop()
	if err := cn.client.Hello(d.helo); err != nil {
		cn.close()
		return false, d.connectOutcome(ctx, err), false
	}
	offered, _ = cn.client.Extension("STARTTLS")
	cn.quit()
	return offered, channel.Outcome{}, true
}

// handshake runs greeting, EHLO, STARTTLS (when upgrade is set) and AUTH
// on a fresh connection.
func (d *Deliverer) handshake(ctx context.Context, cn *conn, upgrade bool) (channel.Outcome, bool) {
	var c *smtp.Client
	if upgrade {
		var err error
		if c, err = smtp.NewClientStartTLS(cn.netConn, d.tlsConfig); err != nil {
			return d.startTLSOutcome(ctx, err), false
		}
		c.CommandTimeout, c.SubmissionTimeout = d.timeout, d.timeout
	} else {
		c = d.newClient(cn.netConn)
	}
	cn.client = c
	// After STARTTLS the client greets again, so Hello is still allowed
	// here and sets the name used from now on.
	if err := c.Hello(d.helo); err != nil {
		return d.connectOutcome(ctx, err), false
	}
	if d.username == "" {
		return channel.Outcome{}, true
	}
	if _, secure := c.TLSConnectionState(); !secure && d.tlsMode != TLSNone {
		return channel.Outcome{
			Class:          channel.Transient,
			Classification: ClassTLSRequired,
			Message:        "the mail server offers no TLS; credentials are not sent in clear text",
			RecoveryHint:   "enable STARTTLS on the mail server, or set the e-mail channel's TLS to \"none\" if the link is trusted",
		}, false
	}
	var auth sasl.Client
	switch {
	case c.SupportsAuth(sasl.Plain):
		auth = sasl.NewPlainClient("", d.username, d.password)
	case c.SupportsAuth(sasl.Login):
		auth = sasl.NewLoginClient(d.username, d.password)
	default:
		return channel.Outcome{
			Class:          channel.Transient,
			Classification: ClassAuth,
			Message:        "the mail server offers neither AUTH PLAIN nor AUTH LOGIN",
			RecoveryHint:   "enable AUTH PLAIN or LOGIN on the mail server, or clear the e-mail channel's Username if it needs no login",
		}, false
	}
	if err := c.Auth(auth); err != nil {
		var smtpErr *smtp.SMTPError
		if errors.As(err, &smtpErr) {
			out := classifySMTPError("AUTH", smtpErr)
			out.Class = channel.Transient
			out.Classification = ClassAuth
			out.RecoveryHint = "the mail server refused the login: check the e-mail channel's Username and Password; queued deliveries retry by themselves"
			return out, false
		}
		return d.connectOutcome(ctx, err), false
	}
	return channel.Outcome{}, true
}

func (d *Deliverer) newClient(nc net.Conn) *smtp.Client {
	c := smtp.NewClient(nc)
	c.CommandTimeout, c.SubmissionTimeout = d.timeout, d.timeout
	return c
}

// startTLSOutcome classifies a failure of greeting, EHLO or STARTTLS.
func (d *Deliverer) startTLSOutcome(ctx context.Context, err error) channel.Outcome {
	var smtpErr *smtp.SMTPError
	if ctx.Err() != nil || errors.As(err, &smtpErr) || isConnErr(err) {
		return d.connectOutcome(ctx, err)
	}
	out := channel.NetworkOutcome(ctx, err, "")
	if out.Classification == channel.ClassNetwork {
		// Neither a reply nor a network or TLS error: the library's own
		// "server doesn't support STARTTLS".
		return channel.Outcome{
			Class:          channel.Transient,
			Classification: ClassTLSRequired,
			Message:        "the mail server does not offer STARTTLS, which the e-mail channel requires",
			RecoveryHint:   "enable STARTTLS on the mail server, or change the e-mail channel's TLS mode",
		}
	}
	out.Message = "STARTTLS: " + out.Message
	return out
}

// connectOutcome classifies a failure to set up the connection. Every
// such failure is Transient: it concerns the relay herald is configured
// with, not the route.
func (d *Deliverer) connectOutcome(ctx context.Context, err error) channel.Outcome {
	var smtpErr *smtp.SMTPError
	if errors.As(err, &smtpErr) {
		out := classifySMTPError("connect", smtpErr)
		out.Class = channel.Transient
		out.RecoveryHint = ""
		return out
	}
	if ctx.Err() == nil && !isConnErr(err) {
		var (
			tlsErr *tls.CertificateVerificationError
			alert  tls.AlertError
			record tls.RecordHeaderError
		)
		if !errors.As(err, &tlsErr) && !errors.As(err, &alert) && !errors.As(err, &record) {
			return channel.Outcome{
				Class:          channel.Transient,
				Classification: ClassProtocol,
				Message:        "connect: " + channel.Redact(err.Error(), 200),
			}
		}
	}
	return channel.NetworkOutcome(ctx, err, "smtp://"+d.addr)
}

// isConnErr reports whether err is a broken connection rather than a
// library or protocol complaint.
func isConnErr(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
