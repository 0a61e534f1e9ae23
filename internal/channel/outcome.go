package channel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Discard is a Deliverer that accepts every message and does nothing with
// it: for benchmarks that measure the engine rather than a channel. Its
// outcome is always Delivered with classification "discarded".
var Discard Deliverer = DelivererFunc(func(context.Context, *Message) Outcome {
	return Outcome{Class: Delivered, Classification: "discarded"}
})

// Classifications shared by every channel.
const (
	// ClassNoAddress: the route has no address for the channel (Skip).
	ClassNoAddress = "no_address"
	// ClassBadContent: the content is not what the channel expects
	// (Permanent).
	ClassBadContent = "bad_content"
	// ClassInvalidDestination: the address is malformed or refused as such
	// (Permanent).
	ClassInvalidDestination = "invalid_destination"
	// ClassTimeout: the attempt ran out of time (Transient).
	ClassTimeout = "timeout"
	// ClassCanceled: the attempt's context was canceled, typically at
	// shutdown (Transient).
	ClassCanceled = "canceled"
	// ClassConnectionRefused: nothing listens at the destination
	// (Transient).
	ClassConnectionRefused = "connection_refused"
	// ClassConnectionReset: the peer closed or reset the connection
	// mid-exchange (Transient).
	ClassConnectionReset = "connection_reset"
	// ClassDNS: the destination's name did not resolve (Transient: DNS
	// failures are often temporary).
	ClassDNS = "dns_error"
	// ClassTLSCertificate: the peer's TLS certificate was not trusted
	// (Transient here; a channel whose destination belongs to the
	// recipient may make it Permanent).
	ClassTLSCertificate = "tls_certificate"
	// ClassTLS: the TLS handshake failed for another reason (Transient).
	ClassTLS = "tls_error"
	// ClassNetwork: any other network failure (Transient).
	ClassNetwork = "network_error"
)

// NoAddress returns the Skip outcome for a route without an address.
func NoAddress(channel string) Outcome {
	return Outcome{
		Class:          Skip,
		Classification: ClassNoAddress,
		Message:        "the route has no " + channel + " address",
	}
}

// BadContent returns the Permanent outcome for content the channel cannot
// use. err, if it is a JSON decoding error, is described by its kind and
// position only, so no part of the payload reaches the message.
func BadContent(channel string, err error) Outcome {
	return Outcome{
		Class:          Permanent,
		Classification: ClassBadContent,
		Message:        channel + " content is unusable: " + describeContentError(err),
		RecoveryHint:   "fix the producer's content for the " + channel + " channel and submit a new intent",
	}
}

// describeContentError says what is wrong with content without quoting it.
func describeContentError(err error) string {
	if err == nil {
		return "empty"
	}
	if e, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("not valid JSON (syntax error at byte %d)", e.Offset)
	}
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if e.Field != "" {
			return fmt.Sprintf("field %q must be a JSON %s", e.Field, jsonKind(e.Type.Kind().String()))
		}
		return "must be a JSON object"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated JSON"
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	default:
		return "number"
	}
}

// NetworkOutcome classifies err, a failure to talk to dest at all (dial,
// TLS, read or write), as Transient with a stable classification: timeout,
// canceled, connection_refused, connection_reset, dns_error,
// tls_certificate, tls_error or network_error. ctx is the delivery's
// context: when it is done, its reason wins over whatever the broken
// connection reported. dest is masked before it reaches the message, and
// err's own text, which often quotes the full URL, is never used.
func NetworkOutcome(ctx context.Context, err error, dest string) Outcome {
	class, what := classifyNetError(ctx, err)
	msg := what
	if dest != "" {
		msg += " (" + MaskAddress(dest) + ")"
	}
	return Outcome{Class: Transient, Classification: class, Message: msg}
}

func classifyNetError(ctx context.Context, err error) (class, what string) {
	if ctx != nil && ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ClassTimeout, "the attempt timed out"
		}
		return ClassCanceled, "the attempt was canceled"
	}
	var (
		netErr   net.Error
		dnsErr   *net.DNSError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ClassTimeout, "the attempt timed out"
	case errors.Is(err, context.Canceled):
		return ClassCanceled, "the attempt was canceled"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return ClassDNS, "the destination's host name does not resolve"
		}
		return ClassDNS, "the destination's host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassConnectionRefused, "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return ClassConnectionReset, "the connection was closed or reset by the peer"
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return ClassTLSCertificate, "the peer's TLS certificate is not trusted"
	case errors.As(err, &record), errors.As(err, &alert):
		return ClassTLS, "the TLS handshake failed"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ClassNetwork, "the destination is unreachable"
	default:
		return ClassNetwork, "network error"
	}
}

// ParseRetryAfter returns how long an HTTP Retry-After value (delay in
// seconds, or an HTTP-date) asks to wait, counted from now. It returns 0 for
// an empty, malformed or past value, so the caller's own backoff applies.
func ParseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// A year is already absurd; clamping keeps the multiplication from
		// overflowing.
		return time.Duration(min(secs, 365*24*3600)) * time.Second
	}
	if t, err := http.ParseTime(value); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
