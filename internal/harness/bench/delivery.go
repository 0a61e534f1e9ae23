package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
)

// What River's worker does with a job, as the report names it.
const (
	// riverWorkerHTTP: the job is the delivery herald makes, through the
	// same driver (the same request, signing and connection pool) to the
	// same loopback sink.
	riverWorkerHTTP = "http"
	// riverWorkerNoop: the job calls the bench channel in memory, as
	// herald's in-process engine does; nothing goes over the network.
	riverWorkerNoop = "noop"
)

// httpDelivery reports whether herald delivers over HTTP to the loopback
// sink in this configuration: through the provider (-provider,
// -receipts), or as serve processes with the webhook driver. River's
// worker then makes the same requests (riverWorkerHTTP).
func (c *Config) httpDelivery() bool {
	return c.Provider || ((c.Processes > 1 || c.Serve) && !c.ServeDiscard)
}

// riverWorkerMode names what River's worker does in this configuration.
func (c *Config) riverWorkerMode() string {
	if c.httpDelivery() {
		return riverWorkerHTTP
	}
	return riverWorkerNoop
}

// newWebhookDeliverer returns the webhook driver as the bench's serve
// processes build it (startServeProcesses' environment: the one secret,
// private addresses allowed, the channel's concurrency, every other
// setting serve's default), for River's worker.
func newWebhookDeliverer(concurrency int) (channel.Deliverer, error) {
	return webhook.New(webhook.Config{Secrets: []string{webhookSecret}, AllowPrivate: true, Concurrency: concurrency})
}

// newProviderDeliverer returns sms/bench's sms-http driver as herald's
// engine builds it from the provider file (the settings, credential, timeout
// and name of the provider at url), for River's worker.
func newProviderDeliverer(url string) (channel.Deliverer, error) {
	f, err := providerFile(url, false)
	if err != nil {
		return nil, err
	}
	p := f.Providers[0]
	cfg, err := p.SMSHTTP.Config(benchGetenv)
	if err != nil {
		return nil, fmt.Errorf("the bench's provider: %w", err)
	}
	cfg.Timeout, cfg.Provider, cfg.Concurrency = p.Timeout, p.Name, p.Concurrency
	return sms.New(cfg)
}

// closeDeliverer releases d's idle connections, if it holds any.
func closeDeliverer(d channel.Deliverer) {
	if c, ok := d.(io.Closer); ok {
		_ = c.Close()
	}
}

// webhookKeys are the key bytes of webhookSecret, which the sink checks
// every webhook's signature with.
var webhookKeys = func() [][]byte {
	k, err := webhook.ParseSecret(webhookSecret)
	if err != nil {
		panic(err)
	}
	return [][]byte{k}
}()

// checkWebhook returns why r (with its body) is not a webhook as herald's
// driver sends one for a bench route, or nil: POST to a route's path under
// /hook/, JSON, herald's user agent, a valid Standard Webhooks signature
// with the bench's secret, and a body of the notification's type, its
// accept time and the bench's content as data.
func checkWebhook(r *http.Request, body []byte) error {
	switch {
	case r.Method != http.MethodPost:
		return fmt.Errorf("method %s, want POST", r.Method)
	case !strings.HasPrefix(r.URL.Path, "/hook/"):
		return fmt.Errorf("path %q, want /hook/<route>", r.URL.Path)
	case r.Header.Get("Content-Type") != "application/json":
		return fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	case r.Header.Get("User-Agent") != webhook.DefaultUserAgent:
		return fmt.Errorf("user agent %q", r.Header.Get("User-Agent"))
	}
	id, sig := r.Header.Get(webhook.HeaderID), r.Header.Get(webhook.HeaderSignature)
	ts, err := strconv.ParseInt(r.Header.Get(webhook.HeaderTimestamp), 10, 64)
	if id == "" || err != nil {
		return errors.New("no webhook-id or webhook-timestamp")
	}
	if !slices.Contains(strings.Fields(sig), webhook.Sign(webhookKeys, id, ts, body)) {
		return errors.New("webhook-signature does not verify")
	}
	var p struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	var data struct {
		Pad *string `json:"pad"`
	}
	if p.Type != benchType || p.Timestamp.IsZero() || json.Unmarshal(p.Data, &data) != nil || data.Pad == nil {
		return errors.New("body is not {type, timestamp, data} with the bench's content")
	}
	return nil
}

// checkSMS returns why r (with its body) is not a send request as the
// sms-http driver makes one for sms/bench, or nil: POST to /sms, JSON, the
// provider's API key as a bearer token, an idempotency key, and a body
// with a bench number, the provider's sender and a text.
func checkSMS(r *http.Request, body []byte) error {
	switch {
	case r.Method != http.MethodPost:
		return fmt.Errorf("method %s, want POST", r.Method)
	case r.URL.Path != "/sms":
		return fmt.Errorf("path %q, want /sms", r.URL.Path)
	case r.Header.Get("Content-Type") != "application/json":
		return fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	case r.Header.Get("Authorization") != "Bearer "+benchSMSKey:
		return errors.New("no or wrong API key")
	case r.Header.Get("Idempotency-Key") == "":
		return errors.New("no Idempotency-Key")
	}
	var m struct{ To, From, Body string }
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if !strings.HasPrefix(m.To, smsNumber(0)[:7]) || m.From != "HERALD" || m.Body == "" {
		return errors.New("body is not {to, from, body} for a bench number")
	}
	return nil
}
