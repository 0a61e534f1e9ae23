package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pageData is what every template gets: the session's login and token,
// the page's title, and the page's own data in Page.
type pageData struct {
	Title   string
	Login   string
	Role    string
	CSRF    string
	Nav     string
	Message string
	Error   string
	// Refused is set when the database refused an action for want of
	// privilege: the page says so in those words.
	Refused string
	Next    string
	User    string
	// Live makes the page refresh its [data-live] parts every few seconds.
	Live bool
	Page any
}

// pageNames are the templates, each templates/NAME.html with layout.html.
var pageNames = []string{"login", "message", "overview", "providers", "dead_letters", "replay", "replay_progress",
	"notification", "held", "held_one", "campaigns", "malformed", "malformed_one", "audit"}

var funcs = template.FuncMap{
	"when": when,
	"ago":  ago,
	"pct":  func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"secs": func(f float64) string {
		return (time.Duration(f * float64(time.Second))).Round(time.Millisecond).String()
	},
	"redact":    redactJSON,
	"safeURL":   safeURL,
	"spark":     spark,
	"routeRef":  func(nid, rid string) string { return nid + "/" + rid },
	"highlight": highlight,
}

func parseTemplates() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render writes page name with data, the session's login and token set
// when s is not nil.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, s *session, data *pageData) {
	if s != nil {
		data.Login, data.Role, data.CSRF = s.login.Name, s.role(), s.csrf
	}
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, data); err != nil {
		c.logger.Error("console: render page", "page", name, "err", err)
		http.Error(w, "the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders the page with the error of a query or an action: a refusal
// for want of privilege in plain words (an auditor trying to act), any
// other error as it is.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, name string, data *pageData, err error) {
	var pgErr *pgconn.PgError
	status := http.StatusInternalServerError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		data.Refused = fmt.Sprintf("The database refused this: your login %s (%s) may not do it. %s",
			s.login.Name, s.role(), pgErr.Message)
		status = http.StatusForbidden
	} else {
		data.Error = err.Error()
	}
	c.logger.Info("console: request failed", "login", s.login.Name, "path", r.URL.Path, "err", err)
	c.render(w, r, status, name, s, data)
}

func when(t any) string {
	switch v := t.(type) {
	case time.Time:
		if v.IsZero() {
			return ""
		}
		return v.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if v == nil {
			return ""
		}
		return when(*v)
	}
	return ""
}

func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

// secretKey matches the JSON keys whose values the console never shows.
var secretKey = regexp.MustCompile(`(?i)secret|password|passwd|token|api_?key|credential|authorization|settings|private`)

// redactJSON returns the JSON text s indented, with the values of
// secret-looking keys masked at any depth; text that is not JSON is
// returned as it is (the template escapes it).
func redactJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	// The template escapes the text; JSON's own escaping of <, > and &
	// would only hide what the entry held.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(mask(v)); err != nil {
		return s
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func mask(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey.MatchString(k) {
				x[k] = "••••••"
			} else {
				x[k] = mask(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = mask(e)
		}
	}
	return v
}

// safeURL returns u without its user information and query, which may
// carry credentials.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

// segment is a piece of a held body, Match when the rule matched it.
type segment struct {
	Text  string
	Match bool
}

// highlight splits body around what a content rule of kind ("word" or
// "regex") and pattern matches in it, so the page marks it: a word
// case-insensitively, a regular expression as written. The engine matches
// the text folded (confusables, accents) as well; what only the folded
// text matched is not marked. A rule deleted since (kind "") marks nothing.
func highlight(body, kind, pattern string) []segment {
	var re *regexp.Regexp
	var err error
	switch kind {
	case "word":
		re, err = regexp.Compile(`(?i)` + regexp.QuoteMeta(strings.TrimSpace(pattern)))
	case "regex":
		re, err = regexp.Compile(pattern)
	}
	if re == nil || err != nil {
		return []segment{{Text: body}}
	}
	var out []segment
	last := 0
	for _, m := range re.FindAllStringIndex(body, 200) {
		if m[1] == m[0] {
			continue
		}
		if m[0] > last {
			out = append(out, segment{Text: body[last:m[0]]})
		}
		out = append(out, segment{Text: body[m[0]:m[1]], Match: true})
		last = m[1]
	}
	if last < len(body) {
		out = append(out, segment{Text: body[last:]})
	}
	return out
}

// spark draws values as an SVG polyline's points in a 120×24 box.
func spark(values []int64) string {
	if len(values) == 0 {
		return ""
	}
	var top int64 = 1
	for _, v := range values {
		top = max(top, v)
	}
	var b strings.Builder
	step := 120.0 / float64(max(len(values)-1, 1))
	for i, v := range values {
		fmt.Fprintf(&b, "%.1f,%.1f ", float64(i)*step, 23-22*float64(v)/float64(top))
	}
	return strings.TrimSpace(b.String())
}
