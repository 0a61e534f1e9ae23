// Package sms delivers notifications through an SMS provider's HTTP API:
// one POST per message, JSON or form-encoded, authenticated by an API key
// in a header. Field names are configurable so most providers fit without
// code; the destination must be an E.164 number.
//
// Provider answers map onto outcomes so that a problem with herald's own
// configuration never dead-letters routes: a rejected API key (401/403),
// an unknown endpoint (404/405) or a redirect is Transient and says what to
// fix, and the retries succeed once it is fixed. Only what is about the
// message itself (an invalid number, a body the provider refuses) is
// Permanent.
//
// The body is sent as it is: choosing GSM-7 or UCS-2 and counting segments
// is the provider's job (and intake's, for estimates).
package sms

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/e164"
)

// Formats of the request body.
const (
	FormatJSON = "json"
	FormatForm = "form"
)

// Classifications specific to the SMS channel.
const (
	// ClassProviderAuth: the provider refused the API key (Transient).
	ClassProviderAuth = "provider_auth"
	// ClassProviderThrottled: the provider asked herald to slow down
	// (Transient, with RetryAfter when the provider said how long).
	ClassProviderThrottled = "provider_throttled"
	// ClassProviderRejected: the provider refused this message for a
	// reason other than its destination (Permanent).
	ClassProviderRejected = "provider_rejected"
	// ClassProviderConfig: the URL or format does not match the provider's
	// API (Transient).
	ClassProviderConfig = "provider_config"
)

// Defaults for the zero values of Config.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultAuthHeader       = "Authorization"
	DefaultToField          = "to"
	DefaultFromField        = "from"
	DefaultBodyField        = "body"
	DefaultResponseIDField  = "id"
	defaultMaxResponseBytes = 64 << 10
)

// Config configures an SMS Deliverer.
type Config struct {
	// URL is the provider's send endpoint. Required, http or https.
	URL string
	// APIKey authenticates every request. Required.
	APIKey string
	// AuthHeader carries the key: "Authorization" (default) sends
	// "Bearer <APIKey>", any other header (e.g. "X-API-Key") the key as it
	// is.
	AuthHeader string
	// From is the sender id or number, sent in FromField; empty leaves the
	// field out (the provider's default sender). A message's own sender
	// (Content.From, the intent's from_sender) takes its place.
	From string
	// Format is "json" (default) or "form" (application/x-www-form-urlencoded).
	Format string
	// ToField, FromField and BodyField name the request fields; defaults
	// "to", "from", "body".
	ToField   string
	FromField string
	BodyField string
	// ResponseIDField names the top-level field of the provider's JSON
	// answer that holds its message id; default "id".
	ResponseIDField string
	// FlashField names the request field that asks the provider for a
	// flash SMS, for a provider that can send one; empty: it cannot, and a
	// flash SMS routed to it is a dead letter (FlashUnsupported), never a
	// normal SMS. FlashValue is the field's value as JSON (default true);
	// a form request sends a JSON string unquoted, any other value as
	// written.
	FlashField string
	FlashValue string
	// Provider names the provider, for messages; "" for a channel's own
	// driver.
	Provider string
	// Timeout bounds one request, and is shortened by the caller's context
	// deadline. Default 10s.
	Timeout time.Duration
	// Concurrency is the most requests the caller has in flight at once
	// (the dispatcher's concurrency for the channel or provider); the
	// default client keeps that many connections open between them, so
	// that a burst's connections are reused by the next instead of closed
	// and dialled again. 0: as many as were ever in flight at once.
	Concurrency int
	// HTTPClient, if set, sends the requests (its Timeout is left as it
	// is); default a client with its own connection pool.
	HTTPClient *http.Client
	// Logger receives a debug record per attempt, with the number masked.
	// Default: discard.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.URL == "" {
		return errors.New("URL is required")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("URL must be an absolute http(s) URL")
	}
	if c.APIKey == "" {
		return errors.New("APIKey is required")
	}
	if strings.ContainsAny(c.APIKey, "\r\n") {
		return errors.New("APIKey must not contain line breaks")
	}
	if c.Format != "" && c.Format != FormatJSON && c.Format != FormatForm {
		return fmt.Errorf("Format must be %q or %q, got %q", FormatJSON, FormatForm, c.Format)
	}
	if c.AuthHeader != "" && strings.ContainsAny(c.AuthHeader, " :\r\n") {
		return errors.New("AuthHeader must be a header name")
	}
	if c.Timeout < 0 {
		return errors.New("Timeout must not be negative")
	}
	if c.Concurrency < 0 || c.Concurrency > channel.MaxConcurrency {
		return fmt.Errorf("Concurrency must be 0 to %d", channel.MaxConcurrency)
	}
	if c.FlashValue != "" && !json.Valid([]byte(c.FlashValue)) {
		return errors.New("FlashValue must be a JSON value, e.g. true, 1 or \"0\"")
	}
	return nil
}

// Deliverer sends SMS through one provider. It is safe for concurrent use.
type Deliverer struct {
	url        string
	authHeader string
	authValue  string
	from       string
	format     string
	toField    string
	fromField  string
	bodyField  string
	idField    string
	flashField string
	flashJSON  json.RawMessage
	flashForm  string
	provider   string
	timeout    time.Duration
	client     *http.Client
	logger     *slog.Logger
	now        func() time.Time
}

// New returns an SMS Deliverer, or an error naming the Config field that is
// wrong (never quoting the APIKey).
func New(cfg Config) (*Deliverer, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sms config: %w", err)
	}
	header := http.CanonicalHeaderKey(cmp.Or(cfg.AuthHeader, DefaultAuthHeader))
	value := cfg.APIKey
	if header == DefaultAuthHeader {
		value = "Bearer " + cfg.APIKey
	}
	client := cfg.HTTPClient
	if client == nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		// Every request goes to the one provider host: the idle pool is
		// the connections in flight at most, each kept until
		// IdleConnTimeout. A smaller pool closes what a burst opened,
		// and the next burst dials again.
		transport.MaxIdleConns = cmp.Or(cfg.Concurrency, channel.MaxConcurrency)
		transport.MaxIdleConnsPerHost = transport.MaxIdleConns
		client = &http.Client{Transport: transport}
	}
	flashJSON := json.RawMessage(cmp.Or(cfg.FlashValue, "true"))
	flashForm := string(flashJSON)
	var str string
	if json.Unmarshal(flashJSON, &str) == nil {
		flashForm = str
	}
	// A provider that redirects has moved; re-posting elsewhere with the
	// key attached is not something to do silently.
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Deliverer{
		url:        cfg.URL,
		authHeader: header,
		authValue:  value,
		from:       cfg.From,
		format:     cmp.Or(cfg.Format, FormatJSON),
		toField:    cmp.Or(cfg.ToField, DefaultToField),
		fromField:  cmp.Or(cfg.FromField, DefaultFromField),
		bodyField:  cmp.Or(cfg.BodyField, DefaultBodyField),
		idField:    cmp.Or(cfg.ResponseIDField, DefaultResponseIDField),
		flashField: cfg.FlashField,
		flashJSON:  flashJSON,
		flashForm:  flashForm,
		provider:   cfg.Provider,
		timeout:    cmp.Or(cfg.Timeout, DefaultTimeout),
		client:     &c,
		logger:     cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		now:        time.Now,
	}, nil
}

// Close releases idle connections. The Deliverer stays usable.
func (d *Deliverer) Close() error {
	d.client.CloseIdleConnections()
	return nil
}

// Content is the SMS channel's content, as intake stores it: the body,
// and for an intent that gave them, its sender and flash.
type Content struct {
	// Body is the text.
	Body string `json:"body"`
	// From is the intent's sender (its from_sender), approved for its
	// producer at intake; it overrides the provider's default sender.
	From string `json:"from,omitempty"`
	// Flash asks for a flash SMS (message_type FLASH_SMS, message class 0).
	Flash bool `json:"flash,omitempty"`
}

// Deliver sends msg to the provider and classifies the answer. It never
// panics and never returns an outcome quoting the full number, the API key
// or the body.
func (d *Deliverer) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	return channel.Attempt(ctx, d.logger, channel.SMS, msg, d.deliver)
}

// Text returns msg's SMS body, or, with ok false, the permanent outcome
// of a message no SMS driver can send: a destination that is not an E.164
// number, or content without a body. Every SMS driver (this one, smpp)
// checks a message with it first.
func Text(msg *channel.Message) (body string, refused channel.Outcome, ok bool) {
	c, refused, ok := Decode(msg)
	return c.Body, refused, ok
}

// Decode is Text returning the whole content: the body, the sender and
// flash. Every SMS driver sends From instead of its default sender, and
// sends a Flash message as a flash SMS or not at all (FlashUnsupported).
func Decode(msg *channel.Message) (c Content, refused channel.Outcome, ok bool) {
	if !IsE164(msg.Address) {
		return c, channel.Outcome{
			Class:          channel.Permanent,
			Classification: channel.ClassInvalidDestination,
			Message:        "destination is not a valid E.164 number (" + channel.MaskAddress(msg.Address) + ")",
			RecoveryHint:   "store the recipient's number in E.164 form, e.g. +14155550100, then replay the dead letter",
		}, false
	}
	if len(msg.Content) == 0 {
		return c, channel.BadContent(channel.SMS, nil), false
	}
	if err := json.Unmarshal(msg.Content, &c); err != nil {
		return c, channel.BadContent(channel.SMS, err), false
	}
	if c.Body == "" {
		return c, channel.BadContent(channel.SMS, errors.New(`"body" is empty`)), false
	}
	return c, channel.Outcome{}, true
}

// ClassFlashUnsupported: a flash SMS routed to a provider that cannot
// send one (Permanent).
const ClassFlashUnsupported = "flash_unsupported"

// FlashUnsupported is the outcome of a flash SMS routed to provider
// (named, or "" for the channel's own driver), which cannot send one:
// Permanent, so that it is never sent as a normal SMS that the handset
// would store, and kept as a dead letter an operator replays once a
// provider that sends flash takes it.
func FlashUnsupported(provider string) channel.Outcome {
	name := "the provider"
	if provider != "" {
		name = "provider " + provider
	}
	return channel.Outcome{
		Class: channel.Permanent, Classification: ClassFlashUnsupported, Unsent: true,
		Message: name + " cannot send a flash SMS (message_type FLASH_SMS); it was not sent as a normal SMS",
		RecoveryHint: "configure flash_field on the provider's sms_http settings if it supports flash, or route " +
			"this producer's SMS to one that does (an smpp provider always can), then replay the dead letter",
	}
}

func (d *Deliverer) deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	c, refused, ok := Decode(msg)
	if !ok {
		return refused
	}
	if c.Flash && d.flashField == "" {
		return FlashUnsupported(d.provider)
	}

	reqBody, contentType, err := d.encode(msg.Address, c)
	if err != nil {
		return channel.BadContent(channel.SMS, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(reqBody))
	if err != nil {
		return channel.NetworkOutcome(ctx, err, d.url)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	req.Header.Set(d.authHeader, d.authValue)
	// Providers that support idempotency keys can drop a retry's duplicate.
	req.Header.Set("Idempotency-Key", msg.NotificationID+":"+msg.RouteID)

	resp, err := d.client.Do(req)
	if err != nil {
		return channel.NetworkOutcome(ctx, err, d.url)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, defaultMaxResponseBytes))
	if err != nil && resp.StatusCode/100 == 2 {
		// Accepted, but the id was lost on the way: still accepted.
		body = nil
	}
	return d.classify(resp, body)
}

// encode renders the request body.
func (d *Deliverer) encode(to string, c Content) ([]byte, string, error) {
	from := cmp.Or(c.From, d.from)
	if d.format == FormatForm {
		v := url.Values{}
		v.Set(d.toField, to)
		if from != "" {
			v.Set(d.fromField, from)
		}
		v.Set(d.bodyField, c.Body)
		if c.Flash {
			v.Set(d.flashField, d.flashForm)
		}
		return []byte(v.Encode()), "application/x-www-form-urlencoded", nil
	}
	m := map[string]any{d.toField: to, d.bodyField: c.Body}
	if from != "" {
		m[d.fromField] = from
	}
	if c.Flash {
		m[d.flashField] = d.flashJSON
	}
	b, err := json.Marshal(m)
	return b, "application/json", err
}

// IsE164 reports whether s is a valid phone number written in E.164 form:
// a '+', the country code and the national number, digits only.
func IsE164(s string) bool { return e164.Valid(s) }

// classify maps the provider's answer onto an outcome.
func (d *Deliverer) classify(resp *http.Response, body []byte) channel.Outcome {
	code := resp.StatusCode
	pr := parseProviderResponse(body, d.idField)
	retryAfter := channel.ParseRetryAfter(resp.Header.Get("Retry-After"), d.now())
	if retryAfter == 0 && pr.retryAfter > 0 {
		retryAfter = pr.retryAfter
	}
	said := ""
	if pr.detail != "" {
		said = ": " + channel.Redact(pr.detail, 200)
	}
	out := channel.Outcome{
		Classification: "http_" + strconv.Itoa(code),
		Message:        fmt.Sprintf("provider answered HTTP %d%s", code, said),
	}

	switch {
	case pr.throttled && (code/100 == 2 || code/100 == 4):
		out.Class = channel.Transient
		out.Classification = ClassProviderThrottled
		out.RetryAfter = retryAfter
		out.Throttled = true
	case code/100 == 2:
		out.Class = channel.Delivered
		out.ProviderMessageID = pr.id
		out.Message = "accepted by the provider"
		if pr.id == "" {
			out.Message += " (no message id in field " + strconv.Quote(d.idField) + ")"
		}
	case code == http.StatusTooManyRequests:
		out.Class = channel.Transient
		out.Classification = ClassProviderThrottled
		out.RetryAfter = retryAfter
		out.Throttled = true
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		out.Class = channel.Transient
		out.Classification = ClassProviderAuth
		out.Message = fmt.Sprintf("the SMS provider rejected herald's credentials (HTTP %d)%s", code, said)
		out.RecoveryHint = "the SMS credentials are wrong or lack permission: fix the sms channel's APIKey/AuthHeader; queued messages retry by themselves"
	case code == http.StatusRequestTimeout || code >= 500:
		out.Class = channel.Transient
		out.RetryAfter = retryAfter
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed || code == http.StatusUnsupportedMediaType || code/100 == 3:
		out.Class = channel.Transient
		out.Classification = ClassProviderConfig
		out.RecoveryHint = "the provider does not accept this request at this URL: check the sms channel's URL and Format; queued messages retry by themselves"
	case pr.invalidDestination:
		out.Class = channel.Permanent
		out.Classification = channel.ClassInvalidDestination
		out.RecoveryHint = "the provider says the number cannot receive SMS: correct the recipient's number, then replay"
	default:
		out.Class = channel.Permanent
		out.Classification = ClassProviderRejected
		out.RecoveryHint = "the provider refused this message (see its reason in the message): fix the content or the sender, then replay or resubmit"
	}
	return out
}

// providerResponse is what could be understood of a provider's JSON.
type providerResponse struct {
	id                 string
	detail             string // the provider's own code and message, unredacted
	throttled          bool
	invalidDestination bool
	retryAfter         time.Duration
}

// detailFields are the usual names providers give their status and error
// fields, top level or inside an "error" object.
var detailFields = []string{"status", "code", "error_code", "error", "type", "message", "error_message", "detail", "description", "reason"}

// parseProviderResponse reads a provider's JSON answer loosely: the id
// from idField, and whether the status or error fields say the request was
// throttled or the destination is invalid. Anything unparsable yields an
// empty result.
func parseProviderResponse(body []byte, idField string) providerResponse {
	var pr providerResponse
	var top map[string]any
	if json.Unmarshal(body, &top) != nil {
		return pr
	}
	switch v := top[idField].(type) {
	case string:
		pr.id = v
	case float64:
		pr.id = strconv.FormatFloat(v, 'f', -1, 64)
	}
	var parts []string
	collect := func(m map[string]any) {
		for _, f := range detailFields {
			switch v := m[f].(type) {
			case string:
				if v != "" {
					parts = append(parts, v)
				}
			case float64:
				parts = append(parts, strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
	}
	collect(top)
	if e, ok := top["error"].(map[string]any); ok {
		collect(e)
	}
	if errs, ok := top["errors"].([]any); ok && len(errs) > 0 {
		if e, ok := errs[0].(map[string]any); ok {
			collect(e)
		}
	}
	pr.detail = strings.Join(parts, " ")
	lower := strings.ToLower(pr.detail)
	pr.throttled = containsAny(lower, "throttl", "rate limit", "rate_limit", "ratelimit", "too many requests", "too_many_requests")
	pr.invalidDestination = strings.Contains(lower, "invalid_destination") ||
		containsAny(lower, "invalid", "unknown", "unreachable", "not a valid", "not valid") &&
			containsAny(lower, "number", "destination", "recipient", "phone", "msisdn")
	if secs, ok := top["retry_after"].(float64); ok && secs > 0 {
		pr.retryAfter = time.Duration(min(secs, 86400) * float64(time.Second))
	}
	return pr
}

// containsAny reports whether s contains any of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
