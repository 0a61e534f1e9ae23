package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// Checker is intake's step after package intake's validation, for what
// needs the database: an intent naming a template is checked against the
// template's version (it exists, it has text for every listed channel, the
// data holds every variable, every locale renders with the data, and an
// SMS fits the segment cap in every locale) and its payload pinned to that
// version. Both doors run it between intake.Validate and accept.Accept. An
// intent without a template costs nothing here. Safe for concurrent use.
type Checker struct {
	templates TemplateCache
}

// NewChecker returns a Checker with an empty template cache.
func NewChecker() *Checker { return &Checker{} }

// Check checks vs, read through db (the submitting login's pool or
// transaction: row-level security shows a producer only its own
// templates), against lim. It returns one error per intent, nil for an
// intent that may be accepted: a *heraldtype.ValidationError for a refused
// one. It rewrites each templated intent's PayloadJSON to name the version
// it was checked against, and its sms routes' encoding and segments to the
// most any locale needs. The second result is an error of the database,
// which refuses nothing: the caller fails the whole submit.
func (c *Checker) Check(ctx context.Context, db store.DBTX, vs []*intake.Validated, lim intake.Limits) ([]error, error) {
	lim = lim.WithDefaults()
	errs := make([]error, len(vs))
	for i, v := range vs {
		if v == nil || v.Intent.Template == nil {
			continue
		}
		var err error
		errs[i], err = c.checkTemplated(ctx, db, v, lim)
		if err != nil {
			return nil, err
		}
	}
	return errs, nil
}

// checkTemplated checks one templated intent; the first result refuses it,
// the second is a database error.
func (c *Checker) checkTemplated(ctx context.Context, db store.DBTX, v *intake.Validated, lim intake.Limits) (error, error) {
	in := &v.Intent
	ref := *in.Template
	t, err := c.templates.Get(ctx, db, in.Producer, ref.Name, ref.Version)
	switch {
	case errors.Is(err, ErrTemplateNotFound):
		msg := fmt.Sprintf("producer %s has no template %s", in.Producer, ref.Name)
		if ref.Version > 0 {
			msg = fmt.Sprintf("producer %s has no version %d of template %s", in.Producer, ref.Version, ref.Name)
		}
		return refuse("template.name", heraldtype.CodeUnknownTemplate, msg), nil
	case err != nil && isParseError(err):
		return refuse("template.name", heraldtype.CodeInvalidField, "the stored template does not parse: "+err.Error()), nil
	case err != nil:
		return nil, err
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
		return &heraldtype.ValidationError{Errors: fes}, nil
	}

	// Render every locale the intent could be delivered in, now: a
	// rendering that fails at delivery would be a message lost after it
	// was accepted.
	var plan struct {
		encoding string
		segments int
	}
	for _, loc := range t.Locales() {
		for _, ch := range in.Channels {
			r, err := t.Render(loc, ch, in.Data)
			if err != nil {
				return refuse("data", heraldtype.CodeInvalidField, fmt.Sprintf("template %s version %d, locale %s: %v", t.Name, t.Version, loc, err)), nil
			}
			if ch == channel.SMS {
				enc, seg := intake.Encoding(r.Body)
				if seg > lim.MaxSMSSegments {
					return refuse("data", heraldtype.CodeSMSTooLong, fmt.Sprintf("template %s version %d renders an sms of %d %s segments in locale %s with this data; the limit is %d",
						t.Name, t.Version, seg, enc, r.Locale, lim.MaxSMSSegments)), nil
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
		return refuse("data", heraldtype.CodeInvalidField, "data is not JSON: "+err.Error()), nil
	}
	ref.Version = t.Version
	v.PayloadJSON = intake.TemplatePayload(ref, data)
	if len(v.PayloadJSON) > lim.MaxPayloadBytes {
		return refuse("data", heraldtype.CodeTooLarge, fmt.Sprintf("template reference and data are %d bytes as canonical JSON; the limit is %d",
			len(v.PayloadJSON), lim.MaxPayloadBytes)), nil
	}
	for k := range v.Routes {
		if v.Routes[k].Channel == channel.SMS {
			v.Routes[k].SMSEncoding, v.Routes[k].SMSSegments = plan.encoding, plan.segments
		}
	}
	return nil, nil
}

// refuse is a validation error of one field error.
func refuse(field string, code heraldtype.Code, msg string) error {
	return &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{Field: field, Code: code, Message: msg}}}
}

// isParseError reports whether err came from Parse (not the database).
func isParseError(err error) bool {
	var pe *ParseError
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
