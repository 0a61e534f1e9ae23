package sms

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
)

// Numbers the test provider treats differently; all valid E.164 numbers.
const (
	numAccept     = "+16502530000"
	numRateLimit  = "+16502530001"
	numThrottled  = "+16502530002"
	numDown       = "+16502530003"
	numInvalid    = "+16502530004"
	numRejected   = "+16502530005"
	numSlow       = "+16502530006"
	numNumericID  = "+16502530007"
	numUKMobile   = "+447911123456"
	testAPIKey    = "test-key-0123456789"
	testSender    = "Herald"
	maskedInvalid = "+1650*****04"
)

// sent is one request as the test provider parsed it.
type sent struct {
	fields         map[string]string
	idempotencyKey string
}

// provider is an SMS provider's HTTP API on loopback. It checks the API key
// and the body's shape, and answers by destination number.
type provider struct {
	server *httptest.Server
	// authHeader and authValue are what a request must carry.
	authHeader, authValue string
	// form, when set, expects form fields To/From/Text instead of JSON
	// to/from/body.
	form    bool
	release chan struct{}

	mu   sync.Mutex
	sent []sent
}

func (p *provider) requests() []sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sent(nil), p.sent...)
}

func startProvider(t *testing.T, form bool) *provider {
	t.Helper()
	p := &provider{authHeader: "Authorization", authValue: "Bearer " + testAPIKey, form: form, release: make(chan struct{})}
	if form {
		p.authHeader, p.authValue = "X-Api-Key", testAPIKey
	}
	p.server = httptest.NewServer(http.HandlerFunc(p.handle))
	t.Cleanup(func() {
		close(p.release)
		p.server.Close()
	})
	return p
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (p *provider) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.Header.Get(p.authHeader) != p.authValue {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": "unauthorized", "message": "invalid API key"}})
		return
	}
	fields := map[string]string{}
	to, from, body := "to", "from", "body"
	if p.form {
		to, from, body = "To", "From", "Text"
		if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		if err := r.ParseForm(); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for k := range r.PostForm {
			fields[k] = r.PostForm.Get(k)
		}
	} else {
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &fields); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "malformed JSON"})
			return
		}
	}
	if len(fields) != 3 || fields[to] == "" || fields[from] != testSender || fields[body] == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("unexpected fields %v", fields)})
		return
	}
	p.mu.Lock()
	p.sent = append(p.sent, sent{fields: fields, idempotencyKey: r.Header.Get("Idempotency-Key")})
	p.mu.Unlock()

	switch fields[to] {
	case numRateLimit:
		w.Header().Set("Retry-After", "30")
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "rate limit exceeded"})
	case numThrottled:
		writeJSON(w, http.StatusOK, map[string]any{"status": "throttled", "retry_after": 12})
	case numDown:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "upstream carrier unavailable"})
	case numInvalid:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code":    "invalid_destination",
			"message": "The 'to' number " + numInvalid + " is not a valid mobile number",
		}})
	case numRejected:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": map[string]any{"code": "body_too_long", "message": "body exceeds 10 segments"}})
	case numSlow:
		select {
		case <-p.release:
		case <-r.Context().Done():
		}
	case numNumericID:
		writeJSON(w, http.StatusCreated, map[string]any{"id": 12345678})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": "SM-" + strings.TrimPrefix(fields[to], "+"), "sid": "SID-1", "status": "queued"})
	}
}

func newDeliverer(t *testing.T, cfg Config) *Deliverer {
	t.Helper()
	d, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func jsonConfig(p *provider) Config {
	return Config{URL: p.server.URL + "/v1/messages", APIKey: testAPIKey, From: testSender, Timeout: 2 * time.Second}
}

func testMessage(to, body string) *channel.Message {
	content, _ := json.Marshal(map[string]string{"body": body})
	return &channel.Message{NotificationID: "ntf_1", RouteID: "rte_1", Attempt: 1, Address: to, Content: content}
}

func TestDeliver_SendsJSONWithBearerKey(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)
	d := newDeliverer(t, jsonConfig(p))

	out := d.Deliver(t.Context(), testMessage(numAccept, "Your code is 123456 ✓"))
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	require.Equal(t, "SM-16502530000", out.ProviderMessageID)

	reqs := p.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, map[string]string{"to": numAccept, "from": testSender, "body": "Your code is 123456 ✓"}, reqs[0].fields)
	require.Equal(t, "ntf_1:rte_1", reqs[0].idempotencyKey)

	t.Run("NumericID", func(t *testing.T) {
		t.Parallel()
		out := d.Deliver(t.Context(), testMessage(numNumericID, "hi"))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
		require.Equal(t, "12345678", out.ProviderMessageID)
	})
	t.Run("NonUSNumber", func(t *testing.T) {
		t.Parallel()
		out := d.Deliver(t.Context(), testMessage(numUKMobile, "hi"))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
	})
}

func TestDeliver_SendsFormWithCustomFields(t *testing.T) {
	t.Parallel()
	p := startProvider(t, true)
	d := newDeliverer(t, Config{
		URL:             p.server.URL + "/v1/messages",
		APIKey:          testAPIKey,
		AuthHeader:      "X-API-Key",
		From:            testSender,
		Format:          FormatForm,
		ToField:         "To",
		FromField:       "From",
		BodyField:       "Text",
		ResponseIDField: "sid",
	})

	out := d.Deliver(t.Context(), testMessage(numAccept, "a&b=c"))
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	require.Equal(t, "SID-1", out.ProviderMessageID)
	require.Equal(t, map[string]string{"To": numAccept, "From": testSender, "Text": "a&b=c"}, p.requests()[0].fields)
}

func TestDeliver_ClassifiesProviderAnswers(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)
	d := newDeliverer(t, jsonConfig(p))

	tests := []struct {
		name           string
		to             string
		class          channel.Class
		classification string
		retryAfter     time.Duration
		hint           string
	}{
		{"Accepted", numAccept, channel.Delivered, "http_200", 0, ""},
		{"RateLimited", numRateLimit, channel.Transient, ClassProviderThrottled, 30 * time.Second, ""},
		{"ThrottledInBody", numThrottled, channel.Transient, ClassProviderThrottled, 12 * time.Second, ""},
		{"ProviderDown", numDown, channel.Transient, "http_503", 0, ""},
		{"InvalidDestination", numInvalid, channel.Permanent, channel.ClassInvalidDestination, 0, "correct the recipient's number"},
		{"Rejected", numRejected, channel.Permanent, ClassProviderRejected, 0, "refused this message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := d.Deliver(t.Context(), testMessage(tt.to, "hello"))
			require.Equal(t, tt.class, out.Class, out.Message)
			require.Equal(t, tt.classification, out.Classification)
			require.Equal(t, tt.retryAfter, out.RetryAfter)
			require.Contains(t, out.RecoveryHint, tt.hint)
			require.NotContains(t, out.Message, tt.to, "messages never hold a full number")
		})
	}

	t.Run("ProviderReasonIsKeptButMasked", func(t *testing.T) {
		t.Parallel()
		out := d.Deliver(t.Context(), testMessage(numInvalid, "hello"))
		require.Contains(t, out.Message, "invalid_destination")
		require.Contains(t, out.Message, maskedInvalid)
		out = d.Deliver(t.Context(), testMessage(numRejected, "hello"))
		require.Contains(t, out.Message, "body exceeds 10 segments")
	})
}

func TestDeliver_WrongKeyIsTransientAuth(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)
	cfg := jsonConfig(p)
	cfg.APIKey = "wrong-key-987"
	d := newDeliverer(t, cfg)

	out := d.Deliver(t.Context(), testMessage(numAccept, "hello"))
	require.Equal(t, channel.Transient, out.Class, "a bad key must not dead-letter every route")
	require.Equal(t, ClassProviderAuth, out.Classification)
	require.Contains(t, out.Message, "credentials")
	require.Contains(t, out.RecoveryHint, "APIKey")
	require.NotContains(t, out.Message+out.RecoveryHint, "wrong-key-987")
	require.Empty(t, p.requests())
}

func TestDeliver_WrongURLIsTransientConfig(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)
	cfg := jsonConfig(p)
	cfg.URL = p.server.URL + "/v2/nope"
	d := newDeliverer(t, cfg)

	out := d.Deliver(t.Context(), testMessage(numAccept, "hello"))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, ClassProviderConfig, out.Classification)
	require.Contains(t, out.RecoveryHint, "URL")
}

func TestDeliver_TimeoutIsTransient(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)

	t.Run("ConfigTimeout", func(t *testing.T) {
		t.Parallel()
		cfg := jsonConfig(p)
		cfg.Timeout = 200 * time.Millisecond
		d := newDeliverer(t, cfg)
		start := time.Now()
		out := d.Deliver(t.Context(), testMessage(numSlow, "hello"))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, channel.ClassTimeout, out.Classification)
		require.Less(t, time.Since(start), 2*time.Second)
	})
	t.Run("ContextDeadline", func(t *testing.T) {
		t.Parallel()
		cfg := jsonConfig(p)
		cfg.Timeout = time.Minute
		d := newDeliverer(t, cfg)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		out := d.Deliver(ctx, testMessage(numSlow, "hello"))
		require.Equal(t, channel.Transient, out.Class)
		require.Equal(t, channel.ClassTimeout, out.Classification)
	})
}

func TestDeliver_UnreachableIsTransient(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)
	cfg := jsonConfig(p)
	p.server.Close()
	d := newDeliverer(t, cfg)

	out := d.Deliver(t.Context(), testMessage(numAccept, "hello"))
	require.Equal(t, channel.Transient, out.Class)
	require.Equal(t, channel.ClassConnectionRefused, out.Classification)
}

func TestDeliver_RejectsBadInputUnsent(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)
	d := newDeliverer(t, jsonConfig(p))

	tests := []struct {
		name           string
		address        string
		content        string
		class          channel.Class
		classification string
	}{
		{"NoAddress", "", `{"body":"x"}`, channel.Skip, channel.ClassNoAddress},
		{"NoPlus", "16502530000", `{"body":"x"}`, channel.Permanent, channel.ClassInvalidDestination},
		{"Spaces", "+1 650 253 0000", `{"body":"x"}`, channel.Permanent, channel.ClassInvalidDestination},
		{"TooShort", "+1650", `{"body":"x"}`, channel.Permanent, channel.ClassInvalidDestination},
		{"NoSuchCountry", "+999123456789", `{"body":"x"}`, channel.Permanent, channel.ClassInvalidDestination},
		{"Letters", "+1650CALLNOW", `{"body":"x"}`, channel.Permanent, channel.ClassInvalidDestination},
		{"InvalidJSON", numAccept, `{"body":`, channel.Permanent, channel.ClassBadContent},
		{"WrongType", numAccept, `{"body":5}`, channel.Permanent, channel.ClassBadContent},
		{"EmptyBody", numAccept, `{"body":""}`, channel.Permanent, channel.ClassBadContent},
		{"NoContent", numAccept, ``, channel.Permanent, channel.ClassBadContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := testMessage(tt.address, "")
			msg.Content = json.RawMessage(tt.content)
			out := d.Deliver(t.Context(), msg)
			require.Equal(t, tt.class, out.Class)
			require.Equal(t, tt.classification, out.Classification)
			if len(tt.address) > 6 {
				require.NotContains(t, out.Message, tt.address)
			}
		})
	}
	require.Empty(t, p.requests())
}

func TestDeliver_SafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	p := startProvider(t, false)
	d := newDeliverer(t, jsonConfig(p))

	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			msg := testMessage(numAccept, "hello")
			msg.RouteID = fmt.Sprintf("rte_%d", i)
			require.Equal(t, channel.Delivered, d.Deliver(t.Context(), msg).Class)
		})
	}
	wg.Wait()
	require.Len(t, p.requests(), 32)
}

func TestIsE164_Forms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{numAccept, true},
		{numUKMobile, true},
		{"+33612345678", true},
		{"16502530000", false},
		{"+1 650 253 0000", false},
		{"+1-650-253-0000", false},
		{"+", false},
		{"", false},
		{"+1650", false},
		{"+999123456789", false},
	}
	for _, tt := range tests {
		t.Run(url.PathEscape(tt.in), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, IsE164(tt.in))
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
		{"NoURL", Config{APIKey: "k"}, "URL"},
		{"RelativeURL", Config{URL: "/v1/messages", APIKey: "k"}, "URL"},
		{"NoKey", Config{URL: "https://sms.example.com/v1"}, "APIKey"},
		{"KeyWithNewline", Config{URL: "https://sms.example.com/v1", APIKey: "sekrit\n"}, "APIKey"},
		{"BadFormat", Config{URL: "https://sms.example.com/v1", APIKey: "sekrit", Format: "xml"}, "Format"},
		{"BadHeader", Config{URL: "https://sms.example.com/v1", APIKey: "sekrit", AuthHeader: "X Key:"}, "AuthHeader"},
		{"NegativeTimeout", Config{URL: "https://sms.example.com/v1", APIKey: "sekrit", Timeout: -1}, "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "sekrit")
		})
	}
}

func TestParseProviderResponse_CommonShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		body               string
		id                 string
		throttled, invalid bool
	}{
		{"Empty", ``, "", false, false},
		{"NotJSON", `<html>oops</html>`, "", false, false},
		{"Accepted", `{"id":"abc","status":"queued"}`, "abc", false, false},
		{"ThrottledStatus", `{"status":"THROTTLED"}`, "", true, false},
		{"RateLimitMessage", `{"error":{"message":"Rate limit exceeded"}}`, "", true, false},
		{"InvalidNumber", `{"error":{"code":21211,"message":"Invalid 'To' Phone Number"}}`, "", false, true},
		{"ErrorsArray", `{"errors":[{"code":"invalid_destination"}]}`, "", false, true},
		{"TooManySegmentsIsNotThrottling", `{"error":"too many segments"}`, "", false, false},
		{"InvalidBodyIsNotDestination", `{"error":"invalid body: failed to encode"}`, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pr := parseProviderResponse([]byte(tt.body), "id")
			require.Equal(t, tt.id, pr.id)
			require.Equal(t, tt.throttled, pr.throttled)
			require.Equal(t, tt.invalid, pr.invalidDestination)
		})
	}
}

func TestDeliver_NilMessageDoesNotPanic(t *testing.T) {
	t.Parallel()
	d := newDeliverer(t, Config{URL: "https://sms.example.com/v1", APIKey: "k"})
	out := d.Deliver(t.Context(), nil)
	require.Equal(t, channel.Permanent, out.Class)
	require.Equal(t, channel.ClassBadContent, out.Classification)
}
