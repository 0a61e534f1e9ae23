package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/template"
)

// contentFor picks the channel's entry out of records.payload_json (the
// intent's content, keyed by channel); nil if absent, or if the payload is
// not a valid JSON object, which the channel reports as bad content. It
// scans the payload (gjson) rather than decoding every channel's content
// into a map: this runs once per route claimed, and decoding cost more than
// the rest of resolving a claimed batch.
func contentFor(payload, ch string) json.RawMessage {
	if !gjson.Valid(payload) {
		return nil
	}
	doc := gjson.Parse(payload)
	if !doc.IsObject() {
		return nil
	}
	v := doc.Get(gjson.Escape(ch))
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	return json.RawMessage(v.Raw)
}

// isTemplated reports whether payload is a templated notification's
// ({"data", "template"}); checked only when the payload has no entry for
// the route's channel.
func isTemplated(payload string) bool {
	return gjson.Get(payload, "template.name").Exists()
}

// render renders the templated notification of j for its channel, in the
// locale j's recipient has (the directory's, or else the intent's
// template.locale), with the template version the notification was
// accepted with; j.locale becomes the locale used (routes.resolved_locale).
// A version that is gone or renders no longer (both only through SQL by
// hand: intake rendered every locale) settles j as a dead letter. The
// error is the database's.
func (l *channelLoop) render(ctx context.Context, db store.DBTX, j *job) (json.RawMessage, error) {
	doc := gjson.Parse(j.row.PayloadJson)
	ref := doc.Get("template")
	name, version := ref.Get("name").String(), int(ref.Get("version").Int())
	fail := func(err error) (json.RawMessage, error) {
		j.outcome = l.settle(j, "dead_letter", ClassTemplateError,
			fmt.Sprintf("template %s version %d: %v", name, version, err),
			"the template version this notification was accepted with is missing or no longer renders: "+
				"restore it (herald.templates), then replay with `herald dead-letters replay`")
		return nil, nil
	}
	t, err := l.d.templates.Get(ctx, db, j.row.Producer, name, version)
	var perr *template.ParseError
	switch {
	case errors.Is(err, template.ErrTemplateNotFound) || errors.As(err, &perr):
		return fail(err)
	case err != nil:
		return nil, fmt.Errorf("get template of notification %s: %w", j.row.NotificationID, err)
	}
	data, err := template.DecodeData([]byte(doc.Get("data").Raw))
	if err != nil {
		return fail(err)
	}
	want := j.locale
	if want == "" {
		want = ref.Get("locale").String()
	}
	r, err := t.Render(want, l.name, data)
	if err != nil {
		return fail(err)
	}
	j.locale = r.Locale
	c := r.Content()
	if o := doc.Get("sms_options"); l.name == channel.SMS && o.IsObject() {
		c = withSMSOptions(c, o)
	}
	return c, nil
}

// withSMSOptions adds a templated notification's sender and flash
// (payload "sms_options", see intake.TemplatePayloadOf) to the SMS
// content c rendered for it, {"body": ...}, as a content intent's sms
// entry carries them: the drivers read both the same way.
func withSMSOptions(c json.RawMessage, o gjson.Result) json.RawMessage {
	out := append(make([]byte, 0, len(c)+len(o.Raw)), c[:len(c)-1]...)
	if o.Get("flash").Bool() {
		out = append(out, `,"flash":true`...)
	}
	if from := o.Get("from"); from.Type == gjson.String {
		b, _ := json.Marshal(from.String())
		out = append(append(out, `,"from":`...), b...)
	}
	return append(out, '}')
}
