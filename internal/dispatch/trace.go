package dispatch

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/tracing"
)

// Spans of the dispatcher, made only when Config.TracerProvider is set
// (d.tracer non-nil); otherwise every helper here returns at once.
//
//   - herald.claim: one claim batch that claimed routes (an empty claim
//     makes no span), from the claim's start until its deliveries started;
//     a root span.
//   - herald.attempt (herald.callback on channel callback): one delivery
//     attempt, a child of its claim, linked to the producer's trace named
//     by the record's trace_id (tracing.ProducerLink). Its context is the
//     Deliverer's, so a webhook or callback carries its traceparent.
//   - herald.complete: one completion batch, a root span linked to the
//     attempts whose outcomes it writes.

// noSpan is the span of what is not traced.
var noSpan trace.Span = noop.Span{}

// claimSpan starts the span of a claim that began at began and claimed n
// routes.
func (l *channelLoop) claimSpan(ctx context.Context, began time.Time, n int) (context.Context, trace.Span) {
	if l.d.tracer == nil || n == 0 {
		return ctx, noSpan
	}
	attrs := []attribute.KeyValue{tracing.Channel.String(l.name), tracing.BatchSize.Int(n)}
	if l.lane != "" {
		attrs = append(attrs, tracing.Provider.String(l.lane))
	}
	return l.d.tracer.Start(ctx, "herald.claim", trace.WithTimestamp(began), trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// attemptSpan starts the span of j's delivery attempt: a child of j's
// claim, linked to the producer's trace.
func (l *channelLoop) attemptSpan(ctx context.Context, j *job) (context.Context, trace.Span) {
	if l.d.tracer == nil {
		return ctx, noSpan
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			tracing.NotificationID.String(j.row.NotificationID),
			tracing.RouteID.String(j.row.RouteID),
			tracing.Channel.String(l.name),
			tracing.Attempt.Int(int(j.row.AttemptCount)),
			tracing.NotificationType.String(j.row.NotificationType),
		),
	}
	if link, ok := tracing.ProducerLink(j.row.TraceID); ok {
		opts = append(opts, trace.WithLinks(link))
	}
	if pr := j.providerName(); pr != "" {
		opts = append(opts, trace.WithAttributes(tracing.Provider.String(pr)))
	}
	name := "herald.attempt"
	if l.name == channel.Callback {
		name = "herald.callback"
	}
	return l.d.tracer.Start(trace.ContextWithSpanContext(ctx, j.claim), name, opts...)
}

// endAttempt records an attempt's outcome on its span, ends it, and
// remembers it in c for the completion's link.
func endAttempt(span trace.Span, out channel.Outcome, c *completion) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		tracing.Outcome.String(out.Class.String()),
		tracing.Classification.String(c.classification),
		tracing.Status.String(c.status),
	)
	if out.ProviderMessageID != "" {
		span.SetAttributes(tracing.ProviderMessageID.String(out.ProviderMessageID))
	}
	if out.Class != channel.Delivered {
		span.SetStatus(codes.Error, c.classification)
	}
	c.span = span.SpanContext()
	span.End()
}

// completeSpan starts the span of a completion batch.
func (c *completer) completeSpan(ctx context.Context, batch []completion) (context.Context, trace.Span) {
	if c.d.tracer == nil {
		return ctx, noSpan
	}
	var links []trace.Link
	for _, x := range batch {
		if x.span.IsValid() {
			links = append(links, tracing.AttemptLink(x.span))
		}
	}
	attrs := []attribute.KeyValue{tracing.BatchSize.Int(len(batch))}
	if chs := batchChannels(batch); len(chs) == 1 {
		attrs = append(attrs, tracing.Channel.String(chs[0]))
	}
	return c.d.tracer.Start(ctx, "herald.complete", trace.WithNewRoot(), trace.WithLinks(links...),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}
