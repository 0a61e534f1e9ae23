package intake

import (
	"fmt"
	"strings"
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
