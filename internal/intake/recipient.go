package intake

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// maxLocaleLen bounds recipients.locale, a BCP 47 tag such as "pt-BR".
const maxLocaleLen = 35

// ValidateRecipient checks r with the intent's address rules (E.164 phone,
// RFC 5322 e-mail, absolute http(s) URL; each may be empty) and returns it
// normalized: addresses as Validate normalizes them, OptedOut sorted
// without duplicates. On refusal the error is a *heraldtype.ValidationError
// naming the fields user_id, email, phone, webhook_url, locale or
// opted_out[i].
func ValidateRecipient(r heraldtype.Recipient) (heraldtype.Recipient, error) {
	var errs errorList
	out := heraldtype.Recipient{}
	out.UserID = strings.TrimSpace(r.UserID)
	switch {
	case out.UserID == "":
		errs.add("user_id", heraldtype.CodeMissingField, "user_id is required")
	case !utf8.ValidString(out.UserID) || hasControl(out.UserID):
		errs.add("user_id", heraldtype.CodeInvalidField, "user_id has invalid UTF-8 or control characters")
	case utf8.RuneCountInString(out.UserID) > maxUserIDLen:
		errs.add("user_id", heraldtype.CodeInvalidField, "user_id is longer than %d characters", maxUserIDLen)
	}
	addr := func(field, s string, norm func(string) (string, heraldtype.Code, string)) string {
		s = strings.TrimSpace(s)
		if s == "" {
			return ""
		}
		v, code, msg := norm(s)
		if code != "" {
			errs.add(field, code, "%s", msg)
		}
		return v
	}
	out.Email = addr("email", r.Email, normalizeEmail)
	out.Phone = addr("phone", r.Phone, normalizePhone)
	out.WebhookURL = addr("webhook_url", r.WebhookURL, normalizeURL)
	out.Locale = strings.TrimSpace(r.Locale)
	if len(out.Locale) > maxLocaleLen || strings.IndexFunc(out.Locale, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	}) >= 0 {
		errs.add("locale", heraldtype.CodeInvalidField, "locale must be a language tag such as pt-BR")
	}
	out.OptedOut = []string{}
	for i, c := range r.OptedOut {
		c = strings.TrimSpace(c)
		if !slices.Contains(knownChannels, c) {
			errs.add(fmt.Sprintf("opted_out[%d]", i), heraldtype.CodeUnknownChannel, "unknown channel %s; want sms, email or webhook", quoteShort(c))
			continue
		}
		out.OptedOut = append(out.OptedOut, c)
	}
	slices.Sort(out.OptedOut)
	out.OptedOut = slices.Compact(out.OptedOut)
	if err := errs.err(); err != nil {
		return heraldtype.Recipient{}, err
	}
	return out, nil
}
