// Package oteltest is a loopback OTLP/HTTP trace receiver for tests: an
// in-process endpoint on 127.0.0.1 that decodes what OpenTelemetry's OTLP
// exporter posts (protobuf, go.opentelemetry.io/proto/otlp) and keeps the
// spans for the test to read back, and a tracer provider that exports to
// it through the real exporter. `herald bench -trace-sample` runs one that
// only counts (Start with keep false), so that the exporter's cost is
// real, and `herald demo -otlp-receiver` one that keeps the spans.
package oteltest

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, its ids in lowercase hex.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	Attrs                         map[string]string
	Links                         []Link
	Events                        []Event
	// Resource is the resource's attributes.
	Resource map[string]string
}

// Link is a span's link.
type Link struct {
	TraceID, SpanID string
	Attrs           map[string]string
}

// Event is a span's event.
type Event struct {
	Name  string
	Attrs map[string]string
}

// Receiver is the loopback OTLP/HTTP endpoint.
type Receiver struct {
	srv   *httptest.Server
	keep  bool
	count atomic.Int64
	mu    sync.Mutex
	spans []Span
}

// NewReceiver starts a receiver that keeps every span, closed at the
// test's end.
func NewReceiver(t testing.TB) *Receiver {
	r := Start(true)
	t.Cleanup(r.Close)
	return r
}

// Start starts a receiver outside a test: one that keeps the spans it
// decodes (Spans), or, with keep false, only counts them (Count), so that
// a long run's spans take no memory. Close stops it.
func Start(keep bool) *Receiver {
	r := &Receiver{keep: keep}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// Close stops the receiver; an exporter's later posts fail.
func (r *Receiver) Close() { r.srv.Close() }

// Count returns the number of spans received so far, kept or not.
func (r *Receiver) Count() int64 { return r.count.Load() }

// URL returns the traces endpoint, http://127.0.0.1:port/v1/traces.
func (r *Receiver) URL() string { return r.srv.URL + "/v1/traces" }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	var n int64
	for _, rs := range in.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			n += int64(len(ss.GetSpans()))
			if !r.keep {
				continue
			}
			for _, s := range ss.GetSpans() {
				sp := Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(),
					Attrs: attrs(s.GetAttributes()), Resource: res,
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()),
						SpanID: hex.EncodeToString(l.GetSpanId()), Attrs: attrs(l.GetAttributes())})
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, Event{Name: e.GetName(), Attrs: attrs(e.GetAttributes())})
				}
				got = append(got, sp)
			}
		}
	}
	r.count.Add(n)
	if r.keep {
		r.mu.Lock()
		r.spans = append(r.spans, got...)
		r.mu.Unlock()
	}
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// attrs flattens OTLP attributes to strings (numbers and booleans in
// their protobuf text form).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// Spans returns a copy of the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Provider returns an SDK tracer provider that samples every span and
// exports them, batched, to r through the OTLP/HTTP exporter; it is shut
// down at the test's end. Call ForceFlush before reading r.Spans.
func (r *Receiver) Provider(t testing.TB) *sdktrace.TracerProvider {
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(r.URL()))
	if err != nil {
		t.Fatalf("otlp exporter: %v", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}
