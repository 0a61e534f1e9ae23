package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/channel"
)

// SenderConfig configures a Sender. Its fields mean what Config's fields of
// the same names mean.
type SenderConfig struct {
	Timeout          time.Duration
	AllowPrivate     bool
	AllowHosts       []string
	DenyCIDRs        []string
	UserAgent        string
	MaxResponseBytes int64
	Concurrency      int
}

// maxIdleConns bounds a Sender's idle connections over all hosts, unless
// its concurrency is larger.
const maxIdleConns = 256

// Sender POSTs JSON bodies to URLs that belong to someone else, behind the
// dial guard (see the package documentation), and classifies the answer as
// a webhook delivery is classified. The webhook Deliverer sends through
// one; so does the callback channel, whose destinations belong to
// producers. It is safe for concurrent use.
type Sender struct {
	client           *http.Client
	transport        *http.Transport
	timeout          time.Duration
	userAgent        string
	maxResponseBytes int64
	now              func() time.Time
}

// NewSender returns a Sender, or an error naming the SenderConfig field
// that is wrong.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if cfg.Timeout < 0 {
		return nil, errors.New("Timeout must not be negative")
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, errors.New("MaxResponseBytes must not be negative")
	}
	g, err := newGuard(cfg.AllowPrivate, cfg.AllowHosts, cfg.DenyCIDRs)
	if err != nil {
		return nil, err
	}
	timeout := cmp.Or(cfg.Timeout, DefaultTimeout)
	transport := &http.Transport{
		// No proxy: a proxy would connect on herald's behalf and the dial
		// guard would only ever see the proxy's address.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, fmt.Errorf("split %q: %w", addr, err)
			}
			d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control(host)}
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2: true,
		// Idle connections over all hosts are bounded; one host may keep
		// as many as the deliveries in flight, since a channel often sends
		// most of its traffic to one receiver, and a smaller pool would
		// close what a burst opened for the next burst to dial again.
		MaxIdleConns:          max(maxIdleConns, cfg.Concurrency),
		MaxIdleConnsPerHost:   cmp.Or(cfg.Concurrency, maxIdleConns),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ExpectContinueTimeout: time.Second,
		// Bound the headers a hostile receiver can make herald buffer.
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Sender{
		client: &http.Client{
			Transport: transport,
			// Redirects are not followed: a redirect could point anywhere
			// (the guard would still apply, but the receiver should fix its
			// URL), and a POST body is not safely re-sent.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		transport:        transport,
		timeout:          timeout,
		userAgent:        cmp.Or(cfg.UserAgent, DefaultUserAgent),
		maxResponseBytes: cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes),
		now:              time.Now,
	}, nil
}

// Close releases idle connections. The Sender stays usable.
func (s *Sender) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// ParseTarget parses a destination URL. It returns ok false, with the
// Permanent invalid_destination outcome to report, unless address is an
// absolute http or https URL with a host.
func ParseTarget(address string) (target *url.URL, refused channel.Outcome, ok bool) {
	target, err := url.Parse(strings.TrimSpace(address))
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, channel.Outcome{
			Class:          channel.Permanent,
			Classification: channel.ClassInvalidDestination,
			Message:        "webhook address is not an absolute http(s) URL",
			RecoveryHint:   "correct the recipient's webhook URL, then replay the dead letter",
		}, false
	}
	return target, channel.Outcome{}, true
}

// Post sends body to target as application/json with header's fields
// (keyed in canonical form) added, within the Sender's timeout, and
// classifies the result. header becomes the request's header map, which
// Post adds to: a caller passes a map of its own and does not use it
// again. The result: 2xx
// Delivered; 408, 429 and 5xx Transient (with Retry-After honoured); other
// answers, redirects and the guard's refusal Permanent; network failures
// Transient. The outcome never quotes the URL's path or query, the
// headers or the body.
func (s *Sender) Post(ctx context.Context, target *url.URL, header http.Header, body []byte) channel.Outcome {
	dest := target.Scheme + "://" + target.Host // masked form; never the path or query
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return channel.Outcome{
			Class:          channel.Permanent,
			Classification: channel.ClassInvalidDestination,
			Message:        "webhook address cannot be requested (" + dest + ")",
			RecoveryHint:   "correct the recipient's webhook URL, then replay the dead letter",
		}
	}
	if header != nil {
		req.Header = header // taken over, not copied: see the doc comment
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["User-Agent"] = []string{s.userAgent}
	// The traceparent of ctx's span (the delivery attempt's), if any.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	span := trace.SpanFromContext(ctx)
	resp, err := s.client.Do(req)
	if err != nil {
		return transportOutcome(ctx, err, dest)
	}
	defer resp.Body.Close()
	if span.IsRecording() {
		// OpenTelemetry's HTTP client conventions; never the URL, which
		// is the recipient's address.
		span.SetAttributes(attribute.String("http.request.method", http.MethodPost),
			attribute.Int("http.response.status_code", resp.StatusCode))
	}
	// Drain a bounded amount so the connection can be reused; the body
	// itself is not kept (it could echo the payload).
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, s.maxResponseBytes))
	return classifyResponse(resp, dest, s.now())
}

// transportOutcome classifies a request that got no response.
func transportOutcome(ctx context.Context, err error, dest string) channel.Outcome {
	if isDenied(err) {
		return channel.Outcome{
			Class:          channel.Permanent,
			Classification: ClassDestinationDenied,
			Message:        "webhook destination refused (" + dest + "): " + deniedReason(err),
			RecoveryHint: "the URL's host resolves to a private or reserved address; use a public URL, " +
				"or list the host in the webhook channel's AllowHosts if it is a trusted internal receiver, then replay",
		}
	}
	out := channel.NetworkOutcome(ctx, err, dest)
	if out.Classification == channel.ClassTLSCertificate {
		// The receiver owns its certificate; retrying will not fix it.
		out.Class = channel.Permanent
		out.RecoveryHint = "the receiver's TLS certificate is invalid or untrusted; ask the receiver to fix it, then replay"
	}
	return out
}

// classifyResponse maps an HTTP response onto an outcome.
func classifyResponse(resp *http.Response, dest string, now time.Time) channel.Outcome {
	code := resp.StatusCode
	out := channel.Outcome{
		Classification: "http_" + strconv.Itoa(code),
		Message:        fmt.Sprintf("%s answered HTTP %d %s", dest, code, http.StatusText(code)),
	}
	switch {
	case code >= 200 && code < 300:
		out.Class = channel.Delivered
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		out.Class = channel.Transient
		out.RetryAfter = channel.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	case code >= 300 && code < 400:
		out.Class = channel.Permanent
		loc := channel.MaskAddress(resp.Header.Get("Location"))
		if loc == "" {
			loc = "an unnamed location"
		} else if !strings.Contains(resp.Header.Get("Location"), "://") {
			loc = "a path on the same host" // relative; not quoted, it may carry tokens
		}
		out.Message += ", redirecting to " + loc + " (redirects are not followed)"
		out.RecoveryHint = "the receiver redirects to " + loc + "; update the webhook URL to the final address, then replay"
	default:
		out.Class = channel.Permanent
		out.RecoveryHint = hint4xx(code)
	}
	return out
}
