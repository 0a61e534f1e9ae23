package intake

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/template"
)

// templateNameRE is what a template name may be (herald.templates'
// templates_name_check).
var templateNameRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// localeRE is what a locale may be (as recipients.locale).
var localeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{0,35}$`)

// maxTemplateVersion bounds Intent.Template.Version (templates.version is
// an integer).
const maxTemplateVersion = 1<<31 - 1

// checkTemplate validates the template reference and data of in, which
// has a template, into out, and returns the canonical payload the
// fingerprint covers: {"data": ..., "template": {...}} with the version as
// requested (0: current), so that a retry after a new version is published
// is the same request. The template itself is looked up, its variables
// checked and its text rendered by package content, which needs the
// database; here only the shape is checked. Data is normalized through
// JSON (values only: a Go value's methods never reach a template), numbers
// kept as written.
func checkTemplate(errs *errorList, out *Intent, in *Intent, lim Limits) []byte {
	ref := *in.Template
	ref.Name = strings.TrimSpace(ref.Name)
	ref.Locale = strings.TrimSpace(ref.Locale)
	switch {
	case ref.Name == "":
		errs.add("template.name", heraldtype.CodeMissingField, "template name is required")
	case !templateNameRE.MatchString(ref.Name):
		errs.add("template.name", heraldtype.CodeInvalidField, "template name %s is not 1 to 128 letters, digits or . _ : -", quoteShort(ref.Name))
	}
	if ref.Version < 0 || ref.Version > maxTemplateVersion {
		errs.add("template.version", heraldtype.CodeInvalidField, "template version %d is outside 0..%d", ref.Version, maxTemplateVersion)
	}
	if !localeRE.MatchString(ref.Locale) {
		errs.add("template.locale", heraldtype.CodeInvalidField, "locale %s is not up to 35 letters, digits, - or _", quoteShort(ref.Locale))
	}
	c := in.Content
	if c.SMS != nil || c.Email != nil || (len(c.Webhook) > 0 && strings.TrimSpace(string(c.Webhook)) != "null") {
		errs.add("content", heraldtype.CodeInvalidField, "content and template are exclusive: give one")
	}
	out.Template = &ref
	data := in.Data
	if data == nil {
		data = map[string]any{}
	}
	raw, err := json.Marshal(data)
	if err == nil {
		raw, err = canonjson.Canonical(raw)
	}
	if err != nil {
		errs.add("data", heraldtype.CodeInvalidField, "data is not JSON: %v", err)
		return nil
	}
	if out.Data, err = template.DecodeData(raw); err != nil {
		errs.add("data", heraldtype.CodeInvalidField, "data is not a JSON object: %v", err)
		return nil
	}
	if !checkContentText(errs, "data", string(raw)) {
		return nil
	}
	return TemplatePayloadOf(out, ref, raw)
}

// TemplatePayload returns the records.payload_json of a templated intent:
// canonical {"data": data, "template": {"locale", "name", "version"}},
// data being canonical JSON already. The dispatcher renders from it.
func TemplatePayload(ref heraldtype.TemplateRef, data []byte) []byte {
	out := make([]byte, 0, len(data)+len(ref.Name)+64)
	out = append(out, `{"data":`...)
	out = append(out, data...)
	out = append(out, `,"template":{"locale":`...)
	out = canonjson.AppendString(out, ref.Locale)
	out = append(out, `,"name":`...)
	out = canonjson.AppendString(out, ref.Name)
	out = append(out, `,"version":`...)
	out = strconv.AppendInt(out, int64(ref.Version), 10)
	return append(out, "}}"...)
}
