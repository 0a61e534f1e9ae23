package heraldtype

import (
	"fmt"
	"strings"
)

// Code is a failure code: a stable token naming the rule a refused intent
// (or directory entry) broke. The Go client returns it in FieldError.Code
// and the intake worker stores it in malformed_intents.failure_code, so the
// two doors report a bad intent the same way.
type Code string

// Failure codes. Each is a stable token that never changes meaning. Never
// rename one; add new ones instead.
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
//	unknown_template       the intent names a template (or a version of one) its
//	                       producer does not have
//	content_blocked        the intent's text matches a content blocklist rule in
//	                       refuse mode (or an operator rejected it after review)
//	campaign_canceled      the intent names a campaign that was canceled
//	                       (returned by the accept path)
//	callback_url_needs_subscription  the intent has a callback_url but its
//	                       producer has no callback subscription to sign its
//	                       callbacks (returned by the accept path)
//	sender_not_approved    the intent's from_sender is not an approved sender
//	                       of its producer (returned by the accept path)
const (
	// CodeNotJSON: an intake entry is not valid JSON in UTF-8 (SQL door
	// only).
	CodeNotJSON Code = "not_json"
	// CodeWrongShape: an intake entry is JSON but not an intent object: the
	// top level is not an object, a field is unknown or repeated, or a field
	// has the wrong JSON type; FieldError.Field names the field (SQL door
	// only).
	CodeWrongShape Code = "wrong_shape"
	// CodeTooLarge: an intake entry over 256 KiB (Field ""), or content over
	// Limits.MaxPayloadBytes as canonical JSON (Field "content").
	CodeTooLarge Code = "too_large"
	// CodeMissingField: a required field is absent or empty.
	CodeMissingField Code = "missing_field"
	// CodeInvalidField: a field is present but has a bad format, length,
	// enum value or range.
	CodeInvalidField Code = "invalid_field"
	// CodeUnknownChannel: a channel other than sms, email or webhook.
	CodeUnknownChannel Code = "unknown_channel"
	// CodeInvalidPhone: an SMS number that lacks a leading "+", is not a
	// valid number according to libphonenumber, or carries an extension.
	CodeInvalidPhone Code = "invalid_phone"
	// CodeInvalidEmail: an e-mail address that does not parse as one RFC
	// 5322 address, or is longer than 254 bytes.
	CodeInvalidEmail Code = "invalid_email"
	// CodeInvalidURL: a webhook URL that is not absolute http or https with
	// a host, carries userinfo, names a port outside 1..65535, or is longer
	// than 2048 characters.
	CodeInvalidURL Code = "invalid_url"
	// CodeMissingContent: a listed channel has no content.
	CodeMissingContent Code = "missing_content"
	// CodeSMSTooLong: the SMS body needs more segments than
	// Limits.MaxSMSSegments.
	CodeSMSTooLong Code = "sms_too_long"
	// CodeScheduleOutOfRange: send_at is further ahead than
	// Limits.MaxScheduleAhead, or expires_at is not after both now and
	// send_at.
	CodeScheduleOutOfRange Code = "schedule_out_of_range"
	// CodeTooManyRoutes: the intent fans out to more routes than
	// Limits.MaxRoutes.
	CodeTooManyRoutes Code = "too_many_routes"
	// CodeIdempotencyConflict: the (producer, idempotency key) pair was
	// accepted before with a different request fingerprint. The accept path
	// returns it, not the validator: the Go client as a *ConflictError, the
	// SQL door as a malformed entry with this code.
	CodeIdempotencyConflict Code = "idempotency_conflict"
	// CodeRejectedByDatabase: the database refused an intake entry the
	// validator accepted (a constraint or limit an administrator added,
	// say). The intake worker sets such an entry aside, with the database's
	// message, so that one entry cannot stall the intake (SQL door only).
	CodeRejectedByDatabase Code = "rejected_by_database"
	// CodeProducerMismatch: an intake entry names a producer other than the
	// database login that inserted it (herald.intake.submitted_by), and that
	// login is not trusted to submit in another's name: a member of
	// herald_relay, or of the intake's owner (the engine's login). The
	// intake worker sets such an entry aside, accepting nothing of it (SQL
	// door only: the Go client's submit in another's name fails with
	// ErrForbidden).
	CodeProducerMismatch Code = "producer_mismatch"
	// CodeUnknownTemplate: the intent names a template, or a version of
	// one, that its producer has not published (herald.templates).
	CodeUnknownTemplate Code = "unknown_template"
	// CodeContentBlocked: the intent's text (a template's, as rendered in
	// any of its locales) matches a rule of the content blocklist
	// (herald.content_rules) in refuse mode; the message names the rule.
	// An intent held by a review-mode rule and then rejected by an
	// operator is recorded in malformed_intents with this code too.
	CodeContentBlocked Code = "content_blocked"

	// Campaigns.

	// CodeCampaignCanceled: the intent names a campaign (Intent.Campaign)
	// whose cancel was requested: nothing more joins it. The accept path
	// returns it, not the validator: the Go client as a *ValidationError on
	// field "campaign", the SQL door as a malformed entry with this code.
	CodeCampaignCanceled Code = "campaign_canceled"

	// Status callbacks.

	// CodeCallbackURLNeedsSubscription: the intent has a callback_url, but
	// its producer has no callback subscription, whose secret or bearer
	// token signs the callbacks: the producer subscribes first (the Go
	// client's SetCallbackSubscription, PUT /v1/callback-subscription, or
	// herald.callback_subscription_set). The accept path returns it, not
	// the validator: the Go client as a *ValidationError on field
	// "callback_url", the SQL door as a malformed entry with this code.
	CodeCallbackURLNeedsSubscription Code = "callback_url_needs_subscription"

	// Senders.

	// CodeSenderNotApproved: the intent's FromSender is not a sender an
	// operator approved for its producer (herald.sender_ids, `herald
	// senders approve`), or its approval was revoked. The accept path
	// returns it, not the validator: the Go client as a *ValidationError
	// on field "from_sender", the SQL door as a malformed entry with this
	// code.
	CodeSenderNotApproved Code = "sender_not_approved"
)

// Codes returns every failure code, in the order documented above. The
// slice is fresh; callers may modify it.
func Codes() []Code {
	return []Code{
		CodeNotJSON, CodeWrongShape, CodeTooLarge, CodeMissingField,
		CodeInvalidField, CodeUnknownChannel, CodeInvalidPhone,
		CodeInvalidEmail, CodeInvalidURL, CodeMissingContent, CodeSMSTooLong,
		CodeScheduleOutOfRange, CodeTooManyRoutes, CodeIdempotencyConflict,
		CodeRejectedByDatabase, CodeProducerMismatch, CodeUnknownTemplate,
		CodeContentBlocked, CodeCampaignCanceled,
		CodeCallbackURLNeedsSubscription, CodeSenderNotApproved,
	}
}

// FieldError is one reason an intent (or a recipient) was refused.
type FieldError struct {
	// Field is the JSON path of the offending field, e.g. "audience.sms[2]"
	// or "content.email.subject"; "" means the intent (or the raw entry) as
	// a whole.
	Field string
	// Code is one of the failure codes (CodeMissingField, ...).
	Code Code
	// Message says what is wrong, for a person. It never repeats a phone
	// number or e-mail address.
	Message string
}

// Error returns "field: message (code)", or "message (code)" for the entry
// as a whole.
func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message + " (" + string(e.Code) + ")"
	}
	return e.Field + ": " + e.Message + " (" + string(e.Code) + ")"
}

// ValidationError is the error of an intent or a recipient refused before
// anything is stored: the Go client's submits and directory writes return
// it, and the intake worker records its Code and message for a malformed
// entry. It carries every field error found, not just the first.
type ValidationError struct {
	// Errors are the field errors, in the order they were found.
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
func (e *ValidationError) Code() Code {
	if len(e.Errors) == 0 {
		return ""
	}
	return e.Errors[0].Code
}
