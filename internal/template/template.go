// Package template is herald's producer templates: one version of a
// producer's named text, per locale and channel (herald.templates), parsed,
// cached and rendered on a budget. The SQL door, the Go client and the API
// check a templated intent with it when they accept it; the dispatcher
// renders it when it delivers; both decode the intent's data with
// DecodeData.
//
// Parse compiles a version: SMS bodies, e-mail
// subjects and text bodies and the strings of a webhook's JSON with Go's
// text/template, e-mail HTML bodies with html/template, whose contextual
// auto-escaping escapes every value for where it lands (element text,
// attribute, URL, script), so data cannot inject markup. Both are the
// standard library's: maintained with Go itself, no dependency, and their
// data is only ever values: a template is parsed from the template's text
// alone, and the intent's data (decoded JSON: strings, numbers, booleans,
// arrays, objects) is what it executes on, never parsed itself. Missing
// keys are errors (missingkey=error), so a message is never rendered
// half-filled.
//
// A template is a producer's code run by the engine: Parse accepts only a
// small part of the language, and every rendering runs on a fixed budget
// of steps, built bytes and output (budget.go says what and why).
//
// Render picks the locale along a fallback chain (pt-BR, then pt, then the
// template's default) per channel, and says which it used: the dispatcher
// records that in routes.resolved_locale.
package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// MaxRenderedBytes bounds what one rendering of one part (a body, a
// subject, a webhook string) may produce.
const MaxRenderedBytes = 256 << 10

// localeRE is what a locale name may be, as the directory's locale column.
var localeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,35}$`)

// NameRE is what a template name may be (templates_name_check).
var NameRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// LocaleSource is one locale's text of a template: the value of one key of
// herald.templates.locales. Each channel it gives is rendered into the
// content that channel's intents carry.
type LocaleSource struct {
	// SMS is the SMS body's template.
	SMS *heraldtype.SMSContent `json:"sms,omitempty"`
	// Email is the e-mail's subject, text and HTML templates; HTML is an
	// html/template.
	Email *heraldtype.EmailContent `json:"email,omitempty"`
	// Webhook is a JSON value whose strings are templates; the rest is
	// copied as it is.
	Webhook json.RawMessage `json:"webhook,omitempty"`
}

// Template is one parsed version of a template, safe for concurrent use.
type Template struct {
	// Producer, Name and Version identify the version.
	Producer, Name string
	Version        int
	// DefaultLocale is the locale rendered when no other matches.
	DefaultLocale string

	locales map[string]*localeTemplates // by normalized locale name
	names   []string                    // locale names as written, sorted
	vars    []string
	nodes   int // parse nodes of every part
}

// localeTemplates is one locale's parsed templates.
type localeTemplates struct {
	name                string // as written
	sms                 *part
	subject, text, html *part
	hasEmail            bool
	webhook             any // the decoded JSON, each string replaced by a *part
}

// Parse compiles one version of a template from its stored form: the
// JSON object of herald.templates.locales. It returns an error naming the
// locale and part that is wrong: an unknown field, a locale name that is
// not one, a channel without its text, text that does not parse, or
// anything a template may not do (budget.go): a function or
// action outside the allowed ones, a {{range}} over anything but a field
// or variable, a printf format that could write more than its arguments,
// text over MaxTemplateBytes, more than MaxTemplateNodes parse nodes, or
// nesting deeper than MaxTemplateDepth.
func Parse(producer, name string, version int, defaultLocale string, locales []byte) (*Template, error) {
	if !NameRE.MatchString(name) {
		return nil, fmt.Errorf("template name %q is not 1 to 128 letters, digits or . _ : -", name)
	}
	if len(locales) > MaxTemplateBytes {
		return nil, fmt.Errorf("template %s: the locales are %d bytes; the limit is %d", name, len(locales), MaxTemplateBytes)
	}
	var src map[string]LocaleSource
	dec := json.NewDecoder(bytes.NewReader(locales))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&src); err != nil {
		return nil, fmt.Errorf("template %s: locales: %w", name, err)
	}
	t := &Template{Producer: producer, Name: name, Version: version, DefaultLocale: defaultLocale,
		locales: make(map[string]*localeTemplates, len(src))}
	if _, ok := src[defaultLocale]; !ok {
		return nil, fmt.Errorf("template %s: the default locale %q has no text", name, defaultLocale)
	}
	vars := map[string]bool{}
	for loc, ls := range src {
		if !localeRE.MatchString(loc) {
			return nil, fmt.Errorf("template %s: locale %q is not 1 to 35 letters, digits, - or _", name, loc)
		}
		key := normLocale(loc)
		if _, dup := t.locales[key]; dup {
			return nil, fmt.Errorf("template %s: locale %q is given twice", name, loc)
		}
		lt, err := parseLocale(name+"/"+loc, ls, vars, &t.nodes)
		if err != nil {
			return nil, err
		}
		lt.name = loc
		t.locales[key] = lt
		t.names = append(t.names, loc)
	}
	sort.Strings(t.names)
	for v := range vars {
		t.vars = append(t.vars, v)
	}
	sort.Strings(t.vars)
	return t, nil
}

// parseLocale parses one locale's parts, adding the root variables they
// use to vars.
func parseLocale(where string, ls LocaleSource, vars map[string]bool, nodes *int) (*localeTemplates, error) {
	lt := &localeTemplates{}
	var err error
	if ls.SMS == nil && ls.Email == nil && len(ls.Webhook) == 0 {
		return nil, fmt.Errorf("template %s: no channel's text (sms, email or webhook)", where)
	}
	if ls.SMS != nil {
		if strings.TrimSpace(ls.SMS.Body) == "" {
			return nil, fmt.Errorf("template %s/sms: body is empty", where)
		}
		if lt.sms, err = parseText(where+"/sms.body", ls.SMS.Body, vars, nodes); err != nil {
			return nil, err
		}
	}
	if e := ls.Email; e != nil {
		lt.hasEmail = true
		if strings.TrimSpace(e.Subject) == "" {
			return nil, fmt.Errorf("template %s/email: subject is empty", where)
		}
		if strings.TrimSpace(e.Text) == "" && strings.TrimSpace(e.HTML) == "" {
			return nil, fmt.Errorf("template %s/email: needs a text or html body", where)
		}
		if lt.subject, err = parseText(where+"/email.subject", e.Subject, vars, nodes); err != nil {
			return nil, err
		}
		if e.Text != "" {
			if lt.text, err = parseText(where+"/email.text", e.Text, vars, nodes); err != nil {
				return nil, err
			}
		}
		if e.HTML != "" {
			if lt.html, err = parseHTML(where+"/email.html", e.HTML, vars, nodes); err != nil {
				return nil, err
			}
		}
	}
	if len(ls.Webhook) > 0 {
		var doc any
		d := json.NewDecoder(bytes.NewReader(ls.Webhook))
		d.UseNumber()
		if err := d.Decode(&doc); err != nil {
			return nil, fmt.Errorf("template %s/webhook: %w", where, err)
		}
		if lt.webhook, err = parseJSONStrings(where+"/webhook", doc, vars, nodes); err != nil {
			return nil, err
		}
	}
	return lt, nil
}

// parseText parses one text/template part.
func parseText(where, text string, vars map[string]bool, nodes *int) (*part, error) {
	t, err := template.New(where).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", where, err)
	}
	if len(t.Templates()) > 1 {
		return nil, fmt.Errorf("template %s: {{define}} is not allowed: each part is one template", where)
	}
	p := &part{where: where, text: t}
	if p.steps, err = checkTree(where, t.Tree, vars, nodes, false); err != nil {
		return nil, err
	}
	return p, nil
}

// parseHTML parses one html/template part.
func parseHTML(where, text string, vars map[string]bool, nodes *int) (*part, error) {
	h, err := htmltemplate.New(where).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", where, err)
	}
	if len(h.Templates()) > 1 {
		return nil, fmt.Errorf("template %s: {{define}} is not allowed: each part is one template", where)
	}
	p := &part{where: where, html: h}
	if p.steps, err = checkTree(where, h.Tree, vars, nodes, true); err != nil {
		return nil, err
	}
	return p, nil
}

// parseJSONStrings replaces every string of the decoded JSON v (object keys
// excepted) by its parsed template.
func parseJSONStrings(where string, v any, vars map[string]bool, nodes *int) (any, error) {
	switch x := v.(type) {
	case string:
		return parseText(where, x, vars, nodes)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			p, err := parseJSONStrings(fmt.Sprintf("%s[%d]", where, i), e, vars, nodes)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			p, err := parseJSONStrings(where+"."+k, e, vars, nodes)
			if err != nil {
				return nil, err
			}
			out[k] = p
		}
		return out, nil
	default:
		return v, nil
	}
}

// checkTree checks one part's parse tree against what a template may do
// (budget.go), counting its nodes into nodes and collecting the
// root variables it uses, and returns the steps one execution costs
// before its ranges.
func checkTree(where string, tree *parse.Tree, vars map[string]bool, nodes *int, html bool) (int, error) {
	c := &treeCheck{where: where, tree: tree, vars: vars, nodes: nodes, html: html}
	if err := c.count(nil); err != nil { // the part itself
		return 0, err
	}
	if tree == nil || tree.Root == nil {
		return 1, nil
	}
	s, err := c.list(tree.Root, true)
	return 1 + s, err
}

// Variables returns the names of the data's top-level keys the template
// uses, in any locale or channel, sorted. An intent's data must hold each.
func (t *Template) Variables() []string { return slices.Clone(t.vars) }

// Locales returns the template's locale names as written, sorted.
func (t *Template) Locales() []string { return slices.Clone(t.names) }

// Channels returns the channels the default locale has text for, in the
// order email, sms, webhook: the channels an intent naming the template
// may list.
func (t *Template) Channels() []string {
	d := t.locales[normLocale(t.DefaultLocale)]
	var out []string
	if d.hasEmail {
		out = append(out, channel.Email)
	}
	if d.sms != nil {
		out = append(out, channel.SMS)
	}
	if d.webhook != nil {
		out = append(out, channel.Webhook)
	}
	return out
}

// MissingData returns the variables the template uses that data lacks,
// sorted.
func (t *Template) MissingData(data map[string]any) []string {
	var out []string
	for _, v := range t.vars {
		if _, ok := data[v]; !ok {
			out = append(out, v)
		}
	}
	return out
}

// normLocale folds a locale name for matching: lower case, '_' as '-'.
func normLocale(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }

// Fallbacks returns the locales tried for want, most specific first:
// "pt-BR" gives "pt-br", "pt" (folded: lower case, "-" for "_"); "" gives
// none. Render then tries the template's default.
func Fallbacks(want string) []string {
	want = normLocale(strings.TrimSpace(want))
	var out []string
	for want != "" {
		out = append(out, want)
		i := strings.LastIndexByte(want, '-')
		if i < 0 {
			break
		}
		want = want[:i]
	}
	return out
}

// pick returns the most specific locale of the chain for want that has
// text for ch, or nil.
func (t *Template) pick(want, ch string) *localeTemplates {
	for _, l := range append(Fallbacks(want), normLocale(t.DefaultLocale)) {
		if lt := t.locales[l]; lt != nil && lt.has(ch) {
			return lt
		}
	}
	return nil
}

func (lt *localeTemplates) has(ch string) bool {
	switch ch {
	case channel.SMS:
		return lt.sms != nil
	case channel.Email:
		return lt.hasEmail
	case channel.Webhook:
		return lt.webhook != nil
	}
	return false
}

// ErrNoChannel is returned by Render for a channel the template has no
// text for in any locale of the chain.
var ErrNoChannel = errors.New("the template has no text for this channel")

// Rendered is one channel's text rendered for one recipient.
type Rendered struct {
	// Channel is the channel rendered.
	Channel string
	// Locale is the locale used, as the template writes it.
	Locale string
	// Body is an SMS's body.
	Body string
	// Subject, Text and HTML are an e-mail's.
	Subject, Text, HTML string
	// Webhook is a webhook's canonical JSON.
	Webhook json.RawMessage
}

// Content returns r as the content JSON an intent of its channel carries:
// {"body"} for sms, {"html", "subject", "text"} for email (empty bodies
// left out), the JSON value for webhook; canonical, as intake stores
// content.
func (r *Rendered) Content() json.RawMessage {
	var b []byte
	switch r.Channel {
	case channel.SMS:
		b = append(b, `{"body":`...)
		b = canonjson.AppendString(b, r.Body)
		b = append(b, '}')
	case channel.Email:
		b = append(b, '{')
		if r.HTML != "" {
			b = append(b, `"html":`...)
			b = canonjson.AppendString(b, r.HTML)
			b = append(b, ',')
		}
		b = append(b, `"subject":`...)
		b = canonjson.AppendString(b, r.Subject)
		if r.Text != "" {
			b = append(b, `,"text":`...)
			b = canonjson.AppendString(b, r.Text)
		}
		b = append(b, '}')
	default:
		b = r.Webhook
	}
	return b
}

// Texts calls fn with each text r holds (the webhook's canonical JSON
// whole): what the blocklist reads.
func (r *Rendered) Texts(fn func(part, text string)) {
	switch r.Channel {
	case channel.SMS:
		fn("sms.body", r.Body)
	case channel.Email:
		fn("email.subject", r.Subject)
		fn("email.text", r.Text)
		fn("email.html", r.HTML)
	default:
		fn("webhook", string(r.Webhook))
	}
}

// Render renders the template's ch part for a recipient whose locale is
// want (falling back along Fallbacks(want), then the default locale), with
// data, on a budget of its own (budget.go). Rendered.Locale says
// which locale it used. An error names the part and what failed (a
// missing key, a value of the wrong kind, a budget exceeded, wrapping
// ErrOverBudget, a subject with a line break); it wraps ErrNoChannel for a
// channel the template has no text for.
func (t *Template) Render(want, ch string, data map[string]any) (*Rendered, error) {
	return t.render(want, ch, data, &budget{})
}

// Budget is a budget several renderings share, so that together they
// cost at most what one rendering may: the content check renders every
// locale of an intent on one. Its zero value is a full budget.
type Budget struct{ b budget }

// RenderOn is Render charged to the shared budget b.
func (t *Template) RenderOn(want, ch string, data map[string]any, b *Budget) (*Rendered, error) {
	return t.render(want, ch, data, &b.b)
}

// render is Render on budget b.
func (t *Template) render(want, ch string, data map[string]any, b *budget) (*Rendered, error) {
	lt := t.pick(want, ch)
	if lt == nil {
		return nil, fmt.Errorf("template %s version %d, channel %s: %w", t.Name, t.Version, ch, ErrNoChannel)
	}
	b.out = 0
	r := &Rendered{Channel: ch, Locale: lt.name}
	var err error
	switch ch {
	case channel.SMS:
		if r.Body, err = lt.sms.exec(data, b); err != nil {
			return nil, err
		}
	case channel.Email:
		if r.Subject, err = lt.subject.exec(data, b); err != nil {
			return nil, err
		}
		if strings.ContainsAny(r.Subject, "\r\n") {
			return nil, fmt.Errorf("template %s: the rendered subject contains a line break", lt.subject.where)
		}
		if lt.text != nil {
			if r.Text, err = lt.text.exec(data, b); err != nil {
				return nil, err
			}
		}
		if lt.html != nil {
			if r.HTML, err = lt.html.exec(data, b); err != nil {
				return nil, err
			}
		}
	case channel.Webhook:
		v, err := execJSON(lt.webhook, data, b)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(v)
		if err == nil {
			raw, err = canonjson.Canonical(raw)
		}
		if err != nil {
			return nil, fmt.Errorf("template %s version %d, webhook: %w", t.Name, t.Version, err)
		}
		r.Webhook = raw
	}
	return r, nil
}

// execJSON renders every template of a parsed webhook value.
func execJSON(v any, data map[string]any, b *budget) (any, error) {
	switch x := v.(type) {
	case *part:
		return x.exec(data, b)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := execJSON(e, data, b)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := execJSON(e, data, b)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	default:
		return v, nil
	}
}
