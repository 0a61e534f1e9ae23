package telemetry_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/harness/oteltest"
	"github.com/heraldhq/herald/internal/telemetry"
)

// spanWithLinks exports, through a provider made by ToEndpoint to a
// loopback OTLP receiver, one span with n links, and returns how many
// links the receiver got.
func spanWithLinks(t *testing.T, n int) int {
	t.Helper()
	ctx := context.Background()
	r := oteltest.NewReceiver(t)
	p, err := telemetry.ToEndpoint(ctx, r.URL())
	require.NoError(t, err)
	links := make([]trace.Link, n)
	for i := range links {
		var tid trace.TraceID
		var sid trace.SpanID
		binary.BigEndian.PutUint64(tid[8:], uint64(i+1))
		binary.BigEndian.PutUint64(sid[:], uint64(i+1))
		links[i] = trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})}
	}
	_, span := p.Tracer("test").Start(ctx, "herald.complete", trace.WithNewRoot(), trace.WithLinks(links...))
	span.End()
	require.NoError(t, p.Shutdown(ctx))
	spans := r.Spans()
	require.Len(t, spans, 1)
	return len(spans[0].Links)
}

// A completion batch of the dispatcher's default size (500) keeps a link
// to every attempt it writes: the SDK's default limit, 128, dropped the
// rest.
func TestSpanLimits_KeepWholeBatchLinks(t *testing.T) {
	require.Equal(t, 500, spanWithLinks(t, 500))
}

// OTEL_SPAN_LINK_COUNT_LIMIT, when set, is the limit.
func TestSpanLimits_LinkLimitFromEnv(t *testing.T) {
	t.Setenv("OTEL_SPAN_LINK_COUNT_LIMIT", "10")
	require.Equal(t, 10, spanWithLinks(t, 500))
}
