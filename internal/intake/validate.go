package intake

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/gsm7"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// Validated is an intent that passed validation, normalized and planned.
type Validated struct {
	// Intent is the normalized intent: strings trimmed, phone numbers in
	// E.164, e-mail domains lower-cased, duplicate recipients removed (first
	// occurrence kept), times in UTC truncated to microseconds (what
	// PostgreSQL stores), OccurredAt defaulted to now and Priority defaulted
	// to transactional.
	Intent Intent
	// Priority is the routes.priority value: 0 transactional, 1 bulk.
	Priority int16
	// AudienceKind is "users", "addresses" or "mixed".
	AudienceKind string
	// PayloadJSON is the canonical JSON of Intent.Content, stored in
	// records.payload_json.
	PayloadJSON []byte
	// MetadataJSON is the canonical JSON of Intent.Metadata, stored in
	// records.metadata; nil when the intent has none (NULL).
	MetadataJSON []byte
	// Fingerprint is the hex SHA-256 of the intent's canonical form; see
	// canonjson.Fingerprint for what it covers, and withMetadata for how
	// metadata, when present, is folded in.
	Fingerprint string
	// Routes holds one plan per (channel, recipient), sorted by channel and
	// then recipient reference.
	Routes []RoutePlan
}

// Audience kinds, as stored in records.audience_kind.
const (
	// AudienceUsers: the intent names user ids only.
	AudienceUsers = "users"
	// AudienceAddresses: the intent names direct addresses only.
	AudienceAddresses = "addresses"
	// AudienceMixed: the intent names both user ids and direct addresses.
	AudienceMixed = "mixed"
)

// RoutePlan is one route an intent fans out to.
type RoutePlan struct {
	// RouteID is "<channel>:" followed by the first 12 hex digits of the
	// SHA-256 of RecipientRef: deterministic, and free of the address itself.
	RouteID string
	// Channel is "sms", "email" or "webhook".
	Channel string
	// RecipientRef is "user:<id>" for a user id, resolved at delivery, or
	// the normalized address.
	RecipientRef string
	// SMSEncoding is "gsm7" or "ucs2" for an sms route, "" otherwise.
	SMSEncoding string
	// SMSSegments is the segment count of an sms route, 0 otherwise.
	SMSSegments int
}

// knownChannels are the channels an intent may list, in route order.
var knownChannels = channel.Channels()

// Channels returns the channels an intent may list: email, sms and
// webhook. The slice is fresh; callers may modify it.
func Channels() []string { return slices.Clone(knownChannels) }

// RouteChannels returns the channels a route can have: Channels, and
// callback, herald's own channel for status callbacks to producers, which
// no intent may list. The slice is fresh; callers may modify it.
func RouteChannels() []string { return append(Channels(), channel.Callback) }

// Validate checks in against lim (zero fields take defaults) at time now
// and returns it normalized, fingerprinted and planned into routes. It never
// modifies in. On refusal the error is a *heraldtype.ValidationError
// holding every field error found; a nil in is refused with missing_field.
func Validate(in *Intent, lim Limits, now time.Time) (*Validated, error) {
	if in == nil {
		return nil, &heraldtype.ValidationError{Errors: []heraldtype.FieldError{{Code: heraldtype.CodeMissingField, Message: "intent is missing"}}}
	}
	lim = lim.WithDefaults()
	now = normTime(now)
	var errs errorList
	// The normalized intent is built in the result itself: a local Intent
	// copied into it cost an allocation and a copy per intent.
	v := &Validated{}
	out := &v.Intent

	out.NotificationType = checkName(&errs, "notification_type", in.NotificationType)
	out.Producer = checkName(&errs, "producer", in.Producer)
	out.IdempotencyKey = checkText(&errs, "idempotency_key", in.IdempotencyKey, maxIdempotencyKeyLen, true)
	out.RequestID = checkText(&errs, "request_id", in.RequestID, maxTraceLen, false)
	out.TraceID = checkText(&errs, "trace_id", in.TraceID, maxTraceLen, false)
	if u := strings.TrimSpace(in.CallbackURL); u != "" {
		// Checked as a webhook address is: status callbacks are webhooks.
		v, code, msg := normalizeURL(u)
		if code != "" {
			errs.add("callback_url", code, "%s", msg)
		}
		out.CallbackURL = v
	}

	// Campaigns: a name, as producer is, when given.
	if c := strings.TrimSpace(in.Campaign); c != "" {
		out.Campaign = checkName(&errs, "campaign", c)
	}

	// Metadata: the producer's own map, under a fixed budget.
	var metadata []byte
	out.Metadata, metadata = checkMetadata(&errs, in.Metadata)

	// Channels.
	listed := map[string]bool{}
	if len(in.Channels) == 0 {
		errs.add("channels", heraldtype.CodeMissingField, "at least one channel is required")
	}
	for i, c := range in.Channels {
		c = strings.TrimSpace(c)
		switch {
		case !slices.Contains(knownChannels, c):
			errs.add(fmt.Sprintf("channels[%d]", i), heraldtype.CodeUnknownChannel, "unknown channel %s; want sms, email or webhook", quoteShort(c))
		case listed[c]:
			errs.add(fmt.Sprintf("channels[%d]", i), heraldtype.CodeInvalidField, "channel %s is listed twice", c)
		default:
			listed[c] = true
			out.Channels = append(out.Channels, c)
		}
	}

	// Priority and attempts.
	p := heraldtype.Priority(strings.TrimSpace(string(in.Priority)))
	priority, ok := p.Number()
	if ok {
		out.Priority = heraldtype.PriorityOf(priority)
	} else {
		errs.add("priority", heraldtype.CodeInvalidField, "priority %s is not one of transactional, bulk", quoteShort(string(p)))
	}
	out.MaxAttempts = in.MaxAttempts
	if in.MaxAttempts < 0 || in.MaxAttempts > maxMaxAttempts {
		errs.add("max_attempts", heraldtype.CodeInvalidField, "max_attempts %d is outside 0..%d", in.MaxAttempts, maxMaxAttempts)
	}

	// Times.
	out.OccurredAt = checkTime(&errs, "occurred_at", in.OccurredAt)
	if out.OccurredAt.IsZero() {
		out.OccurredAt = now
	}
	out.SendAt = checkTime(&errs, "send_at", in.SendAt)
	out.ExpiresAt = checkTime(&errs, "expires_at", in.ExpiresAt)
	if !out.SendAt.IsZero() && out.SendAt.After(now.Add(lim.MaxScheduleAhead)) {
		errs.add("send_at", heraldtype.CodeScheduleOutOfRange, "send_at is more than %s ahead", lim.MaxScheduleAhead)
	}
	if !out.ExpiresAt.IsZero() {
		if !out.ExpiresAt.After(now) {
			errs.add("expires_at", heraldtype.CodeScheduleOutOfRange, "expires_at is not in the future")
		} else if !out.SendAt.IsZero() && !out.ExpiresAt.After(out.SendAt) {
			errs.add("expires_at", heraldtype.CodeScheduleOutOfRange, "expires_at is not after send_at")
		}
	}

	// Audience.
	a := in.Audience
	if len(a.UserIDs)+len(a.SMS)+len(a.Email)+len(a.Webhook) == 0 {
		errs.add("audience", heraldtype.CodeMissingField, "audience names no recipient")
	}
	out.Audience.UserIDs = normalizeList(&errs, "audience.user_ids", a.UserIDs, func(s string) (string, heraldtype.Code, string) {
		switch {
		case s == "":
			return "", heraldtype.CodeInvalidField, "user id is empty"
		case !utf8.ValidString(s) || hasControl(s):
			return "", heraldtype.CodeInvalidField, "user id has invalid UTF-8 or control characters"
		case utf8.RuneCountInString(s) > maxUserIDLen:
			return "", heraldtype.CodeInvalidField, fmt.Sprintf("user id is longer than %d characters", maxUserIDLen)
		}
		return s, "", ""
	})
	addrs := []struct {
		channel, field string
		list           []string
		dst            *[]string
		norm           func(string) (string, heraldtype.Code, string)
	}{
		{channel.SMS, "audience." + channel.SMS, a.SMS, &out.Audience.SMS, normalizePhone},
		{channel.Email, "audience." + channel.Email, a.Email, &out.Audience.Email, normalizeEmail},
		{channel.Webhook, "audience." + channel.Webhook, a.Webhook, &out.Audience.Webhook, normalizeURL},
	}
	for _, ad := range addrs {
		if len(ad.list) > 0 && !listed[ad.channel] && len(out.Channels) > 0 {
			errs.add(ad.field, heraldtype.CodeInvalidField, "addresses given for channel %s, which channels does not list", ad.channel)
		}
		*ad.dst = normalizeList(&errs, ad.field, ad.list, ad.norm)
	}

	// SMS sender and message type.
	checkSMSOptions(&errs, out, in, listed)

	// Content, or a template and its data.
	var (
		sms     smsPlan
		payload []byte
	)
	if in.Template != nil {
		payload = checkTemplate(&errs, out, in, lim)
	} else {
		if in.Data != nil {
			errs.add("data", heraldtype.CodeInvalidField, "data is given without a template")
		}
		sms = checkContent(&errs, out, in.Content, listed, lim)
		payload = canonicalContent(out)
	}

	// Payload.
	if len(payload) > lim.MaxPayloadBytes {
		errs.add("content", heraldtype.CodeTooLarge, "content is %d bytes as canonical JSON; the limit is %d", len(payload), lim.MaxPayloadBytes)
	}

	// Routes.
	nAddr := len(out.Audience.SMS) + len(out.Audience.Email) + len(out.Audience.Webhook)
	nRoutes := len(out.Audience.UserIDs)*len(out.Channels) + nAddr
	if nRoutes > lim.MaxRoutes {
		errs.add("audience", heraldtype.CodeTooManyRoutes, "intent fans out to %d routes; the limit is %d", nRoutes, lim.MaxRoutes)
	}
	if len(errs) > 0 {
		return nil, errs.err()
	}

	routes, err := planRoutes(out, sms)
	if err != nil {
		return nil, err
	}
	v.Priority = priority
	v.PayloadJSON = payload
	v.MetadataJSON = metadata
	v.Fingerprint = withMetadata(fingerprint(out, payload), metadata)
	v.Routes = routes
	switch {
	case nAddr == 0:
		v.AudienceKind = AudienceUsers
	case len(out.Audience.UserIDs) == 0:
		v.AudienceKind = AudienceAddresses
	default:
		v.AudienceKind = AudienceMixed
	}
	return v, nil
}

// smsPlan is the encoding every sms route of an intent shares.
type smsPlan struct {
	encoding string
	segments int
}

// checkContent validates in's content against the listed channels, stores
// the content of listed channels in out.Content and returns the SMS plan.
func checkContent(errs *errorList, out *Intent, in Content, listed map[string]bool, lim Limits) smsPlan {
	var plan smsPlan
	unlisted := func(ch string) {
		if len(listed) > 0 {
			errs.add("content."+ch, heraldtype.CodeInvalidField, "content given for channel %s, which channels does not list", ch)
		}
	}

	switch {
	case in.SMS != nil && !listed[channel.SMS]:
		unlisted(channel.SMS)
	case listed[channel.SMS] && in.SMS == nil:
		errs.add("content.sms", heraldtype.CodeMissingContent, "channel sms is listed but has no content")
	case listed[channel.SMS]:
		body := in.SMS.Body
		if checkContentText(errs, "content.sms.body", body) {
			if strings.TrimSpace(body) == "" {
				errs.add("content.sms.body", heraldtype.CodeMissingField, "sms body is empty")
			} else {
				plan.encoding, plan.segments = gsm7.Encoding(body)
				if plan.segments > lim.MaxSMSSegments {
					errs.add("content.sms.body", heraldtype.CodeSMSTooLong, "sms body needs %d %s segments; the limit is %d", plan.segments, plan.encoding, lim.MaxSMSSegments)
				}
			}
		}
		out.Content.SMS = &SMSContent{Body: body}
	}

	switch {
	case in.Email != nil && !listed[channel.Email]:
		unlisted(channel.Email)
	case listed[channel.Email] && in.Email == nil:
		errs.add("content.email", heraldtype.CodeMissingContent, "channel email is listed but has no content")
	case listed[channel.Email]:
		e := *in.Email
		if checkContentText(errs, "content.email.subject", e.Subject) {
			switch {
			case strings.ContainsAny(e.Subject, "\r\n"):
				errs.add("content.email.subject", heraldtype.CodeInvalidField, "subject contains a line break")
			case utf8.RuneCountInString(e.Subject) > maxSubjectLen:
				errs.add("content.email.subject", heraldtype.CodeInvalidField, "subject is longer than %d characters", maxSubjectLen)
			}
		}
		okText := checkContentText(errs, "content.email.text", e.Text)
		okHTML := checkContentText(errs, "content.email.html", e.HTML)
		if okText && okHTML && strings.TrimSpace(e.Text) == "" && strings.TrimSpace(e.HTML) == "" {
			errs.add("content.email", heraldtype.CodeMissingField, "email needs a text or html body")
		}
		out.Content.Email = &e
	}

	hasWebhook := len(in.Webhook) > 0 && strings.TrimSpace(string(in.Webhook)) != "null"
	switch {
	case hasWebhook && !listed[channel.Webhook]:
		unlisted(channel.Webhook)
	case listed[channel.Webhook] && !hasWebhook:
		errs.add("content.webhook", heraldtype.CodeMissingContent, "channel webhook is listed but has no content")
	case listed[channel.Webhook]:
		canon, err := canonjson.Canonical(in.Webhook)
		if err != nil {
			errs.add("content.webhook", heraldtype.CodeInvalidField, "%v", err)
		} else {
			out.Content.Webhook = canon
		}
	}
	return plan
}

// checkContentText reports content text that is not valid UTF-8 or holds
// U+0000 (which PostgreSQL's jsonb cannot store). It returns whether s is
// acceptable.
func checkContentText(errs *errorList, field, s string) bool {
	switch {
	case !utf8.ValidString(s):
		errs.add(field, heraldtype.CodeInvalidField, "text is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		errs.add(field, heraldtype.CodeInvalidField, "text contains U+0000")
	default:
		return true
	}
	return false
}

// planRoutes fans the normalized intent out into sorted route plans. It
// refuses the intent if two recipients of one channel share a route id (a
// 48-bit hash prefix collision, which only a deliberate search finds).
func planRoutes(in *Intent, sms smsPlan) ([]RoutePlan, error) {
	var routes []RoutePlan
	if n := len(in.Channels)*len(in.Audience.UserIDs) + len(in.Audience.SMS) + len(in.Audience.Email) + len(in.Audience.Webhook); n > 0 {
		routes = make([]RoutePlan, 0, n)
	}
	add := func(ch, ref string) {
		r := RoutePlan{Channel: ch, RecipientRef: ref, RouteID: routeID(ch, ref)}
		if ch == channel.SMS {
			r.SMSEncoding, r.SMSSegments = sms.encoding, sms.segments
		}
		routes = append(routes, r)
	}
	for _, ch := range in.Channels {
		for _, id := range in.Audience.UserIDs {
			add(ch, "user:"+id)
		}
	}
	for _, n := range in.Audience.SMS {
		add(channel.SMS, n)
	}
	for _, e := range in.Audience.Email {
		add(channel.Email, e)
	}
	for _, u := range in.Audience.Webhook {
		add(channel.Webhook, u)
	}
	slices.SortFunc(routes, func(a, b RoutePlan) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.RecipientRef, b.RecipientRef))
	})
	if len(routes) < 2 {
		return routes, nil
	}
	var errs errorList
	seen := make(map[string]bool, len(routes))
	for _, r := range routes {
		if seen[r.RouteID] {
			errs.add("audience", heraldtype.CodeInvalidField, "two %s recipients share route id %s", r.Channel, r.RouteID)
		}
		seen[r.RouteID] = true
	}
	return routes, errs.err()
}

// routeID returns "<channel>:" plus the first 12 hex digits of
// sha256(ref).
func routeID(ch, ref string) string {
	// Built in buffers on the stack (for the usual short channel and
	// reference): one allocation, the result's, instead of three.
	var in [128]byte
	sum := sha256.Sum256(append(in[:0], ref...))
	var id [64]byte
	b := append(id[:0], ch...)
	b = append(b, ':')
	return string(hex.AppendEncode(b, sum[:6]))
}

// checkName validates notification_type and producer: required, at most
// maxNameLen characters of [A-Za-z0-9._:-].
func checkName(errs *errorList, field, s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		errs.add(field, heraldtype.CodeMissingField, "%s is required", field)
	case len(s) > maxNameLen:
		errs.add(field, heraldtype.CodeInvalidField, "%s is longer than %d characters", field, maxNameLen)
	case strings.IndexFunc(s, func(r rune) bool { return !isNameRune(r) }) >= 0:
		errs.add(field, heraldtype.CodeInvalidField, "%s may hold only letters, digits and . _ : -", field)
	}
	return s
}

// ValidProducer reports whether producer is a name Validate accepts as an
// intent's producer (surrounding space aside).
func ValidProducer(producer string) bool {
	var errs errorList
	checkName(&errs, "producer", producer)
	return len(errs) == 0
}

func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == ':' || r == '-'
}

// checkText validates a free-form identifier: at most max characters, all
// printable (unicode.IsPrint), and present if required.
func checkText(errs *errorList, field, s string, max int, required bool) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		if required {
			errs.add(field, heraldtype.CodeMissingField, "%s is required", field)
		}
	case !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		errs.add(field, heraldtype.CodeInvalidField, "%s may hold only printable characters", field)
	case utf8.RuneCountInString(s) > max:
		errs.add(field, heraldtype.CodeInvalidField, "%s is longer than %d characters", field, max)
	}
	return s
}

// checkTime normalizes a time and refuses one PostgreSQL or RFC 3339 cannot
// represent (outside years 1..9999).
func checkTime(errs *errorList, field string, t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	t = normTime(t)
	if y := t.Year(); y < 1 || y > 9999 {
		errs.add(field, heraldtype.CodeInvalidField, "%s is outside years 1..9999", field)
	}
	return t
}

// normTime returns t in UTC without a monotonic reading, truncated to the
// microsecond precision of timestamptz.
func normTime(t time.Time) time.Time {
	return t.Round(0).UTC().Truncate(time.Microsecond)
}
