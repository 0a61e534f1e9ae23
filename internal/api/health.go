package api

import (
	"context"
	"net/http"
	"time"
)

// Health is the body of /healthz and /readyz, as the metrics listener's.
type Health struct {
	OK       bool   `json:"ok"`
	Database bool   `json:"database"`
	Error    string `json:"error,omitempty"`
}

// healthz answers 200 while the API's database login answers a ping.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.health(w, r, nil)
}

// readyz answers 200 when the database answers and Config.ReadyFunc (the
// migrations) is satisfied.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	s.health(w, r, s.cfg.ReadyFunc)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, ready func(context.Context) error) {
	if p := checkAccept(r); p != nil {
		writeProblem(w, r, p)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	h := Health{}
	if err := s.pool.Ping(ctx); err != nil {
		h.Error = "database: " + err.Error()
	} else {
		h.Database = true
		h.OK = true
		if ready != nil {
			if err := ready(ctx); err != nil {
				h.OK, h.Error = false, err.Error()
			}
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	status := http.StatusOK
	if !h.OK {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}
