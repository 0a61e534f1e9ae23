package routing

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/config"
)

// Delivery statuses a receipt maps to (routes.delivery_status).
const (
	DeliveryDelivered   = "delivered"
	DeliveryUndelivered = "undelivered"
	DeliveryExpired     = "expired"
	DeliveryUnknown     = "unknown"
)

// DefaultReceiptWindow is how long a receipt that matches no route is
// tried again (a receipt may come before the completion that records the
// provider's message id) before it is set aside as unmatched.
const DefaultReceiptWindow = 10 * time.Minute

// defaultStatuses maps the words providers commonly send, SMPP's stat
// values included, in lower case; a provider's own Statuses come first.
var defaultStatuses = map[string]string{
	"delivrd": DeliveryDelivered, "delivered": DeliveryDelivered, "success": DeliveryDelivered,
	"undeliv": DeliveryUndelivered, "undelivered": DeliveryUndelivered, "failed": DeliveryUndelivered,
	"rejectd": DeliveryUndelivered, "rejected": DeliveryUndelivered, "deleted": DeliveryUndelivered,
	"expired": DeliveryExpired,
	"unknown": DeliveryUnknown, "accepted": DeliveryUnknown, "enroute": DeliveryUnknown,
}

// Receipts is how a provider sends delivery receipts to serve's receipts
// endpoint (POST or GET /receipts/<provider>): where its message id,
// status and error code are, the token it authenticates with, and what
// its statuses mean. A provider with Receipts has its routes' receipt key
// recorded at completion, so its receipts can be matched; the SMPP driver's
// receipts arrive on its own connection and need no endpoint.
type Receipts struct {
	// Method is POST (the default) or GET.
	Method string `yaml:"method,omitempty"`
	// Format of a POST body: json (the default; top-level fields) or form.
	// A GET reads the query string.
	Format string `yaml:"format,omitempty"`
	// IDField, StatusField and ErrorField name the fields; defaults id,
	// status and error.
	IDField     string `yaml:"id_field,omitempty"`
	StatusField string `yaml:"status_field,omitempty"`
	ErrorField  string `yaml:"error_field,omitempty"`
	// Token authenticates the provider: "Authorization: Bearer <token>" or
	// "?token=<token>". A reference; required for the endpoint.
	Token config.Secret `yaml:"token,omitempty"`
	// Statuses maps the provider's status words (any case) to delivered,
	// undelivered, expired or unknown, before the defaults (DELIVRD,
	// UNDELIV, EXPIRED, REJECTD, ...).
	Statuses map[string]string `yaml:"statuses,omitempty"`
	// TemporaryErrors lists the error codes the provider calls temporary;
	// an undelivered receipt with another code is permanent.
	TemporaryErrors []string `yaml:"temporary_errors,omitempty"`
	// Window is how long an unmatched receipt is tried again; default
	// DefaultReceiptWindow.
	Window time.Duration `yaml:"window,omitempty"`
	// RetryTemporary, when true, sends a route whose receipt says
	// undelivered with a temporary error code back for another attempt,
	// which its rule routes to the next provider (off by default).
	RetryTemporary bool `yaml:"retry_temporary,omitempty"`
}

// Retries reports whether a receipt of status and error code sends its
// route back for another attempt. r may be nil (never).
func (r *Receipts) Retries(status, code string) bool {
	return r != nil && r.RetryTemporary && status == DeliveryUndelivered && !r.Permanent(code)
}

// Fields returns the id, status and error field names, defaults applied.
func (r *Receipts) Fields() (id, status, errField string) {
	return or(r.IDField, "id"), or(r.StatusField, "status"), or(r.ErrorField, "error")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// MapStatus says what a provider's status word means: delivered,
// undelivered, expired or unknown (a word neither Statuses nor the
// defaults know is unknown). r may be nil (the defaults only).
func (r *Receipts) MapStatus(status string) string {
	s := strings.ToLower(strings.TrimSpace(status))
	if r != nil {
		for k, v := range r.Statuses {
			if strings.ToLower(k) == s {
				return v
			}
		}
	}
	if v, ok := defaultStatuses[s]; ok {
		return v
	}
	return DeliveryUnknown
}

// Permanent reports whether an undelivered receipt's error code is
// permanent: not among TemporaryErrors. r may be nil (every code is).
func (r *Receipts) Permanent(code string) bool {
	if r == nil {
		return true
	}
	for _, c := range r.TemporaryErrors {
		if c == code {
			return false
		}
	}
	return true
}

// WindowOrDefault is Window, or DefaultReceiptWindow. r may be nil.
func (r *Receipts) WindowOrDefault() time.Duration {
	if r == nil || r.Window <= 0 {
		return DefaultReceiptWindow
	}
	return r.Window
}

// validate checks r for a provider of driver; the error names the field
// under "receipts.". The token is required for the HTTP endpoint only: an
// SMPP provider's receipts arrive on its binds, and its settings say what
// they mean (statuses, temporary_errors, retry_temporary, window).
func (r *Receipts) validate(driver string) error {
	switch {
	case r.Method != "" && r.Method != "POST" && r.Method != "GET":
		return fmt.Errorf("receipts.method: %q is not POST or GET", r.Method)
	case r.Format != "" && r.Format != "json" && r.Format != "form":
		return fmt.Errorf("receipts.format: %q is not json or form", r.Format)
	case r.Token.IsZero() && driver != config.DriverSMPP:
		return errors.New("receipts.token: required: set env or file (the provider authenticates with it)")
	case r.Token.Env != "" && r.Token.File != "":
		return errors.New("receipts.token: set env or file, not both")
	case r.Window < 0:
		return errors.New("receipts.window: must not be negative")
	}
	for k, v := range r.Statuses {
		switch v {
		case DeliveryDelivered, DeliveryUndelivered, DeliveryExpired, DeliveryUnknown:
		default:
			return fmt.Errorf("receipts.statuses.%s: %q is not delivered, undelivered, expired or unknown", k, v)
		}
	}
	return nil
}
