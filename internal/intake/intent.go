// Package intake is the first step of herald's data flow: it checks an
// intent and plans it, touching no database. DecodeRaw reads a raw entry
// of the SQL intake (herald.intake) into an Intent. Validate refuses a bad
// intent with every field error it finds, each with a stable failure code
// (a heraldtype.Code), or returns it normalized (names trimmed, phone
// numbers in E.164, e-mail domains lower-cased, duplicate recipients
// dropped), with its canonical content JSON, its request fingerprint and
// one route plan per (delivery channel, recipient), SMS segments counted.
//
// Both doors use it: the Go client at the module root and the intake
// worker of package accept, which then store what it validated through
// accept.Accept. Canonical JSON and the fingerprint's encoding are package
// canonjson's.
package intake

import (
	"fmt"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// The intent this package validates is heraldtype's, the one type both
// doors share; these aliases let the packages that build intents to
// validate (tests, the demo, the benchmarks) name it next to Validate.
type (
	// Intent is heraldtype.Intent, one request to notify an audience.
	Intent = heraldtype.Intent
	// Audience is heraldtype.Audience, who an intent is for.
	Audience = heraldtype.Audience
	// Content is heraldtype.Content, what an intent sends per channel.
	Content = heraldtype.Content
	// SMSContent is heraldtype.SMSContent, an SMS body.
	SMSContent = heraldtype.SMSContent
	// EmailContent is heraldtype.EmailContent, an e-mail's subject and
	// bodies.
	EmailContent = heraldtype.EmailContent
)

// errorList collects field errors while validating.
type errorList []heraldtype.FieldError

func (l *errorList) add(field string, code heraldtype.Code, format string, args ...any) {
	*l = append(*l, heraldtype.FieldError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

// err returns nil when l is empty and a *heraldtype.ValidationError
// otherwise.
func (l errorList) err() error {
	if len(l) == 0 {
		return nil
	}
	return &heraldtype.ValidationError{Errors: l}
}
