// Package tracing holds what herald's packages share to trace a
// notification with OpenTelemetry: the tracer's name, herald's own
// attribute keys, the link from a delivery attempt back to the producer's
// trace, and the W3C traceparent written as a record's trace_id when the
// producer gave none.
//
// It uses the OpenTelemetry API only, never an SDK or exporter, so that the
// client package (which imports it) stays free of them; internal/telemetry
// builds the SDK's provider for herald serve.
//
// No attribute herald sets carries a phone number, e-mail address, URL,
// secret or payload: only ids, channel and provider names, attempt
// numbers, outcome classes and classifications.
package tracing

import (
	"context"
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of every herald span.
const Name = "github.com/heraldhq/herald"

// herald's attribute keys (OpenTelemetry's semantic conventions have none
// for these).
const (
	NotificationID    = attribute.Key("herald.notification_id")
	RouteID           = attribute.Key("herald.route_id")
	Channel           = attribute.Key("herald.channel")
	Provider          = attribute.Key("herald.provider")
	Attempt           = attribute.Key("herald.attempt")
	Outcome           = attribute.Key("herald.outcome")
	Classification    = attribute.Key("herald.classification")
	ProviderMessageID = attribute.Key("herald.provider_message_id")
	Producer          = attribute.Key("herald.producer")
	NotificationType  = attribute.Key("herald.notification_type")
	Status            = attribute.Key("herald.status")
	DeliveryStatus    = attribute.Key("herald.delivery_status")
	// BatchSize is the number of items (intents, routes, outcomes,
	// receipts) a batch span covers.
	BatchSize = attribute.Key("herald.batch.size")
	// Intents counts what a submit accepted, refused, or found duplicate.
	Accepted   = attribute.Key("herald.intents.accepted")
	Duplicates = attribute.Key("herald.intents.duplicate")
	Refused    = attribute.Key("herald.intents.refused")
	// LinkKind says what a link points at: "producer" (the trace that
	// submitted the notification) or "attempt" (a delivery attempt).
	LinkKind = attribute.Key("herald.link")
)

// Tracer returns herald's tracer from tp, or from the global provider
// when tp is nil.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(Name)
}

// Traceparent returns the W3C traceparent of ctx's span
// ("00-<trace id>-<span id>-<flags>"), or "" if ctx carries no valid span.
// herald stores it as a record's trace_id when the producer gave none, so
// that the record's delivery attempts link back to the span that
// submitted it.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	var b strings.Builder
	b.Grow(55)
	b.WriteString("00-")
	tid, sid := sc.TraceID(), sc.SpanID()
	b.WriteString(hex.EncodeToString(tid[:]))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(sid[:]))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString([]byte{byte(sc.TraceFlags())}))
	return b.String()
}

// ProducerLink returns the link from a delivery attempt to the producer's
// trace named by a record's trace_id: a W3C traceparent links to its span;
// a bare W3C trace id (32 hex digits) links to the trace with no span (the
// link then carries herald.link so that the SDK keeps it). Any other
// trace_id (free text, at most 128 characters) gives no link: ok is false.
func ProducerLink(traceID string) (link trace.Link, ok bool) {
	s := strings.TrimSpace(traceID)
	var cfg trace.SpanContextConfig
	switch {
	case len(s) == 55 && s[2] == '-' && s[35] == '-' && s[52] == '-':
		tid, err := trace.TraceIDFromHex(strings.ToLower(s[3:35]))
		if err != nil {
			return trace.Link{}, false
		}
		sid, err := trace.SpanIDFromHex(strings.ToLower(s[36:52]))
		if err != nil {
			return trace.Link{}, false
		}
		flags, err := hex.DecodeString(s[53:55])
		if err != nil || s[:2] == "ff" {
			return trace.Link{}, false
		}
		cfg = trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true}
	case len(s) == 32:
		tid, err := trace.TraceIDFromHex(strings.ToLower(s))
		if err != nil {
			return trace.Link{}, false
		}
		cfg = trace.SpanContextConfig{TraceID: tid, Remote: true}
	default:
		return trace.Link{}, false
	}
	return trace.Link{
		SpanContext: trace.NewSpanContext(cfg),
		Attributes:  []attribute.KeyValue{LinkKind.String("producer")},
	}, true
}

// AttemptLink returns the link from a batch span (a completion) to a
// delivery attempt's span.
func AttemptLink(sc trace.SpanContext) trace.Link {
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{LinkKind.String("attempt")}}
}
