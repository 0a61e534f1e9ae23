package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// The API's own failure codes, beside heraldtype's validation codes (each
// a problem type too).
const (
	// CodeUnauthorized: no API key, or one that is unknown or revoked (401).
	CodeUnauthorized heraldtype.Code = "unauthorized"
	// CodeForbidden: the key's producer may not do it, e.g. an intent in
	// another producer's name, refused by the database (403).
	CodeForbidden heraldtype.Code = "forbidden"
	// CodeNotFound: no such notification or recipient for this producer,
	// including another producer's (404), or no such route.
	CodeNotFound heraldtype.Code = "not_found"
	// CodeMethodNotAllowed: the path exists, the method does not (405).
	CodeMethodNotAllowed heraldtype.Code = "method_not_allowed"
	// CodeNotAcceptable: the Accept header admits neither application/json
	// nor application/problem+json (406).
	CodeNotAcceptable heraldtype.Code = "not_acceptable"
	// CodeUnsupportedMediaType: a request body that is not declared
	// application/json (415).
	CodeUnsupportedMediaType heraldtype.Code = "unsupported_media_type"
	// CodeRateLimited: the key made more requests than its rate (429).
	CodeRateLimited heraldtype.Code = "rate_limited"
	// CodeRequestTimeout: the client sent its request body too slowly,
	// past the server's read timeout (408).
	CodeRequestTimeout heraldtype.Code = "request_timeout"
	// CodeUnavailable: the database does not answer (503).
	CodeUnavailable heraldtype.Code = "unavailable"
	// CodeInternal: a fault of the server's own (500).
	CodeInternal heraldtype.Code = "internal"
)

// Codes returns every code a problem's code (and type) may hold: the
// validation codes of heraldtype, then the API's own. The slice is fresh.
func Codes() []heraldtype.Code {
	return append(heraldtype.Codes(), CodeUnauthorized, CodeForbidden, CodeNotFound, CodeMethodNotAllowed,
		CodeNotAcceptable, CodeUnsupportedMediaType, CodeRateLimited, CodeRequestTimeout, CodeUnavailable, CodeInternal)
}

// ProblemTypePrefix starts every problem's type; the code follows.
const ProblemTypePrefix = "urn:herald:problem:"

// FieldProblem is one field error of a refused intent or recipient.
type FieldProblem struct {
	Field   string          `json:"field"`
	Code    heraldtype.Code `json:"code"`
	Message string          `json:"message"`
}

// Problem is an RFC 9457 problem detail, with herald's extension members.
type Problem struct {
	Type   string          `json:"type"`
	Title  string          `json:"title"`
	Status int             `json:"status"`
	Detail string          `json:"detail,omitempty"`
	Code   heraldtype.Code `json:"code"`
	// Field is the JSON path of the (first) offending field, if any.
	Field string `json:"field,omitempty"`
	// Errors lists every field error of a refused intent or recipient.
	Errors []FieldProblem `json:"errors,omitempty"`
	// NotificationID names the notification holding a conflicting key.
	NotificationID string `json:"notification_id,omitempty"`
	// RequestID is the request's id (the X-Request-Id header).
	RequestID string `json:"request_id,omitempty"`

	retryAfter int // seconds; 0: no Retry-After header
	err        error
}

// Error returns the detail, for logs.
func (p *Problem) Error() string {
	if p.err != nil {
		return p.Detail + ": " + p.err.Error()
	}
	return p.Detail
}

func problem(status int, code heraldtype.Code, detail string) *Problem {
	return &Problem{Type: ProblemTypePrefix + string(code), Title: http.StatusText(status), Status: status,
		Code: code, Detail: detail}
}

// invalid returns the 400 problem of a *heraldtype.ValidationError: the
// first error's code and field, and every error.
func invalid(verr *heraldtype.ValidationError) *Problem {
	first := heraldtype.FieldError{Code: heraldtype.CodeInvalidField}
	if len(verr.Errors) > 0 {
		first = verr.Errors[0]
	}
	status := http.StatusBadRequest
	if first.Code == heraldtype.CodeTooLarge && first.Field == "" {
		status = http.StatusRequestEntityTooLarge
	}
	p := problem(status, first.Code, verr.Error())
	p.Field = first.Field
	p.Errors = make([]FieldProblem, len(verr.Errors))
	for i, fe := range verr.Errors {
		p.Errors[i] = FieldProblem{Field: fe.Field, Code: fe.Code, Message: fe.Message}
	}
	return p
}

// fieldProblem returns a 400 problem of one field.
func fieldProblem(field string, code heraldtype.Code, message string) *Problem {
	return invalid(&heraldtype.ValidationError{Errors: []heraldtype.FieldError{{Field: field, Code: code, Message: message}}})
}

var (
	errUnauthorized = problem(http.StatusUnauthorized, CodeUnauthorized,
		"a valid API key is required: Authorization: Bearer hk_… (herald api-keys create)")
	errNotFound = problem(http.StatusNotFound, CodeNotFound, "no such notification")
	// errNotAcceptable answers an Accept header that admits no type the
	// API answers in; the problem itself is application/problem+json.
	errNotAcceptable = problem(http.StatusNotAcceptable, CodeNotAcceptable,
		"the API answers only application/json and application/problem+json; the Accept header admits neither")
	// errUnsupportedMediaType answers a body not declared application/json.
	errUnsupportedMediaType = problem(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
		"the body must be sent as Content-Type: application/json (charset utf-8, if named)")
	// errSlowClient answers a body that did not arrive within the read
	// timeout: the client's fault, logged at warn, never a 5xx.
	errSlowClient = problem(http.StatusRequestTimeout, CodeRequestTimeout,
		"client too slow: the request body did not arrive within the server's read timeout")
)

// asProblem maps err to the problem the client gets: a *Problem as it is,
// a validation error as 400, a database that does not answer (or is
// shutting down, or too busy) as 503, and anything else as 500.
func asProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var verr *heraldtype.ValidationError
	if errors.As(err, &verr) {
		return invalid(verr)
	}
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return problem(http.StatusRequestEntityTooLarge, heraldtype.CodeTooLarge,
			"the body is larger than "+strconv.FormatInt(maxErr.Limit, 10)+" bytes")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == pgerrcode.InsufficientPrivilege:
			p := problem(http.StatusForbidden, CodeForbidden, "the database refused this API key's producer: "+pgErr.Message)
			p.err = err
			return p
		case pgerrcode.IsConnectionException(pgErr.Code), pgerrcode.IsInsufficientResources(pgErr.Code),
			pgErr.Code == pgerrcode.AdminShutdown, pgErr.Code == pgerrcode.CrashShutdown,
			pgErr.Code == pgerrcode.CannotConnectNow, pgErr.Code == pgerrcode.QueryCanceled,
			pgErr.Code == pgerrcode.LockNotAvailable, pgErr.Code == pgerrcode.SerializationFailure,
			pgErr.Code == pgerrcode.DeadlockDetected, pgErr.Code == pgerrcode.ReadOnlySQLTransaction:
			return unavailable(err)
		}
		p := problem(http.StatusInternalServerError, CodeInternal, "internal error")
		p.err = err
		return p
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return unavailable(err)
	}
	p = problem(http.StatusInternalServerError, CodeInternal, "internal error")
	p.err = err
	return p
}

func unavailable(err error) *Problem {
	p := problem(http.StatusServiceUnavailable, CodeUnavailable, "the database is unavailable; retry later")
	p.retryAfter = RetryAfterUnavailable
	p.err = err
	return p
}

// writeProblem writes p as application/problem+json, stamped with the
// request's id.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	out := *p
	out.RequestID = requestID(r.Context())
	if out.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(out.retryAfter))
	}
	if out.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
	}
	if c := callOf(r.Context()); c != nil {
		c.err = p
	}
	writeJSONType(w, "application/problem+json", out.Status, &out)
}

// writeJSON writes v as the status's application/json body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSONType(w, "application/json", status, v)
}

func writeJSONType(w http.ResponseWriter, contentType string, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only herald's own types are written
		b = []byte(`{"type":"` + ProblemTypePrefix + `internal","title":"Internal Server Error","status":500,"code":"internal"}`)
		contentType, status = "application/problem+json", http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// sanitizeRequestID returns id when it is a sane request id to echo (1 to
// 128 printable ASCII characters), else "".
func sanitizeRequestID(id string) string {
	if id == "" || len(id) > 128 || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return ""
	}
	return id
}
