package api

import (
	"net/http"
	"strings"
)

// routes returns the API's router: the standard library's ServeMux with
// method patterns. Its patterns are the document's paths (a test checks).
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/notifications", s.authed(s.submit))
	mux.HandleFunc("POST /v1/notifications/batch", s.authed(s.submitBatch))
	mux.HandleFunc("GET /v1/notifications", s.authed(s.list))
	mux.HandleFunc("GET /v1/notifications/{id}", s.authed(s.get))
	mux.HandleFunc("POST /v1/notifications/{id}/cancel", s.authed(s.cancel))
	mux.HandleFunc("GET /v1/recipients/{user_id}", s.authed(s.getRecipient))
	mux.HandleFunc("PUT /v1/recipients/{user_id}", s.authed(s.putRecipient))
	mux.HandleFunc("DELETE /v1/recipients/{user_id}", s.authed(s.deleteRecipient))
	mux.HandleFunc("GET /v1/callback-subscription", s.authed(s.getSubscription))
	mux.HandleFunc("PUT /v1/callback-subscription", s.authed(s.putSubscription))
	mux.HandleFunc("DELETE /v1/callback-subscription", s.authed(s.deleteSubscription))
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		if p := checkAccept(r); p != nil {
			writeProblem(w, r, p)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(openAPIDocument)
	})
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.unmatched(mux, w, r) })
	return mux
}

// endpointPatterns are the patterns routes registers, for the drift test.
func endpointPatterns() []string {
	return []string{
		"POST /v1/notifications", "POST /v1/notifications/batch", "GET /v1/notifications",
		"GET /v1/notifications/{id}", "POST /v1/notifications/{id}/cancel",
		"GET /v1/recipients/{user_id}", "PUT /v1/recipients/{user_id}", "DELETE /v1/recipients/{user_id}",
		"GET /v1/callback-subscription", "PUT /v1/callback-subscription", "DELETE /v1/callback-subscription",
		"GET /openapi.json", "GET /healthz", "GET /readyz",
	}
}

// unmatched answers a request no route took: 405 with Allow when its path
// has routes of other methods, else 404, as problems.
func (s *Server) unmatched(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, r, problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			r.Method+" is not allowed here; allowed: "+strings.Join(allow, ", ")))
		return
	}
	writeProblem(w, r, problem(http.StatusNotFound, CodeNotFound, "no such endpoint"))
}
