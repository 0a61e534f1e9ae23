package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/tracing"
)

// call is what the middleware and the handlers know of one request.
type call struct {
	requestID string
	producer  string // once the key is authenticated
	err       error  // the problem answered, for the log
}

type callKey struct{}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

func requestID(ctx context.Context) string {
	if c := callOf(ctx); c != nil {
		return c.requestID
	}
	return ""
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// middleware gives every request an id (the client's X-Request-Id when
// sane), answers a panic with a 500 problem, and logs and counts each
// request by its route's pattern.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		c := &call{requestID: sanitizeRequestID(r.Header.Get("X-Request-Id"))}
		if c.requestID == "" {
			var b [12]byte
			_, _ = rand.Read(b[:])
			c.requestID = "req_" + hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", c.requestID)
		ctx, span := s.startSpan(r)
		r = r.WithContext(context.WithValue(ctx, callKey{}, c))
		sw := &statusWriter{ResponseWriter: w}
		defer span.End()
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.logger.Error("api handler panicked", "request_id", c.requestID, "panic", v)
				if sw.status == 0 {
					writeProblem(sw, r, problem(http.StatusInternalServerError, CodeInternal, "internal error"))
				}
			}
			took := time.Since(start)
			endpoint := r.Pattern
			if endpoint == "" || endpoint == "/" {
				endpoint = "unmatched"
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			s.metrics.APIRequest(endpoint, status, took)
			endSpan(span, r.Method, endpoint, status, c)
			attrs := []slog.Attr{
				slog.String("request_id", c.requestID), slog.String("endpoint", endpoint),
				slog.String("producer", c.producer), slog.Int("status", status),
				slog.Float64("duration_ms", float64(took.Microseconds())/1000),
			}
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case status == http.StatusRequestTimeout: // a slow client: worth a look, not an error of ours
				level = slog.LevelWarn
			}
			if c.err != nil {
				attrs = append(attrs, slog.String("err", c.err.Error()))
			}
			s.logger.LogAttrs(r.Context(), level, "api request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}

// startSpan starts a request's server span, a child of the caller's
// traceparent header if it has one; a no-op span when the server makes
// none.
func (s *Server) startSpan(r *http.Request) (context.Context, trace.Span) {
	ctx := r.Context()
	if s.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	return s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method)))
}

// endSpan names a request's span after its route's pattern and records
// the answer (OpenTelemetry's HTTP server conventions): never the query,
// the body or a header.
func endSpan(span trace.Span, method, endpoint string, status int, c *call) {
	if !span.IsRecording() {
		return
	}
	route := endpoint // a pattern names its method: "POST /v1/notifications"
	if _, path, ok := strings.Cut(endpoint, " "); ok {
		route = path
	}
	span.SetName(method + " " + route)
	span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status),
		attribute.String("herald.request_id", c.requestID))
	if c.producer != "" {
		span.SetAttributes(tracing.Producer.String(c.producer))
	}
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}
