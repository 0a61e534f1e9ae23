package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// The names of the API's two limits in the RateLimit-Policy and RateLimit
// fields.
const (
	// keyPolicy is the requests of one API key (Config.RateLimit).
	keyPolicy = "key"
	// authFailurePolicy is the failed authentications of one client
	// address (Config.AuthFailureRate).
	authFailurePolicy = "auth-failures"
)

// rateState is where a token bucket stands after a request: what
// RateLimit-Policy and RateLimit say of it.
type rateState struct {
	policy    string
	quota     int           // the bucket's size
	window    int           // seconds an empty bucket takes to fill
	remaining int           // whole tokens left
	reset     time.Duration // until the bucket is full again
}

// bucketState returns the state of a bucket of rate r and size burst that
// holds tokens.
func bucketState(policy string, r rate.Limit, burst int, tokens float64) rateState {
	tokens = min(max(tokens, 0), float64(burst))
	return rateState{
		policy:    policy,
		quota:     burst,
		window:    max(1, int(math.Ceil(float64(burst)/float64(r)))),
		remaining: int(tokens),
		reset:     time.Duration((float64(burst) - tokens) / float64(r) * float64(time.Second)),
	}
}

// setRateFields writes st into h as the IETF httpapi draft's fields
// (RateLimit-Policy: "key";q=400;w=2 and RateLimit: "key";r=399;t=1, t the
// seconds until the bucket is full again) and the X-RateLimit-Limit,
// -Remaining and -Reset fields many client libraries read (Reset in Unix
// seconds, as GitHub's API sends it).
func setRateFields(h http.Header, st rateState, now time.Time) {
	reset := int64(math.Ceil(st.reset.Seconds()))
	h.Set("RateLimit-Policy", fmt.Sprintf("%q;q=%d;w=%d", st.policy, st.quota, st.window))
	h.Set("RateLimit", fmt.Sprintf("%q;r=%d;t=%d", st.policy, st.remaining, reset))
	h.Set("X-RateLimit-Limit", strconv.Itoa(st.quota))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(st.remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(now.Unix()+reset, 10))
}

// rateFields writes r's key's rate-limit fields into r's answer, when the
// server limits keys.
func (s *Server) rateFields(r *request) {
	if s.limiter == nil || r.header == nil {
		return
	}
	now := time.Now()
	setRateFields(r.header, s.limiter.state(r.keyHash, now), now)
}
