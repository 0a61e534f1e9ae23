package intake

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/channel"
)

// Failure codes. Each is a stable token: the Go client returns it in
// FieldError.Code and the intake worker stores it in
// malformed_intents.failure_code, so the two doors report a bad intent the
// same way. Never rename one; add new ones instead.
//
//	code                   meaning
//	not_json               the raw entry is not JSON (syntax error, invalid UTF-8)
//	wrong_shape            JSON, but not an intent object: top level not an object,
//	                       unknown or duplicate field, or a field of the wrong type
//	too_large              the raw entry exceeds MaxEntryBytes, or the canonical
//	                       content exceeds MaxPayloadBytes
//	missing_field          a required field is absent or empty
//	invalid_field          a field has a bad format, length, enum value or range
//	unknown_channel        a channel that is not sms, email or webhook
//	invalid_phone          an SMS number that is not a valid E.164 number (or
//	                       carries an extension)
//	invalid_email          an e-mail address net/mail cannot parse
//	invalid_url            a webhook URL that is not absolute http(s) with a host
//	                       (and a port, if any, in 1..65535)
//	missing_content        a listed channel has no content
//	sms_too_long           the SMS body needs more than MaxSMSSegments segments
//	schedule_out_of_range  send_at too far ahead, or expires_at not after now
//	                       and send_at
//	too_many_routes        the intent fans out to more than MaxRoutes routes
//	idempotency_conflict   the idempotency key was used before with a different
//	                       request fingerprint (returned by the accept path)
//	rejected_by_database   the database refused an entry the validator accepted
//	                       (set by the intake worker)
//	producer_mismatch      an intake entry names a producer other than the login
//	                       that inserted it, and that login is not a relay (set
//	                       by the intake worker)
const (
	// CodeNotJSON: the raw intake entry is not valid JSON in UTF-8.
	CodeNotJSON = "not_json"
	// CodeWrongShape: the entry is JSON but not an intent object: the top
	// level is not an object, a field is unknown or repeated, or a field has
	// the wrong JSON type. FieldError.Field names the field.
	CodeWrongShape = "wrong_shape"
	// CodeTooLarge: the raw entry exceeds Limits.MaxEntryBytes (Field ""),
	// or the canonical content JSON exceeds Limits.MaxPayloadBytes (Field
	// "content").
	CodeTooLarge = "too_large"
	// CodeMissingField: a required field is absent or empty.
	CodeMissingField = "missing_field"
	// CodeInvalidField: a field is present but has a bad format, length,
	// enum value or range.
	CodeInvalidField = "invalid_field"
	// CodeUnknownChannel: channels names something other than sms, email or
	// webhook.
	CodeUnknownChannel = "unknown_channel"
	// CodeInvalidPhone: an SMS number lacks a leading "+", is not a valid
	// number according to libphonenumber, or carries an extension.
	CodeInvalidPhone = "invalid_phone"
	// CodeInvalidEmail: an e-mail address that net/mail cannot parse as one
	// address, or longer than 254 bytes.
	CodeInvalidEmail = "invalid_email"
	// CodeInvalidURL: a webhook URL that is not absolute http or https with a
	// host, carries userinfo, names a port outside 1..65535, or is longer
	// than 2048 characters.
	CodeInvalidURL = "invalid_url"
	// CodeMissingContent: a listed channel has no content.
	CodeMissingContent = "missing_content"
	// CodeSMSTooLong: the SMS body needs more segments than
	// Limits.MaxSMSSegments.
	CodeSMSTooLong = "sms_too_long"
	// CodeScheduleOutOfRange: send_at is further ahead than
	// Limits.MaxScheduleAhead, or expires_at is not after both now and
	// send_at.
	CodeScheduleOutOfRange = "schedule_out_of_range"
	// CodeTooManyRoutes: the intent fans out to more routes than
	// Limits.MaxRoutes.
	CodeTooManyRoutes = "too_many_routes"
	// CodeIdempotencyConflict: the (producer, idempotency_key) pair was
	// accepted before with a different request fingerprint. Validate never
	// returns it; the accept path does.
	CodeIdempotencyConflict = "idempotency_conflict"
	// CodeRejectedByDatabase: the database refused an entry the validator
	// accepted (a constraint or limit an administrator added, say). The
	// intake worker sets such an entry aside, with the database's message,
	// so that one entry cannot stall the intake. Validate never returns it.
	CodeRejectedByDatabase = "rejected_by_database"
	// CodeProducerMismatch: an intake entry names a producer other than the
	// database login that inserted it (herald.intake.submitted_by), and that
	// login is not trusted to submit in another's name: a member of
	// herald_relay, or of the intake's owner (the engine's login). The
	// intake worker sets such an entry aside, accepting nothing of it.
	// Validate never returns it.
	CodeProducerMismatch = "producer_mismatch"
)

// Codes returns every failure code, in the order documented above. The
// slice is fresh; callers may modify it.
func Codes() []string {
	return []string{
		CodeNotJSON, CodeWrongShape, CodeTooLarge, CodeMissingField,
		CodeInvalidField, CodeUnknownChannel, CodeInvalidPhone,
		CodeInvalidEmail, CodeInvalidURL, CodeMissingContent, CodeSMSTooLong,
		CodeScheduleOutOfRange, CodeTooManyRoutes, CodeIdempotencyConflict,
		CodeRejectedByDatabase, CodeProducerMismatch,
	}
}

// Default limits, used for the zero fields of a Limits.
const (
	// DefaultMaxPayloadBytes is the default Limits.MaxPayloadBytes: 64 KiB.
	DefaultMaxPayloadBytes = 64 << 10
	// DefaultMaxEntryBytes is the default Limits.MaxEntryBytes: 256 KiB.
	DefaultMaxEntryBytes = 256 << 10
	// DefaultMaxSMSSegments is the default Limits.MaxSMSSegments: 10.
	DefaultMaxSMSSegments = 10
	// DefaultMaxScheduleAhead is the default Limits.MaxScheduleAhead: 90 days.
	DefaultMaxScheduleAhead = 90 * 24 * time.Hour
	// DefaultMaxRoutes is the default Limits.MaxRoutes: 1000.
	DefaultMaxRoutes = 1000
)

// Field length limits, in characters (runes) unless noted.
const (
	maxNameLen           = 128  // notification_type, producer
	maxIdempotencyKeyLen = 255  // idempotency_key
	maxTraceLen          = 128  // request_id, trace_id
	maxUserIDLen         = 255  // audience.user_ids[i]
	maxURLLen            = 2048 // audience.webhook[i]
	maxEmailLen          = 254  // audience.email[i], bytes (RFC 5321 path limit)
	maxSubjectLen        = 998  // content.email.subject (RFC 5322 line limit)
	maxMaxAttempts       = 100  // max_attempts
)

// Limits bounds what an intent may carry. Zero (or negative) fields take
// the defaults; see WithDefaults.
type Limits struct {
	// MaxPayloadBytes caps the canonical content JSON (records.payload_json).
	// Default 64 KiB.
	MaxPayloadBytes int
	// MaxEntryBytes caps one raw intake entry. Default 256 KiB.
	MaxEntryBytes int
	// MaxSMSSegments caps the segments an SMS body may need. Default 10.
	MaxSMSSegments int
	// MaxScheduleAhead caps how far ahead send_at may be. Default 90 days.
	MaxScheduleAhead time.Duration
	// MaxRoutes caps the routes one intent may fan out to. Default 1000.
	MaxRoutes int
}

// WithDefaults returns l with every zero or negative field replaced by its
// default.
func (l Limits) WithDefaults() Limits {
	pos := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	l.MaxPayloadBytes = pos(l.MaxPayloadBytes, DefaultMaxPayloadBytes)
	l.MaxEntryBytes = pos(l.MaxEntryBytes, DefaultMaxEntryBytes)
	l.MaxSMSSegments = pos(l.MaxSMSSegments, DefaultMaxSMSSegments)
	l.MaxRoutes = pos(l.MaxRoutes, DefaultMaxRoutes)
	if l.MaxScheduleAhead <= 0 {
		l.MaxScheduleAhead = DefaultMaxScheduleAhead
	}
	return l
}

// FieldError is one reason an intent was refused.
type FieldError struct {
	// Field is the JSON path of the offending field, e.g. "audience.sms[2]"
	// or "content.email.subject"; "" means the entry as a whole.
	Field string
	// Code is one of the failure codes (CodeMissingField, ...).
	Code string
	// Message says what is wrong, for a person. It never repeats a phone
	// number or e-mail address.
	Message string
}

// Error returns "field: message (code)", or "message (code)" for the entry
// as a whole.
func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message + " (" + e.Code + ")"
	}
	return e.Field + ": " + e.Message + " (" + e.Code + ")"
}

// ValidationError is returned by Validate and DecodeRaw when an intent is
// refused. It carries every field error found, not just the first.
type ValidationError struct {
	Errors []FieldError
}

// maxListedErrors bounds how many field errors Error spells out, so that a
// pathological entry cannot produce a megabyte-long failure message. Errors
// itself always holds them all.
const maxListedErrors = 20

// Error lists the field errors, separated by "; ", eliding all but the first
// maxListedErrors.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid intent: ")
	for i, fe := range e.Errors {
		if i == maxListedErrors {
			fmt.Fprintf(&b, "; and %d more", len(e.Errors)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Code returns the first field error's code, or "" if there is none. It is
// what the intake worker stores in malformed_intents.failure_code.
func (e *ValidationError) Code() string {
	if len(e.Errors) == 0 {
		return ""
	}
	return e.Errors[0].Code
}

// errorList collects field errors while validating.
type errorList []FieldError

func (l *errorList) add(field, code, format string, args ...any) {
	*l = append(*l, FieldError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

// err returns nil when l is empty and a *ValidationError otherwise.
func (l errorList) err() error {
	if len(l) == 0 {
		return nil
	}
	return &ValidationError{Errors: l}
}

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
	// Fingerprint is the hex SHA-256 of the intent's canonical form; see
	// canonjson.Fingerprint for what it covers.
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
var knownChannels = []string{channel.Email, channel.SMS, channel.Webhook}

// Channels returns the channels an intent may list, and so the only ones a
// route can have: email, sms and webhook. The slice is fresh; callers may
// modify it.
func Channels() []string { return slices.Clone(knownChannels) }

// Validate checks in against lim (zero fields take defaults) at time now
// and returns it normalized, fingerprinted and planned into routes. It never
// modifies in. On refusal the error is a *ValidationError holding every
// field error found; a nil in is refused with missing_field.
func Validate(in *Intent, lim Limits, now time.Time) (*Validated, error) {
	if in == nil {
		return nil, &ValidationError{Errors: []FieldError{{Code: CodeMissingField, Message: "intent is missing"}}}
	}
	lim = lim.WithDefaults()
	now = normTime(now)
	var errs errorList
	out := Intent{}

	out.NotificationType = checkName(&errs, "notification_type", in.NotificationType)
	out.Producer = checkName(&errs, "producer", in.Producer)
	out.IdempotencyKey = checkText(&errs, "idempotency_key", in.IdempotencyKey, maxIdempotencyKeyLen, true)
	out.RequestID = checkText(&errs, "request_id", in.RequestID, maxTraceLen, false)
	out.TraceID = checkText(&errs, "trace_id", in.TraceID, maxTraceLen, false)

	// Channels.
	listed := map[string]bool{}
	if len(in.Channels) == 0 {
		errs.add("channels", CodeMissingField, "at least one channel is required")
	}
	for i, c := range in.Channels {
		field := fmt.Sprintf("channels[%d]", i)
		c = strings.TrimSpace(c)
		switch {
		case !slices.Contains(knownChannels, c):
			errs.add(field, CodeUnknownChannel, "unknown channel %s; want sms, email or webhook", quoteShort(c))
		case listed[c]:
			errs.add(field, CodeInvalidField, "channel %s is listed twice", c)
		default:
			listed[c] = true
			out.Channels = append(out.Channels, c)
		}
	}

	// Priority and attempts.
	var priority int16
	switch p := strings.TrimSpace(in.Priority); p {
	case "", PriorityTransactional:
		out.Priority = PriorityTransactional
	case PriorityBulk:
		out.Priority = PriorityBulk
		priority = 1
	default:
		errs.add("priority", CodeInvalidField, "priority %s is not one of transactional, bulk", quoteShort(p))
	}
	out.MaxAttempts = in.MaxAttempts
	if in.MaxAttempts < 0 || in.MaxAttempts > maxMaxAttempts {
		errs.add("max_attempts", CodeInvalidField, "max_attempts %d is outside 0..%d", in.MaxAttempts, maxMaxAttempts)
	}

	// Times.
	out.OccurredAt = checkTime(&errs, "occurred_at", in.OccurredAt)
	if out.OccurredAt.IsZero() {
		out.OccurredAt = now
	}
	out.SendAt = checkTime(&errs, "send_at", in.SendAt)
	out.ExpiresAt = checkTime(&errs, "expires_at", in.ExpiresAt)
	if !out.SendAt.IsZero() && out.SendAt.After(now.Add(lim.MaxScheduleAhead)) {
		errs.add("send_at", CodeScheduleOutOfRange, "send_at is more than %s ahead", lim.MaxScheduleAhead)
	}
	if !out.ExpiresAt.IsZero() {
		if !out.ExpiresAt.After(now) {
			errs.add("expires_at", CodeScheduleOutOfRange, "expires_at is not in the future")
		} else if !out.SendAt.IsZero() && !out.ExpiresAt.After(out.SendAt) {
			errs.add("expires_at", CodeScheduleOutOfRange, "expires_at is not after send_at")
		}
	}

	// Audience.
	a := in.Audience
	if len(a.UserIDs)+len(a.SMS)+len(a.Email)+len(a.Webhook) == 0 {
		errs.add("audience", CodeMissingField, "audience names no recipient")
	}
	out.Audience.UserIDs = normalizeList(&errs, "audience.user_ids", a.UserIDs, func(s string) (string, string, string) {
		switch {
		case s == "":
			return "", CodeInvalidField, "user id is empty"
		case !utf8.ValidString(s) || hasControl(s):
			return "", CodeInvalidField, "user id has invalid UTF-8 or control characters"
		case utf8.RuneCountInString(s) > maxUserIDLen:
			return "", CodeInvalidField, fmt.Sprintf("user id is longer than %d characters", maxUserIDLen)
		}
		return s, "", ""
	})
	addrs := []struct {
		channel string
		list    []string
		dst     *[]string
		norm    func(string) (string, string, string)
	}{
		{channel.SMS, a.SMS, &out.Audience.SMS, normalizePhone},
		{channel.Email, a.Email, &out.Audience.Email, normalizeEmail},
		{channel.Webhook, a.Webhook, &out.Audience.Webhook, normalizeURL},
	}
	for _, ad := range addrs {
		field := "audience." + ad.channel
		if len(ad.list) > 0 && !listed[ad.channel] && len(out.Channels) > 0 {
			errs.add(field, CodeInvalidField, "addresses given for channel %s, which channels does not list", ad.channel)
		}
		*ad.dst = normalizeList(&errs, field, ad.list, ad.norm)
	}

	// Content.
	sms := checkContent(&errs, &out, in.Content, listed, lim)

	// Payload.
	payload := canonicalContent(out.Content)
	if len(payload) > lim.MaxPayloadBytes {
		errs.add("content", CodeTooLarge, "content is %d bytes as canonical JSON; the limit is %d", len(payload), lim.MaxPayloadBytes)
	}

	// Routes.
	nAddr := len(out.Audience.SMS) + len(out.Audience.Email) + len(out.Audience.Webhook)
	nRoutes := len(out.Audience.UserIDs)*len(out.Channels) + nAddr
	if nRoutes > lim.MaxRoutes {
		errs.add("audience", CodeTooManyRoutes, "intent fans out to %d routes; the limit is %d", nRoutes, lim.MaxRoutes)
	}
	if len(errs) > 0 {
		return nil, errs.err()
	}

	routes, err := planRoutes(&out, sms)
	if err != nil {
		return nil, err
	}
	v := &Validated{
		Intent:      out,
		Priority:    priority,
		PayloadJSON: payload,
		Fingerprint: fingerprint(&out, payload),
		Routes:      routes,
	}
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
			errs.add("content."+ch, CodeInvalidField, "content given for channel %s, which channels does not list", ch)
		}
	}

	switch {
	case in.SMS != nil && !listed[channel.SMS]:
		unlisted(channel.SMS)
	case listed[channel.SMS] && in.SMS == nil:
		errs.add("content.sms", CodeMissingContent, "channel sms is listed but has no content")
	case listed[channel.SMS]:
		body := in.SMS.Body
		if checkContentText(errs, "content.sms.body", body) {
			if strings.TrimSpace(body) == "" {
				errs.add("content.sms.body", CodeMissingField, "sms body is empty")
			} else {
				plan.encoding, plan.segments = Encoding(body)
				if plan.segments > lim.MaxSMSSegments {
					errs.add("content.sms.body", CodeSMSTooLong, "sms body needs %d %s segments; the limit is %d", plan.segments, plan.encoding, lim.MaxSMSSegments)
				}
			}
		}
		out.Content.SMS = &SMSContent{Body: body}
	}

	switch {
	case in.Email != nil && !listed[channel.Email]:
		unlisted(channel.Email)
	case listed[channel.Email] && in.Email == nil:
		errs.add("content.email", CodeMissingContent, "channel email is listed but has no content")
	case listed[channel.Email]:
		e := *in.Email
		if checkContentText(errs, "content.email.subject", e.Subject) {
			switch {
			case strings.ContainsAny(e.Subject, "\r\n"):
				errs.add("content.email.subject", CodeInvalidField, "subject contains a line break")
			case utf8.RuneCountInString(e.Subject) > maxSubjectLen:
				errs.add("content.email.subject", CodeInvalidField, "subject is longer than %d characters", maxSubjectLen)
			}
		}
		okText := checkContentText(errs, "content.email.text", e.Text)
		okHTML := checkContentText(errs, "content.email.html", e.HTML)
		if okText && okHTML && strings.TrimSpace(e.Text) == "" && strings.TrimSpace(e.HTML) == "" {
			errs.add("content.email", CodeMissingField, "email needs a text or html body")
		}
		out.Content.Email = &e
	}

	hasWebhook := len(in.Webhook) > 0 && strings.TrimSpace(string(in.Webhook)) != "null"
	switch {
	case hasWebhook && !listed[channel.Webhook]:
		unlisted(channel.Webhook)
	case listed[channel.Webhook] && !hasWebhook:
		errs.add("content.webhook", CodeMissingContent, "channel webhook is listed but has no content")
	case listed[channel.Webhook]:
		canon, err := canonjson.Canonical(in.Webhook)
		if err != nil {
			errs.add("content.webhook", CodeInvalidField, "%v", err)
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
		errs.add(field, CodeInvalidField, "text is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		errs.add(field, CodeInvalidField, "text contains U+0000")
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
	var errs errorList
	seen := make(map[string]bool, len(routes))
	for _, r := range routes {
		if seen[r.RouteID] {
			errs.add("audience", CodeInvalidField, "two %s recipients share route id %s", r.Channel, r.RouteID)
		}
		seen[r.RouteID] = true
	}
	return routes, errs.err()
}

// routeID returns "<channel>:" plus the first 12 hex digits of
// sha256(ref).
func routeID(ch, ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return ch + ":" + hex.EncodeToString(sum[:6])
}

// checkName validates notification_type and producer: required, at most
// maxNameLen characters of [A-Za-z0-9._:-].
func checkName(errs *errorList, field, s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		errs.add(field, CodeMissingField, "%s is required", field)
	case len(s) > maxNameLen:
		errs.add(field, CodeInvalidField, "%s is longer than %d characters", field, maxNameLen)
	case strings.IndexFunc(s, func(r rune) bool { return !isNameRune(r) }) >= 0:
		errs.add(field, CodeInvalidField, "%s may hold only letters, digits and . _ : -", field)
	}
	return s
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
			errs.add(field, CodeMissingField, "%s is required", field)
		}
	case !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		errs.add(field, CodeInvalidField, "%s may hold only printable characters", field)
	case utf8.RuneCountInString(s) > max:
		errs.add(field, CodeInvalidField, "%s is longer than %d characters", field, max)
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
		errs.add(field, CodeInvalidField, "%s is outside years 1..9999", field)
	}
	return t
}

// normTime returns t in UTC without a monotonic reading, truncated to the
// microsecond precision of timestamptz.
func normTime(t time.Time) time.Time {
	return t.Round(0).UTC().Truncate(time.Microsecond)
}

// normalizeList normalizes each element of list with norm, which returns
// the normalized value or a code and message. Invalid elements are
// reported as field[i]; duplicates after normalization are dropped, keeping
// the first.
func normalizeList(errs *errorList, field string, list []string, norm func(string) (string, string, string)) []string {
	var out []string // stays nil if no element is valid: the fingerprint tells nil from empty
	var seen map[string]bool
	for i, s := range list {
		v, code, msg := norm(strings.TrimSpace(s))
		if code != "" {
			errs.add(fmt.Sprintf("%s[%d]", field, i), code, "%s", msg)
			continue
		}
		// Short lists (the usual) are searched; longer ones get a map.
		switch {
		case len(list) <= 8:
			if slices.Contains(out, v) {
				continue
			}
		case seen[v]:
			continue
		default:
			if seen == nil {
				seen = make(map[string]bool, len(list))
			}
			seen[v] = true
		}
		if out == nil {
			out = make([]string, 0, len(list))
		}
		out = append(out, v)
	}
	return out
}

// normalizePhone returns s in E.164. It requires a leading "+" (herald
// never guesses a region) and a number libphonenumber calls valid.
func normalizePhone(s string) (string, string, string) {
	const want = "want an international number with a leading +, e.g. +14155550123"
	if !strings.HasPrefix(s, "+") {
		return "", CodeInvalidPhone, "phone number has no leading +; " + want
	}
	num, err := phonenumbers.Parse(s, "ZZ")
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", CodeInvalidPhone, "not a valid phone number; " + want
	}
	if num.GetExtension() != "" {
		// E.164 has no extensions: dropping it would text the switchboard.
		return "", CodeInvalidPhone, "phone number has an extension, which no SMS can be delivered to; give the number without it"
	}
	return phonenumbers.Format(num, phonenumbers.E164), "", ""
}

// normalizeEmail returns the bare addr-spec of s as net/mail parses it,
// with the domain lower-cased and the local part quoted only if it must be.
func normalizeEmail(s string) (string, string, string) {
	const bad = "not a valid e-mail address"
	if s == "" || !utf8.ValidString(s) || hasControl(s) {
		return "", CodeInvalidEmail, bad
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", CodeInvalidEmail, bad
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at <= 0 || at == len(a.Address)-1 {
		return "", CodeInvalidEmail, bad
	}
	local, domain := a.Address[:at], strings.ToLower(a.Address[at+1:])
	// Address.String quotes the local part when needed and, with no name,
	// returns "<addr-spec>".
	out := (&mail.Address{Address: local + "@" + domain}).String()
	out = strings.TrimSuffix(strings.TrimPrefix(out, "<"), ">")
	if len(out) > maxEmailLen {
		return "", CodeInvalidEmail, fmt.Sprintf("e-mail address is longer than %d bytes", maxEmailLen)
	}
	return out, "", ""
}

// normalizeURL returns s with its scheme and host lower-cased, if it is an
// absolute http or https URL with a host, no userinfo and, if it names a
// port, one in 1..65535.
func normalizeURL(s string) (string, string, string) {
	if len(s) <= maxURLLen && isPlainURL(s) {
		return s, "", "" // what the parse below returns, without the parse
	}
	if utf8.RuneCountInString(s) > maxURLLen {
		return "", CodeInvalidURL, fmt.Sprintf("URL is longer than %d characters", maxURLLen)
	}
	if !utf8.ValidString(s) {
		return "", CodeInvalidURL, "URL is not valid UTF-8"
	}
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return "", CodeInvalidURL, "not a valid URL"
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", CodeInvalidURL, "URL scheme must be http or https"
	case u.Opaque != "" || u.Hostname() == "":
		return "", CodeInvalidURL, "URL has no host"
	case u.User != nil:
		return "", CodeInvalidURL, "URL must not carry userinfo; put credentials in the recipient directory"
	case !validPort(u.Port()):
		return "", CodeInvalidURL, fmt.Sprintf("URL port %s is outside 1..65535", quoteShort(u.Port()))
	}
	u.Host = strings.ToLower(u.Host)
	out := u.String()
	if utf8.RuneCountInString(out) > maxURLLen {
		return "", CodeInvalidURL, fmt.Sprintf("URL is longer than %d characters", maxURLLen)
	}
	return out, "", ""
}

// validPort reports whether port, as url.URL.Port returns it (digits, or ""
// for none), is absent or in 1..65535. url.Parse refuses a port that is not
// digits but not one out of range, which no connection can reach.
func validPort(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n > 0
}

// isPlainURL reports whether s is an http or https URL that normalizeURL
// accepts and returns unchanged: lower-case scheme, a host of lower-case
// letters, digits, dots and hyphens with an optional numeric port in
// 1..65535, an optional path of unreserved characters and slashes, nothing
// else.
// url.Parse and URL.String take such a URL apart and put it back as it was.
func isPlainURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	i, port := 0, -1
	for ; i < len(rest) && rest[i] != '/'; i++ {
		switch c := rest[i]; {
		case c == ':' && port < 0 && i > 0:
			port = i
		case c >= '0' && c <= '9':
		case port < 0 && (c >= 'a' && c <= 'z' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	if i == 0 || i == port+1 {
		return false // no host, or an empty port
	}
	if port > 0 && !validPort(rest[port+1:i]) {
		return false
	}
	for _, c := range []byte(rest[i:]) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '/' || c == '.' || c == '_' || c == '~' || c == '-') {
			return false
		}
	}
	return true
}

// hasControl reports whether s holds a control character.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// quoteShort quotes s for an error message, cut to 40 bytes so that a huge
// bad value does not bloat the message.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:40], "") + "…"
	}
	return fmt.Sprintf("%q", s)
}
