package herald

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/intake"
)

var (
	// ErrNotFound is returned by Client.Get and Client.Cancel when no
	// notification has the id.
	ErrNotFound = errors.New("herald: notification not found")

	// ErrIdempotencyConflict is matched (with errors.Is) by the
	// *ConflictError that Submit, SubmitTx and SubmitMany return when the
	// intent's (producer, idempotency key) was accepted before with a
	// different request: nothing new is stored.
	ErrIdempotencyConflict = errors.New("herald: idempotency key already used for a different request")

	// ErrForbidden is matched (with errors.Is) by the *ForbiddenError that
	// the client returns when the database refused the client's login: an
	// intent in another producer's name (in SubmitResult.Err, for that
	// intent alone), or a directory entry the login may not write.
	ErrForbidden = errors.New("herald: forbidden for this database login")
)

// ForbiddenError reports that the database refused the client's login the
// operation (SQLSTATE 42501: a missing grant, or a row-level security
// policy). errors.Is(err, ErrForbidden) is true for it; Unwrap returns the
// database's error.
type ForbiddenError struct {
	err error
}

// Error says what the database refused.
func (e *ForbiddenError) Error() string {
	return "herald: forbidden for this database login: " + e.err.Error()
}

// Is reports whether target is ErrForbidden.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// Unwrap returns the database's error.
func (e *ForbiddenError) Unwrap() error { return e.err }

// ConflictError reports an idempotency conflict: the intent's (Producer,
// IdempotencyKey) is held by notification ExistingID, whose request
// fingerprint differs from the intent's. errors.Is(err,
// ErrIdempotencyConflict) is true for it.
type ConflictError struct {
	// ExistingID is the id of the notification holding the key.
	ExistingID string
	// Producer and IdempotencyKey are the key (normalized).
	Producer       string
	IdempotencyKey string
}

// Error names the key's producer and the existing notification.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("herald: idempotency key of producer %q already used by notification %s for a different request",
		e.Producer, e.ExistingID)
}

// Is reports whether target is ErrIdempotencyConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrIdempotencyConflict }

// Failure codes name the rule a refused intent broke. Both doors use them:
// FieldError.Code of the Go client and malformed_intents.failure_code of the
// SQL intake. They never change meaning.
const (
	// CodeNotJSON: an intake entry is not JSON in UTF-8 (SQL door only).
	CodeNotJSON = intake.CodeNotJSON
	// CodeWrongShape: an intake entry is JSON but not an intent object: not
	// an object, an unknown or repeated field, a field of the wrong type
	// (SQL door only).
	CodeWrongShape = intake.CodeWrongShape
	// CodeTooLarge: an intake entry over 256 KiB, or content over
	// Limits.MaxPayloadBytes as canonical JSON.
	CodeTooLarge = intake.CodeTooLarge
	// CodeMissingField: a required field is absent or empty.
	CodeMissingField = intake.CodeMissingField
	// CodeInvalidField: a field has a bad format, length, value or range.
	CodeInvalidField = intake.CodeInvalidField
	// CodeUnknownChannel: a channel other than sms, email or webhook.
	CodeUnknownChannel = intake.CodeUnknownChannel
	// CodeInvalidPhone: an SMS number that is not a valid international
	// number with a leading "+".
	CodeInvalidPhone = intake.CodeInvalidPhone
	// CodeInvalidEmail: an e-mail address that does not parse as RFC 5322.
	CodeInvalidEmail = intake.CodeInvalidEmail
	// CodeInvalidURL: a webhook URL that is not absolute http(s) with a host.
	CodeInvalidURL = intake.CodeInvalidURL
	// CodeMissingContent: a listed channel has no content.
	CodeMissingContent = intake.CodeMissingContent
	// CodeSMSTooLong: the SMS body needs more than Limits.MaxSMSSegments
	// segments.
	CodeSMSTooLong = intake.CodeSMSTooLong
	// CodeScheduleOutOfRange: send_at beyond Limits.MaxScheduleAhead, or
	// expires_at not after now and send_at.
	CodeScheduleOutOfRange = intake.CodeScheduleOutOfRange
	// CodeTooManyRoutes: the intent fans out to more than Limits.MaxRoutes
	// routes.
	CodeTooManyRoutes = intake.CodeTooManyRoutes
	// CodeIdempotencyConflict: the key was used before with a different
	// request. The Go client returns a *ConflictError instead; the SQL
	// intake records the entry as malformed with this code.
	CodeIdempotencyConflict = intake.CodeIdempotencyConflict
	// CodeRejectedByDatabase: an intake entry passed validation but the
	// database refused it; the worker sets it aside with the database's
	// message (SQL door only).
	CodeRejectedByDatabase = intake.CodeRejectedByDatabase
	// CodeProducerMismatch: an intake entry names a producer other than the
	// database login that inserted it, and that login is neither a member
	// of herald_relay nor the engine's; nothing of it is accepted (SQL door
	// only: the Go client's submit in another's name fails with
	// ErrForbidden).
	CodeProducerMismatch = intake.CodeProducerMismatch
)

// FieldError is one reason an intent (or a recipient) was refused.
type FieldError struct {
	// Field is the JSON path of the offending field, e.g. "audience.sms[2]"
	// or "content.email.subject"; "" means the intent as a whole.
	Field string
	// Code is one of the failure codes (CodeMissingField, ...).
	Code string
	// Message says what is wrong, for a person. It never repeats a phone
	// number or e-mail address.
	Message string
}

// Error returns "field: message (code)".
func (e FieldError) Error() string {
	return intake.FieldError(e).Error()
}

// ValidationError is returned when an intent or a recipient is refused
// before anything is stored. It lists every field error found, not just
// the first.
type ValidationError struct {
	Errors []FieldError
}

// Error lists the field errors.
func (e *ValidationError) Error() string {
	return "herald: " + e.internal().Error()
}

// Code returns the first field error's code, or "" if there is none.
func (e *ValidationError) Code() string {
	return e.internal().Code()
}

func (e *ValidationError) internal() *intake.ValidationError {
	ie := &intake.ValidationError{Errors: make([]intake.FieldError, len(e.Errors))}
	for i, fe := range e.Errors {
		ie.Errors[i] = intake.FieldError(fe)
	}
	return ie
}

// publicError converts the validator's *intake.ValidationError into a
// *ValidationError; other errors pass through.
func publicError(err error) error {
	var ve *intake.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &ValidationError{Errors: make([]FieldError, len(ve.Errors))}
	for i, fe := range ve.Errors {
		out.Errors[i] = FieldError(fe)
	}
	return out
}
