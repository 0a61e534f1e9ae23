// Package webhook delivers notifications as HTTP POSTs of JSON, signed per
// the Standard Webhooks specification (https://www.standardwebhooks.com):
// a webhook-id stable across retries, a webhook-timestamp, and one
// "v1,<base64 HMAC-SHA256>" signature per configured secret in
// webhook-signature, so secrets can be rotated without a gap.
//
// Destinations belong to recipients, not to whoever runs herald, so every
// connection passes a dial-time guard: unless AllowPrivate is set or the
// host is allow-listed, an address that resolves to a loopback, private,
// link-local (including the 169.254.169.254 metadata service), unspecified,
// multicast or otherwise reserved address is refused before a packet is
// sent. The check runs on the resolved address at connect time, so DNS
// rebinding cannot get around it.
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/channel"
)

// Header names from the Standard Webhooks specification.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret in the Standard Webhooks format: the
// rest of the secret is the base64 of the key bytes.
const SecretPrefix = "whsec_"

// ClassDestinationDenied is the classification of a delivery refused by
// the dial guard (Permanent).
const ClassDestinationDenied = "destination_denied"

// Defaults for the zero values of Config.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultUserAgent        = "herald-webhook/1"
	DefaultMaxResponseBytes = 64 << 10
)

// minSecretBytes is the shortest key accepted: the specification
// recommends 24 to 64 bytes.
const minSecretBytes = 16

// Config configures a webhook Deliverer.
type Config struct {
	// Timeout bounds one delivery attempt, from dial to the response's
	// status line, and is shortened by the caller's context deadline.
	// Default 10s.
	Timeout time.Duration
	// Secrets sign every request, each in the "whsec_<base64 key>" form.
	// Each produces one signature, all sent space-separated in one
	// webhook-signature header, so a receiver can move from an old secret
	// to a new one. At least one is required.
	Secrets []string
	// AllowPrivate lets webhooks reach loopback, private, link-local and
	// reserved addresses. Off by default: turn it on only where every
	// destination is trusted (development, tests).
	AllowPrivate bool
	// AllowHosts lists host names or IP literals exempt from the
	// private-address guard, e.g. an internal receiver.
	AllowHosts []string
	// DenyCIDRs lists further ranges never to connect to, whatever
	// AllowPrivate and AllowHosts say.
	DenyCIDRs []string
	// UserAgent is sent with every request. Default "herald-webhook/1".
	UserAgent string
	// MaxResponseBytes bounds how much of a response body is read (and
	// thrown away, so the connection can be reused). Default 64 KiB.
	MaxResponseBytes int64
	// Concurrency is the most deliveries the caller has in flight at once
	// (the dispatcher's concurrency for the channel); one destination
	// host keeps up to that many connections open between requests, so
	// that a burst to one receiver reuses its connections instead of
	// closing and dialling them again. 0: as many as were in flight at
	// once, within the pool's bound over all hosts.
	Concurrency int
	// Logger receives a debug record per attempt, with the destination
	// masked. Default: discard.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Timeout < 0 {
		return errors.New("Timeout must not be negative")
	}
	if c.MaxResponseBytes < 0 {
		return errors.New("MaxResponseBytes must not be negative")
	}
	if c.Concurrency < 0 || c.Concurrency > channel.MaxConcurrency {
		return fmt.Errorf("Concurrency must be 0 to %d", channel.MaxConcurrency)
	}
	if len(c.Secrets) == 0 {
		return errors.New("Secrets must hold at least one " + SecretPrefix + " secret")
	}
	return nil
}

// Deliverer delivers webhooks. It is safe for concurrent use.
type Deliverer struct {
	sender *Sender
	// macs holds a pool of HMAC-SHA256 hashes per secret, in Secrets'
	// order (see sign).
	macs   []*sync.Pool
	logger *slog.Logger
	now    func() time.Time
}

// New returns a webhook Deliverer, or an error naming the Config field
// that is wrong.
func New(cfg Config) (*Deliverer, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("webhook config: %w", err)
	}
	macs := make([]*sync.Pool, 0, len(cfg.Secrets))
	for i, s := range cfg.Secrets {
		k, err := ParseSecret(s)
		if err != nil {
			return nil, fmt.Errorf("webhook config: Secrets[%d]: %w", i, err)
		}
		macs = append(macs, &sync.Pool{New: func() any { return hmac.New(sha256.New, k) }})
	}
	sender, err := NewSender(SenderConfig{
		Timeout:          cfg.Timeout,
		AllowPrivate:     cfg.AllowPrivate,
		AllowHosts:       cfg.AllowHosts,
		DenyCIDRs:        cfg.DenyCIDRs,
		UserAgent:        cfg.UserAgent,
		MaxResponseBytes: cfg.MaxResponseBytes,
		Concurrency:      cfg.Concurrency,
	})
	if err != nil {
		return nil, fmt.Errorf("webhook config: %w", err)
	}
	return &Deliverer{
		sender: sender,
		macs:   macs,
		logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		now:    time.Now,
	}, nil
}

// ParseSecret returns the key bytes of a "whsec_<base64>" secret. It
// returns an error, which never quotes the secret, if the prefix is missing,
// the rest is not base64, or the key is shorter than 16 bytes.
func ParseSecret(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(secret), SecretPrefix)
	if !ok {
		return nil, errors.New("secret must start with " + SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, errors.New("secret must be " + SecretPrefix + " followed by standard base64")
	}
	if len(key) < minSecretBytes {
		return nil, fmt.Errorf("secret key must be at least %d bytes, got %d", minSecretBytes, len(key))
	}
	return key, nil
}

// Close releases idle connections. The Deliverer stays usable.
func (d *Deliverer) Close() error { return d.sender.Close() }

// MessageID returns the webhook-id of a route: the same for every attempt
// of the route, so receivers can drop duplicates, and different for every
// route.
func MessageID(notificationID, routeID string) string {
	sum := sha256.Sum256([]byte(notificationID + "\x00" + routeID))
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// Sign returns the webhook-signature value for one request: a
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" entry per key,
// space-separated.
func Sign(keys [][]byte, id string, timestamp int64, body []byte) string {
	b := make([]byte, 0, len(keys)*signatureLen)
	for _, k := range keys {
		b = appendSignature(b, hmac.New(sha256.New, k), id, timestamp, body)
	}
	return string(b)
}

// signatureLen is the length of one "v1,<base64 of 32 bytes>" entry and
// the space before the next.
const signatureLen = len("v1,") + 44 + 1

// appendSignature appends mac's "v1,<base64>" entry for one request to b,
// after a space unless b is empty. mac is an HMAC-SHA256 of the key, in any
// state: it is reset first.
func appendSignature(b []byte, mac hash.Hash, id string, timestamp int64, body []byte) []byte {
	mac.Reset()
	// One scratch buffer for "id.timestamp." and then the sum.
	scratch := make([]byte, 0, max(len(id)+22, sha256.Size))
	scratch = append(append(scratch, id...), '.')
	scratch = append(strconv.AppendInt(scratch, timestamp, 10), '.')
	mac.Write(scratch)
	mac.Write(body)
	if len(b) > 0 {
		b = append(b, ' ')
	}
	b = append(b, "v1,"...)
	return base64.StdEncoding.AppendEncode(b, mac.Sum(scratch[:0]))
}

// sign is Sign with d's keys, each HMAC taken from a pool of its own: a
// reset HMAC starts from its key's saved state instead of hashing the
// padded key twice again, as a new one does.
func (d *Deliverer) sign(id string, timestamp int64, body []byte) string {
	b := make([]byte, 0, len(d.macs)*signatureLen)
	for _, p := range d.macs {
		mac := p.Get().(hash.Hash)
		b = appendSignature(b, mac, id, timestamp, body)
		p.Put(mac)
	}
	return string(b)
}

// The Standard Webhooks headers in net/http's canonical form, which the
// request's header map is keyed by (Header.Set would canonicalize them per
// request).
var (
	canonicalID        = http.CanonicalHeaderKey(HeaderID)
	canonicalTimestamp = http.CanonicalHeaderKey(HeaderTimestamp)
	canonicalSignature = http.CanonicalHeaderKey(HeaderSignature)
)

// Deliver POSTs msg to msg.Address and classifies the result. It never
// panics and never returns an outcome quoting the full URL, a secret or the
// payload.
func (d *Deliverer) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	return channel.Attempt(ctx, d.logger, channel.Webhook, msg, d.deliver)
}

func (d *Deliverer) deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	target, out, ok := ParseTarget(msg.Address)
	if !ok {
		return out
	}
	body, err := d.body(msg)
	if err != nil {
		return channel.BadContent(channel.Webhook, err)
	}
	id := MessageID(msg.NotificationID, msg.RouteID)
	ts := d.now().Unix()
	h := http.Header{
		canonicalID:        {id},
		canonicalTimestamp: {strconv.FormatInt(ts, 10)},
		canonicalSignature: {d.sign(id, ts, body)},
	}
	return d.sender.Post(ctx, target, h, body)
}

// bodyFrame is the length of a body less its type and data.
const bodyFrame = len(`{"type":"","timestamp":"2006-01-02T15:04:05Z","data":}`)

// body returns the request body, {"type":…,"timestamp":…,"data":…} with
// the content as data (null when empty), byte for byte what json.Marshal
// makes of it (data compacted, with <, >, &, U+2028 and U+2029 escaped as
// \u003c and so on), appended by hand: json.Marshal's reflection and its
// second pass over the content (after json.Valid's) were a fifth of a
// serve process's request building. It returns json.Unmarshal's error
// for content that is not JSON.
func (d *Deliverer) body(msg *channel.Message) ([]byte, error) {
	data := msg.Content
	if len(bytes.TrimSpace(data)) == 0 {
		data = json.RawMessage("null")
	}
	at := msg.AcceptedAt
	if at.IsZero() {
		at = d.now()
	}
	buf := bytes.NewBuffer(make([]byte, 0, bodyFrame+len(msg.NotificationType)+len(data)+2))
	buf.WriteString(`{"type":`)
	buf.Write(appendString(buf.AvailableBuffer(), msg.NotificationType))
	buf.WriteString(`,"timestamp":"`)
	buf.Write(at.UTC().AppendFormat(buf.AvailableBuffer(), time.RFC3339))
	buf.WriteString(`","data":`)
	start := buf.Len()
	if err := json.Compact(buf, data); err != nil {
		if uerr := json.Unmarshal(data, new(any)); uerr != nil {
			return nil, uerr
		}
		return nil, err
	}
	b := buf.Bytes()
	if htmlUnsafe(b[start:]) {
		// Rare in content: only then a second pass, as json.Marshal escapes.
		var esc bytes.Buffer
		json.HTMLEscape(&esc, b[start:])
		b = append(b[:start], esc.Bytes()...)
	}
	return append(b, '}'), nil
}

// htmlUnsafe reports whether b holds a byte json.Marshal escapes in a
// compact JSON value: <, > or &, or U+2028 or U+2029 (which start with the
// byte 0xE2).
func htmlUnsafe(b []byte) bool {
	return bytes.ContainsAny(b, "<>&") || bytes.IndexByte(b, 0xE2) >= 0
}

// appendString appends s to b as json.Marshal encodes a string: quoted,
// with HTML characters, control characters and invalid UTF-8 escaped.
// Notification types are plain ASCII names, which are copied between
// quotes; anything else goes through json.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// hint4xx says what an operator can do about a 4xx answer.
func hint4xx(code int) string {
	switch code {
	case http.StatusGone:
		return "the receiver says this webhook is gone for good: remove or replace the recipient's webhook URL; do not replay to it"
	case http.StatusNotFound:
		return "the URL does not exist on the receiver: check the recipient's webhook URL, then replay"
	case http.StatusUnauthorized, http.StatusForbidden:
		return "the receiver refused the request: make sure it verifies signatures with a current secret and allows herald, then replay"
	case http.StatusMethodNotAllowed:
		return "the URL does not accept POST: check the recipient's webhook URL, then replay"
	case http.StatusRequestEntityTooLarge:
		return "the payload is larger than the receiver accepts: shrink the content or raise the receiver's limit, then replay"
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType:
		return "the receiver rejected the payload: check the content with the receiver's owner, then replay or resubmit"
	default:
		return fmt.Sprintf("the receiver rejected the request with HTTP %d: fix the endpoint or the content, then replay", code)
	}
}
