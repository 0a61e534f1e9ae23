package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
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
		r = r.WithContext(context.WithValue(r.Context(), callKey{}, c))
		sw := &statusWriter{ResponseWriter: w}
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
			attrs := []slog.Attr{
				slog.String("request_id", c.requestID), slog.String("endpoint", endpoint),
				slog.String("producer", c.producer), slog.Int("status", status),
				slog.Float64("duration_ms", float64(took.Microseconds())/1000),
			}
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			if c.err != nil {
				attrs = append(attrs, slog.String("err", c.err.Error()))
			}
			s.logger.LogAttrs(r.Context(), level, "api request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}
