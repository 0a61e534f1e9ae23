package api

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// acceptable reports whether an Accept header admits an answer of
// application/json or application/problem+json, the only types the API
// answers in: an absent header does, as does a media range matching either
// with a q above 0.
func acceptable(h []string) bool {
	if len(h) == 0 {
		return true
	}
	for _, line := range h {
		for _, part := range strings.Split(line, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err != nil || v <= 0 {
					continue
				}
			}
			switch mt {
			case "*/*", "application/*", "application/json", "application/problem+json":
				return true
			}
		}
	}
	return false
}

// jsonBody reports whether a Content-Type header names application/json,
// in UTF-8 (the default, and the only charset it may name).
func jsonBody(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// checkAccept returns the 406 problem when r's Accept header admits no
// answer the API gives.
func checkAccept(r *http.Request) *Problem {
	if acceptable(r.Header.Values("Accept")) {
		return nil
	}
	return errNotAcceptable
}

// checkMedia returns the 406 problem of checkAccept, or the 415 problem
// when r has a body (of length body) that is not declared as
// application/json. An empty body needs no Content-Type.
func checkMedia(r *http.Request, body int) *Problem {
	if p := checkAccept(r); p != nil {
		return p
	}
	if body == 0 && r.Header.Get("Content-Type") == "" {
		return nil
	}
	if !jsonBody(r.Header.Get("Content-Type")) {
		return errUnsupportedMediaType
	}
	return nil
}
