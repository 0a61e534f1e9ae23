package herald

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/heraldtype"
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
	// Producer is the producer the refused intent names; "" when the
	// refusal is not of an intent (a directory entry, a hold).
	Producer string
	err      error
}

// Error says what the database refused and, for an intent, the rule it
// broke: the row-level policy's own words name a table, not the rule.
func (e *ForbiddenError) Error() string {
	if e.Producer != "" {
		return fmt.Sprintf("herald: forbidden for this database login: the intent names producer %q, and a producer login "+
			"submits only as itself (a service submitting for several producers logs in with the herald_relay role): %v",
			e.Producer, e.err)
	}
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

// FieldError is one reason an intent (or a recipient) was refused: the
// JSON path of its Field, its failure Code and a Message for a person, as
// the package documentation's section "Errors" describes. Its Error method
// returns "field: message (code)".
type FieldError = heraldtype.FieldError

// ValidationError is returned when an intent or a recipient is refused
// before anything is stored. Its Errors list every FieldError found, not
// just the first; its Code method returns the first one's code ("" if
// there is none).
type ValidationError = heraldtype.ValidationError
