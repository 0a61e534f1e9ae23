// Package telemetry builds herald serve's OpenTelemetry tracer provider
// from the standard OTEL_* environment variables. Tracing is off unless
// OTEL_TRACES_EXPORTER says "otlp": then spans go in batches to an OTLP
// collector over gRPC or HTTP (OTEL_EXPORTER_OTLP_PROTOCOL, or its
// _TRACES_ variant: "grpc" or "http/protobuf", the default), to the
// endpoint and with the headers the exporter's own OTEL_EXPORTER_OTLP_*
// variables give. OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the
// sampler (default parentbased_always_on); OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES add to the resource (service.name defaults to
// "herald"); OTEL_SDK_DISABLED=true turns it all off.
//
// Off, the provider is OpenTelemetry's no-op: a span costs a context
// lookup, and herald sets no attribute on a span that is not recording.
//
// Only herald serve (and tests) import this package; the client package
// depends on the OpenTelemetry API alone (internal/tracing).
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Provider is a tracer provider and the function that flushes and stops it.
type Provider struct {
	trace.TracerProvider
	// Enabled says spans are exported.
	Enabled bool
	// Exporter describes where spans go ("otlp grpc", "otlp http/protobuf"),
	// or "none".
	Exporter string
	shutdown func(context.Context) error
}

// Shutdown flushes the spans not yet exported and stops the exporter; a
// no-op when tracing is off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

// Stop is Shutdown within 10 seconds of now, for a deferred call: a
// failure to flush is logged on logger, not returned.
func (p *Provider) Stop(ctx context.Context, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		logger.Warn("flush traces", "err", err)
	}
}

// Samplers OTEL_TRACES_SAMPLER may name.
var samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on",
	"parentbased_always_off", "parentbased_traceidratio"}

// FromEnv returns the tracer provider the OTEL_* environment variables
// describe: OpenTelemetry's no-op provider unless OTEL_TRACES_EXPORTER is
// "otlp". A value it does not support is an error naming the variable.
func FromEnv(ctx context.Context) (*Provider, error) {
	getenv := os.Getenv
	off := &Provider{TracerProvider: noop.NewTracerProvider(), Exporter: "none"}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return off, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "", "none":
		return off, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: herald supports \"otlp\" or \"none\"", exp)
	}
	if s := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))); s != "" {
		ok := false
		for _, known := range samplers {
			ok = ok || s == known
		}
		if !ok {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: not one of %s", s, strings.Join(samplers, ", "))
		}
	}
	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	proto := strings.TrimSpace(getenv(protoVar))
	if proto == "" {
		protoVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		proto = strings.TrimSpace(getenv(protoVar))
	}
	var exporter sdktrace.SpanExporter
	var err error
	switch proto {
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		proto = "http/protobuf"
		exporter, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("%s=%q: herald supports \"grpc\" or \"http/protobuf\"", protoVar, proto)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (%s): %w", proto, err)
	}
	// Later sources override earlier ones: the environment names the
	// service if it says so.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "herald")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// NewTracerProvider reads OTEL_TRACES_SAMPLER(_ARG); SpanLimits the
	// span limits; the batcher reads OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(SpanLimits()))
	return &Provider{TracerProvider: tp, Enabled: true, Exporter: "otlp " + proto, shutdown: tp.Shutdown}, nil
}

// New returns ToEndpoint's provider for a non-empty endpoint, else
// FromEnv's.
func New(ctx context.Context, endpoint string) (*Provider, error) {
	if endpoint == "" {
		return FromEnv(ctx)
	}
	return ToEndpoint(ctx, endpoint)
}

// ToEndpoint returns a tracer provider that samples every trace (parent
// based) and exports its spans in batches over OTLP/HTTP to endpoint, a
// full URL such as http://127.0.0.1:4318/v1/traces: what `herald demo
// -otlp-endpoint` uses, the flag taking precedence over the OTEL_*
// variables. The resource is FromEnv's (service.name "herald", then
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES).
func ToEndpoint(ctx context.Context, endpoint string) (*Provider, error) {
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter to %s: %w", endpoint, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "herald")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithRawSpanLimits(SpanLimits()))
	return &Provider{TracerProvider: tp, Enabled: true, Exporter: "otlp http/protobuf", shutdown: tp.Shutdown}, nil
}

// maxLinks is how many links a span keeps unless OTEL_SPAN_LINK_COUNT_LIMIT
// says otherwise: a completion batch's span links to each attempt it
// writes, up to the dispatcher's batch size (500 by default), and the
// SDK's default of 128 dropped the rest, so that the trace of a route
// completed in a large batch ended at its attempt.
const maxLinks = 4096

// SpanLimits are the SDK's span limits, which it reads from the
// OTEL_SPAN_* and OTEL_ATTRIBUTE_* variables, with maxLinks links when
// OTEL_SPAN_LINK_COUNT_LIMIT is not set.
func SpanLimits() sdktrace.SpanLimits {
	limits := sdktrace.NewSpanLimits()
	if strings.TrimSpace(os.Getenv("OTEL_SPAN_LINK_COUNT_LIMIT")) == "" {
		limits.LinkCountLimit = maxLinks
	}
	return limits
}
