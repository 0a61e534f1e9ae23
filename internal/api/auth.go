package api

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// request is an authenticated endpoint's view of its request.
type request struct {
	*http.Request
	key     string
	keyHash [sha256.Size]byte
	call    *call
	// header is the answer's header, for the rate-limit fields.
	header http.Header
	// unmetered: the key has no rate bucket yet; inTx takes its first
	// token once the key authenticated.
	unmetered bool
}

// maxKeyLen bounds what is sent to the database as a key: a key is 46
// characters (NewSecret).
const maxKeyLen = 256

// authed wraps an endpoint: the key must be given (401), its client
// address must not have failed authentication too often (429, before any
// database work), and the key must be within its rate (429); the
// endpoint's error is answered as a problem. The endpoint authenticates
// (inTx) before it validates anything of the request, so that a caller
// without a valid key learns nothing but 401.
func (s *Server) authed(h func(w http.ResponseWriter, r *request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		addr := clientAddr(r.RemoteAddr)
		now := time.Now()
		if blocked, wait := s.guard.blocked(addr, now); blocked {
			p := problem(http.StatusTooManyRequests, CodeRateLimited,
				"too many failed authentications from this address; retry later")
			p.retryAfter = retryAfterSeconds(wait)
			setRateFields(w.Header(), s.guard.state(addr, now), now)
			writeProblem(w, r, p)
			return
		}
		key := bearer(r.Header.Get("Authorization"))
		if key == "" {
			writeProblem(w, r, errUnauthorized)
			return
		}
		if len(key) > maxKeyLen || !validText(key) { // no key of ours, and not text the database takes
			s.guard.failed(addr, now)
			setRateFields(w.Header(), s.guard.state(addr, now), now)
			writeProblem(w, r, errUnauthorized)
			return
		}
		req := &request{Request: r, key: key, keyHash: sha256.Sum256([]byte(key)), call: callOf(r.Context()),
			header: w.Header()}
		ok, wait, known := s.limiter.allowKnown(req.keyHash, now)
		if !ok {
			p := problem(http.StatusTooManyRequests, CodeRateLimited, "too many requests for this API key; retry later")
			p.retryAfter = retryAfterSeconds(wait)
			setRateFields(w.Header(), s.limiter.state(req.keyHash, now), now)
			writeProblem(w, r, p)
			return
		}
		req.unmetered = !known
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		req.Request = r.WithContext(ctx)
		err := h(w, req)
		if err == errUnauthorized {
			now := time.Now()
			s.guard.failed(addr, now)
			setRateFields(w.Header(), s.guard.state(addr, now), now)
		}
		if err != nil {
			writeProblem(w, r, asProblem(err))
		}
	}
}

func retryAfterSeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}

// validText reports whether s is text PostgreSQL can hold: valid UTF-8
// without NUL.
func validText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// pathText returns r's path parameter name, or a 400 problem naming it
// when it is not valid text (validText).
func pathText(r *request, name string) (string, error) {
	v := r.PathValue(name)
	if !validText(v) {
		return "", fieldProblem(name, heraldtype.CodeInvalidField, name+" must be UTF-8 text without NUL")
	}
	return v, nil
}
