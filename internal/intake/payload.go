package intake

import "github.com/heraldhq/herald/internal/canonjson"

// canonicalContent returns the canonical JSON of in's content: keys
// sorted, no insignificant whitespace, strings minimally escaped (HTML
// characters kept as written), empty text and html left out, the sms
// object carrying in's sender and flash when set (appendSMSOptions). The
// webhook content must already be canonical (canonjson.Canonical). The
// result decodes into Content.
func canonicalContent(in *Intent) []byte {
	c := in.Content
	// Room for the frame, the member names and the values unescaped.
	n := 64 + len(c.Webhook)
	if e := c.Email; e != nil {
		n += len(e.HTML) + len(e.Subject) + len(e.Text)
	}
	if c.SMS != nil {
		n += len(c.SMS.Body) + len(in.FromSender) + 24
	}
	out := append(make([]byte, 0, n), '{')
	member := func(key string) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = canonjson.AppendString(out, key)
		out = append(out, ':')
	}
	if e := c.Email; e != nil {
		member("email")
		out = append(out, '{')
		if e.HTML != "" {
			out = append(out, `"html":`...)
			out = canonjson.AppendString(out, e.HTML)
			out = append(out, ',')
		}
		out = append(out, `"subject":`...)
		out = canonjson.AppendString(out, e.Subject)
		if e.Text != "" {
			out = append(out, `,"text":`...)
			out = canonjson.AppendString(out, e.Text)
		}
		out = append(out, '}')
	}
	if c.SMS != nil {
		member("sms")
		out = append(out, `{"body":`...)
		out = canonjson.AppendString(out, c.SMS.Body)
		out = appendSMSOptions(out, in)
		out = append(out, '}')
	}
	if len(c.Webhook) > 0 {
		member("webhook")
		out = append(out, c.Webhook...)
	}
	return append(out, '}')
}

// fingerprint returns the request fingerprint of the normalized intent in,
// whose canonical content JSON is payload: what canonjson.Fingerprint
// makes of everything in it but request_id, trace_id and occurred_at.
func fingerprint(in *Intent, payload []byte) string {
	return canonjson.Fingerprint(&canonjson.Request{
		NotificationType: in.NotificationType,
		Producer:         in.Producer,
		IdempotencyKey:   in.IdempotencyKey,
		Channels:         in.Channels,
		UserIDs:          in.Audience.UserIDs,
		SMS:              in.Audience.SMS,
		Email:            in.Audience.Email,
		Webhook:          in.Audience.Webhook,
		Content:          payload,
		SendAt:           in.SendAt,
		ExpiresAt:        in.ExpiresAt,
		Priority:         string(in.Priority),
		MaxAttempts:      in.MaxAttempts,
	})
}
