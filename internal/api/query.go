package api

import (
	"encoding/json"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// documentedQuery returns, by route pattern ("GET /v1/notifications"), the
// query parameters the document gives each operation: the document is the
// one list of them, so that the server refuses what it does not give.
var documentedQuery = sync.OnceValue(func() map[string][]string {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		panic("api: openapi.json: " + err.Error()) // embedded, and tested
	}
	out := map[string][]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			names := []string{}
			for _, p := range op.Parameters {
				if p.In == "query" {
					names = append(names, p.Name)
				}
			}
			out[strings.ToUpper(method)+" "+path] = names
		}
	}
	return out
})

// checkQuery returns a 400 problem naming the first query parameter of r
// that its operation does not take, or that is given more than once, or
// for a query that does not parse; nil when every parameter is one the
// document gives the operation, once.
func checkQuery(r *request) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fieldProblem("query", heraldtype.CodeInvalidField, "the query string does not parse: "+err.Error())
	}
	allowed := documentedQuery()[r.Pattern]
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		field := name
		if !validText(field) {
			field = "query"
		}
		if !slices.Contains(allowed, name) {
			takes := "no query parameters"
			if len(allowed) > 0 {
				takes = "only " + strings.Join(allowed, ", ")
			}
			return fieldProblem(field, heraldtype.CodeInvalidField, "unknown query parameter; this endpoint takes "+takes)
		}
		if len(q[name]) > 1 {
			return fieldProblem(field, heraldtype.CodeInvalidField, name+" is given more than once")
		}
	}
	return nil
}
