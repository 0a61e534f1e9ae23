package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/gsm7"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/template"
)

// DefaultRulesMaxAge is how long a Checker uses the content rules it read
// before reading them again: a rule added or deleted takes effect within
// it.
const DefaultRulesMaxAge = 5 * time.Second

// Checker is intake's step after package intake's validation, for what
// needs the database. An intent naming a template is checked against the
// template's version (it exists, it has text for every listed channel, the
// data holds every variable, every locale renders with the data, and an
// SMS fits the segment cap in every locale) and its payload pinned to that
// version. Then every intent's text (each locale's rendering, for a
// templated one) is checked against the content blocklist
// (herald.content_rules): a refuse rule refuses it with content_blocked,
// a review rule holds it. Both doors run it between intake.Validate and
// accept.Accept. An intent without a template costs nothing here but the
// blocklist's scan, and only when there are rules; the rules are read at
// most once per RulesMaxAge. Safe for concurrent use.
type Checker struct {
	templates template.TemplateCache
	maxAge    time.Duration
	log       *slog.Logger

	mu       sync.Mutex
	rules    *ruleSet
	loadedAt time.Time
}

// CheckerConfig configures a Checker; the zero value is valid.
type CheckerConfig struct {
	// RulesMaxAge is how long the content rules read are used before they
	// are read again; default DefaultRulesMaxAge, negative means every
	// Check reads them (tests).
	RulesMaxAge time.Duration
	// Logger receives a warning for each rule that does not compile; nil
	// discards.
	Logger *slog.Logger
}

// NewChecker returns a Checker; a nil cfg means the defaults.
func NewChecker(cfg *CheckerConfig) *Checker {
	if cfg == nil {
		cfg = &CheckerConfig{}
	}
	c := &Checker{maxAge: cfg.RulesMaxAge, log: cfg.Logger}
	if c.maxAge == 0 {
		c.maxAge = DefaultRulesMaxAge
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Verdict is Check's decision about one intent: accept it (both nil),
// refuse it (Err), or hold it for review (Held).
type Verdict struct {
	// Err is a *heraldtype.ValidationError refusing the intent.
	Err error
	// Held is the review rule that matched, and where.
	Held *Match
}

// Match is a blocklist rule an intent's text matched.
type Match struct {
	Rule Rule
	// Part is the JSON path of the text: "content.sms.body", or for a
	// templated intent "template:fr/email.subject".
	Part string
}

// CheckOpts are per-call options of Check; nil means none.
type CheckOpts struct {
	// Reviewed, if set, says which intents an operator released: the
	// blocklist lets them through.
	Reviewed []bool
}

// ruleSet is the rules compiled: the global ones, and each producer's.
type ruleSet struct {
	global     *Blocklist
	byProducer map[string]*Blocklist
}

// Check checks vs, read through db (the submitting login's pool or
// transaction: row-level security shows a producer only its own templates
// and rules, and the global ones), against lim, and returns one Verdict
// per intent. It rewrites each templated intent's PayloadJSON to name the
// version it was checked against, and its sms routes' encoding and
// segments to the most any locale needs. The error is the database's,
// which refuses nothing: the caller fails the whole submit.
func (c *Checker) Check(ctx context.Context, db store.DBTX, vs []*intake.Validated, lim intake.Limits, opts *CheckOpts) ([]Verdict, error) {
	lim = lim.WithDefaults()
	out := make([]Verdict, len(vs))
	var rules *ruleSet
	if len(vs) > 0 {
		var err error
		if rules, err = c.ruleSet(ctx, db); err != nil {
			return nil, err
		}
	}
	for i, v := range vs {
		if v == nil {
			continue
		}
		var texts []text
		if v.Intent.Template != nil {
			var err error
			out[i].Err, texts, err = c.checkTemplated(ctx, db, v, lim)
			if err != nil {
				return nil, err
			}
			if out[i].Err != nil {
				continue
			}
		}
		if rules == nil || (opts != nil && i < len(opts.Reviewed) && opts.Reviewed[i]) {
			continue
		}
		if v.Intent.Template == nil {
			texts = contentTexts(&v.Intent)
		}
		m := rules.match(v.Intent.Producer, texts)
		switch {
		case m == nil:
		case m.Rule.Mode == ModeReview:
			out[i].Held = m
		default:
			out[i].Err = refuse(m.Part, heraldtype.CodeContentBlocked,
				fmt.Sprintf("the text matches %s", &m.Rule))
		}
	}
	return out, nil
}

// text is one text of an intent, and where it is.
type text struct{ part, s string }

// contentTexts returns the texts of an intent with content.
func contentTexts(in *heraldtype.Intent) []text {
	var out []text
	if c := in.Content.SMS; c != nil {
		out = append(out, text{"content.sms.body", c.Body})
	}
	if c := in.Content.Email; c != nil {
		out = append(out, text{"content.email.subject", c.Subject}, text{"content.email.text", c.Text}, text{"content.email.html", c.HTML})
	}
	if len(in.Content.Webhook) > 0 {
		out = append(out, text{"content.webhook", string(in.Content.Webhook)})
		// Its strings decoded too: a JSON escape ("sp\u0061m") is
		// another way to write a letter.
		var v any
		if json.Unmarshal(in.Content.Webhook, &v) == nil {
			var b strings.Builder
			jsonStrings(v, &b)
			if b.Len() > 0 {
				out = append(out, text{"content.webhook", b.String()})
			}
		}
	}
	return out
}

// jsonStrings writes the strings of v (decoded JSON: keys and values),
// one a line.
func jsonStrings(v any, b *strings.Builder) {
	switch x := v.(type) {
	case string:
		b.WriteString(x)
		b.WriteByte('\n')
	case []any:
		for _, e := range x {
			jsonStrings(e, b)
		}
	case map[string]any:
		for k, e := range x {
			b.WriteString(k)
			b.WriteByte('\n')
			jsonStrings(e, b)
		}
	}
}

// match returns the first rule of producer's and the global rules that a
// text matches (a refuse rule before a review rule), or nil.
func (rs *ruleSet) match(producer string, texts []text) *Match {
	var review *Match
	for _, b := range []*Blocklist{rs.global, rs.byProducer[producer]} {
		for _, t := range texts {
			if r := b.Match(t.s); r != nil {
				if r.Mode != ModeReview {
					return &Match{Rule: *r, Part: t.part}
				}
				if review == nil {
					review = &Match{Rule: *r, Part: t.part}
				}
			}
		}
	}
	return review
}

// ruleSet returns the compiled rules, reading them again if they are older
// than maxAge; nil when there are none.
func (c *Checker) ruleSet(ctx context.Context, db store.DBTX) (*ruleSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loadedAt.IsZero() && c.maxAge > 0 && time.Since(c.loadedAt) < c.maxAge {
		return c.rules, nil
	}
	rows, err := store.New().ContentRuleList(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("read content rules: %w", err)
	}
	c.rules, c.loadedAt = compileRules(rows, c.log), time.Now()
	return c.rules, nil
}

// compileRules compiles rows, global and per producer; nil if none.
func compileRules(rows []store.ContentRuleListRow, log *slog.Logger) *ruleSet {
	if len(rows) == 0 {
		return nil
	}
	byProducer := map[string][]Rule{}
	for _, r := range rows {
		byProducer[r.Producer] = append(byProducer[r.Producer], Rule{ID: r.ID, Producer: r.Producer, Kind: r.Kind, Pattern: r.Pattern, Mode: r.Mode})
	}
	rs := &ruleSet{byProducer: map[string]*Blocklist{}}
	for p, rules := range byProducer {
		b := Compile(rules)
		for _, err := range b.Invalid {
			log.Warn("content rule left out", slog.Any("err", err))
		}
		if p == "" {
			rs.global = b
		} else {
			rs.byProducer[p] = b
		}
	}
	return rs
}

// checkTemplated checks one templated intent and returns its texts as
// every locale renders them; the first result refuses it, the last is a
// database error.
func (c *Checker) checkTemplated(ctx context.Context, db store.DBTX, v *intake.Validated, lim intake.Limits) (error, []text, error) {
	in := &v.Intent
	ref := *in.Template
	t, err := c.templates.Get(ctx, db, in.Producer, ref.Name, ref.Version)
	switch {
	case errors.Is(err, template.ErrTemplateNotFound):
		msg := fmt.Sprintf("producer %s has no template %s", in.Producer, ref.Name)
		if ref.Version > 0 {
			msg = fmt.Sprintf("producer %s has no version %d of template %s", in.Producer, ref.Version, ref.Name)
		}
		return refuseT("template.name", heraldtype.CodeUnknownTemplate, msg)
	case err != nil && isParseError(err):
		return refuseT("template.name", heraldtype.CodeInvalidField, "the stored template is refused: "+err.Error())
	case err != nil:
		return nil, nil, err
	}
	var fes []heraldtype.FieldError
	offered := t.Channels()
	for _, ch := range in.Channels {
		if !contains(offered, ch) {
			fes = append(fes, heraldtype.FieldError{Field: "template.name", Code: heraldtype.CodeMissingContent,
				Message: fmt.Sprintf("template %s version %d has no %s text in its default locale %s", t.Name, t.Version, ch, t.DefaultLocale)})
		}
	}
	for _, name := range t.MissingData(in.Data) {
		fes = append(fes, heraldtype.FieldError{Field: "data." + name, Code: heraldtype.CodeMissingField,
			Message: fmt.Sprintf("template %s version %d uses %s, which data lacks", t.Name, t.Version, name)})
	}
	if len(fes) > 0 {
		return &heraldtype.ValidationError{Errors: fes}, nil, nil
	}

	// Render every locale the intent could be delivered in, now: a
	// rendering that fails at delivery would be a message lost after it
	// was accepted. All of them share one budget, so the check of one
	// intent costs at most one budget, and each rendering at delivery
	// (the same template, the same data) fits in it.
	var plan struct {
		encoding string
		segments int
	}
	var texts []text
	b := &template.Budget{}
	for _, loc := range t.Locales() {
		for _, ch := range in.Channels {
			r, err := t.RenderOn(loc, ch, in.Data, b)
			if err != nil {
				return refuseT("data", heraldtype.CodeInvalidField, fmt.Sprintf("template %s version %d, locale %s: %v", t.Name, t.Version, loc, err))
			}
			r.Texts(func(part, s string) { texts = append(texts, text{"template:" + r.Locale + "/" + part, s}) })
			if ch == channel.SMS {
				enc, seg := gsm7.Encoding(r.Body)
				if seg > lim.MaxSMSSegments {
					return refuseT("data", heraldtype.CodeSMSTooLong, fmt.Sprintf("template %s version %d renders an sms of %d %s segments in locale %s with this data; the limit is %d",
						t.Name, t.Version, seg, enc, r.Locale, lim.MaxSMSSegments))
				}
				if seg > plan.segments {
					plan.encoding, plan.segments = enc, seg
				}
			}
		}
	}

	data, err := json.Marshal(in.Data)
	if err == nil {
		data, err = canonjson.Canonical(data)
	}
	if err != nil {
		return refuseT("data", heraldtype.CodeInvalidField, "data is not JSON: "+err.Error())
	}
	ref.Version = t.Version
	v.PayloadJSON = intake.TemplatePayloadOf(&v.Intent, ref, data)
	if len(v.PayloadJSON) > lim.MaxPayloadBytes {
		return refuseT("data", heraldtype.CodeTooLarge, fmt.Sprintf("template reference and data are %d bytes as canonical JSON; the limit is %d",
			len(v.PayloadJSON), lim.MaxPayloadBytes))
	}
	for k := range v.Routes {
		if v.Routes[k].Channel == channel.SMS {
			v.Routes[k].SMSEncoding, v.Routes[k].SMSSegments = plan.encoding, plan.segments
		}
	}
	return nil, texts, nil
}

// refuseT is refuse as checkTemplated returns it.
func refuseT(field string, code heraldtype.Code, msg string) (error, []text, error) {
	return refuse(field, code, msg), nil, nil
}

// refuse is a validation error of one field error.
func refuse(field string, code heraldtype.Code, msg string) error {
	return &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{Field: field, Code: code, Message: msg}}}
}

// isParseError reports whether err came from Parse (not the database).
func isParseError(err error) bool {
	var pe *template.ParseError
	return errors.As(err, &pe)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
