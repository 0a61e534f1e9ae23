package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/harness/oteltest"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/receipt"
)

// TestTracing_SpansReadBackOverOTLP follows one
// SMS notification with a callback_url through a real engine exporting to
// a loopback OTLP/HTTP receiver: the producer's span, then the claim, the
// attempt (a child of the claim, linked to the producer's span), the
// completion (linked to the attempt), the receipt match, and the callbacks
// (linked to the producer's span, and sent with the attempt's traceparent).
func TestTracing_SpansReadBackOverOTLP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recv := oteltest.NewReceiver(t)
	tp := recv.Provider(t)

	var status atomic.Int32
	status.Store(http.StatusOK)
	var got atomic.Int64
	srv := smsProviderServer(t, &status, &got)
	var traceparents atomic.Value
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparents.Store(r.Header.Get("traceparent"))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(cb.Close)
	b.applyRouting(t, fmt.Sprintf(`
providers:
  - name: sms/acme
    driver: sms-http
    sms_http: {url: %q, api_key: {env: ACME_KEY}}
    receipts: {token: {env: ACME_RECEIPTS}}
rules:
  sms:
    - name: all
      providers: [sms/acme]
`, srv.URL+"/send"))
	_, err := b.pool.Exec(context.Background(),
		`SELECT * FROM herald.callback_subscription_set($1, bearer_token => 'b3arer-0123456789abcdef', for_producer => 'shop')`, cb.URL+"/status")
	require.NoError(t, err)
	e, err := New(b.pool, &Config{
		Logger:       discardLogger(),
		GetenvFunc:   env(map[string]string{"ACME_KEY": "k", "ACME_RECEIPTS": "r3ceipts"}),
		ReceiptsAddr: "127.0.0.1:0",
		Dispatch: dispatch.Config{
			Channels:     map[string]dispatch.ChannelConfig{"webhook": {Deliverer: &closingDeliverer{}}},
			PollInterval: 50 * time.Millisecond,
		},
		Callbacks:      Callbacks{AllowPrivate: true},
		Receipts:       receipt.MatcherConfig{PollInterval: 50 * time.Millisecond},
		TracerProvider: tp,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	// The producer: a request span of its own, inside which it submits.
	pctx, producer := tp.Tracer("producer").Start(ctx, "producer.request")
	in := &intake.Intent{
		NotificationType: "otp.sent", Producer: "shop", IdempotencyKey: "t1",
		Channels: []string{"sms"}, Audience: intake.Audience{SMS: []string{"+254712345678"}},
		Content:     heraldtype.Content{SMS: &heraldtype.SMSContent{Body: "Your code is 1234"}},
		CallbackURL: cb.URL + "/status?token=s3cret",
	}
	vs, errs := intake.ValidateMany([]*intake.Intent{in}, intake.Limits{}.WithDefaults(), time.Now())
	require.NoError(t, errs[0])
	outs, err := accept.Accept(pctx, b.pool, vs, accept.Params{})
	require.NoError(t, err)
	producer.End()
	nid := outs[0].NotificationID

	var msgID string
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(ctx, `SELECT provider_message_id FROM herald.routes
			WHERE notification_id = $1 AND channel = 'sms' AND status = 'published'`, nid).Scan(&msgID) == nil
	}, 15*time.Second, 20*time.Millisecond, "the sms route was published")
	resp, err := http.Post(fmt.Sprintf("http://%s/receipts/sms/acme?token=r3ceipts", e.ReceiptsAddr()),
		"application/json", strings.NewReader(fmt.Sprintf(`{"id":%q,"status":"DELIVRD"}`, msgID)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var spans []oteltest.Span
	byName := func(name string) []oteltest.Span {
		var out []oteltest.Span
		for _, s := range spans {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	matched := func() bool {
		for _, s := range byName("herald.receipt.match") {
			for _, ev := range s.Events {
				if ev.Attrs["herald.notification_id"] == nid {
					return true
				}
			}
		}
		return false
	}
	require.Eventually(t, func() bool {
		require.NoError(t, tp.ForceFlush(ctx))
		spans = recv.Spans()
		return matched() && len(byName("herald.callback")) >= 2 && len(byName("herald.complete")) >= 3
	}, 20*time.Second, 50*time.Millisecond, "spans of the attempt, receipt and both callbacks")

	psc := producer.SpanContext()
	pTrace, pSpan := psc.TraceID().String(), psc.SpanID().String()
	attempts := byName("herald.attempt")
	var attempt oteltest.Span
	for _, a := range attempts {
		if a.Attrs["herald.notification_id"] == nid && a.Attrs["herald.channel"] == "sms" {
			attempt = a
		}
	}
	require.NotEmpty(t, attempt.SpanID, "the sms attempt's span")
	require.Equal(t, "sms/acme", attempt.Attrs["herald.provider"])
	require.Equal(t, "1", strings.TrimPrefix(attempt.Attrs["herald.attempt"], "int_value:"))
	require.Equal(t, "delivered", attempt.Attrs["herald.outcome"])
	require.Equal(t, msgID, attempt.Attrs["herald.provider_message_id"])
	require.Len(t, attempt.Links, 1)
	require.Equal(t, pTrace, attempt.Links[0].TraceID, "the attempt links to the producer's trace")
	require.Equal(t, pSpan, attempt.Links[0].SpanID, "the attempt links to the producer's span")

	var claim oteltest.Span
	for _, c := range byName("herald.claim") {
		if c.SpanID == attempt.ParentSpanID {
			claim = c
		}
	}
	require.NotEmpty(t, claim.SpanID, "the attempt is a child of its claim")
	require.Equal(t, attempt.TraceID, claim.TraceID)
	require.Equal(t, "sms", claim.Attrs["herald.channel"])

	linksTo := func(s oteltest.Span, spanID string) bool {
		for _, l := range s.Links {
			if l.SpanID == spanID {
				return true
			}
		}
		return false
	}
	completed := false
	for _, c := range byName("herald.complete") {
		completed = completed || linksTo(c, attempt.SpanID)
	}
	require.True(t, completed, "a completion batch links to the attempt")

	for _, c := range byName("herald.callback") {
		require.Equal(t, "callback", c.Attrs["herald.channel"])
		require.True(t, linksTo(c, pSpan), "a callback links to the producer's span")
	}
	tpHeader, _ := traceparents.Load().(string)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, tpHeader)
	sentFrom := false
	for _, c := range byName("herald.callback") {
		sentFrom = sentFrom || tpHeader == "00-"+c.TraceID+"-"+c.SpanID+"-01"
	}
	require.True(t, sentFrom, "the callback request carries its attempt span's traceparent")

	requireNoPersonalData(t, spans)
}

// denied are the patterns no exported attribute value may match: an E.164
// phone number, an e-mail address, a URL (a webhook or callback address,
// with or without credentials), the secrets and content the test used. A
// phone number starts a value or follows a character that is not part of
// a word or an id: the last group of a UUID can be twelve digits.
var denied = map[string]*regexp.Regexp{
	"phone number": regexp.MustCompile(`(^|[^\w-])\+?[1-9]\d{7,14}\b`),
	"e-mail":       regexp.MustCompile(`[^\s@]+@[^\s@]+\.[^\s@]+`),
	"url":          regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://`),
	"secret":       regexp.MustCompile(`(?i)s3cret|r3ceipts|b3arer|token=|api_key|password`),
	"payload":      regexp.MustCompile(`Your code is|"body"`),
}

// routeIDValue is a route id, "<channel>:" and the first 12 hex digits of
// sha256 of the recipient (intake.routeID): no personal data, though its
// digits are all decimal in about one route in 300 ("callback:115948476206"
// failed the phone-number check once in 40 runs).
var routeIDValue = regexp.MustCompile(`^[a-z]+:[0-9a-f]{12}$`)

// requireNoPersonalData checks every attribute of every span, link, event
// and resource against denied; a route id is not checked for a phone
// number.
func requireNoPersonalData(t *testing.T, spans []oteltest.Span) {
	t.Helper()
	check := func(where string, attrs map[string]string) {
		for k, v := range attrs {
			if k == "telemetry.sdk.version" || k == "process.runtime.version" {
				continue
			}
			for what, re := range denied {
				if what == "phone number" && routeIDValue.MatchString(v) {
					continue
				}
				require.False(t, re.MatchString(v), "%s attribute %s=%q looks like a %s", where, k, v, what)
			}
		}
	}
	for _, s := range spans {
		check(s.Name, s.Attrs)
		check(s.Name+" resource", s.Resource)
		for _, l := range s.Links {
			check(s.Name+" link", l.Attrs)
		}
		for _, ev := range s.Events {
			check(s.Name+" event "+ev.Name, ev.Attrs)
		}
	}
}

// The phone pattern finds a number wherever one is written and not in an
// id: a UUID whose last group is all digits was once taken for one.
func TestTracing_PhonePatternSkipsIDs(t *testing.T) {
	re := denied["phone number"]
	for _, v := range []string{"+254710001002", "to +254710001002", "sms:254710001002", "254710001002"} {
		require.True(t, re.MatchString(v), v)
	}
	for _, v := range []string{"01a20c15-dc15-7a4b-9006-955774982427", "webhook:0", "n00000012"} {
		require.False(t, re.MatchString(v), v)
	}
}
