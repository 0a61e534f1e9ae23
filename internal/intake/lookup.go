package intake

import (
	"slices"
	"strings"
)

// RecipientRefs returns the recipient refs (routes.recipient_ref, as
// Validate stores them) that what an operator typed may stand for, most
// likely first, without duplicates; nil for blank input. s may be:
//
//   - a ref as stored, "user:<id>": only that;
//   - a phone number, in E.164 or as typed ("+1 (415) 555-0123"),
//     normalized as an intent's audience.sms is; digits with no leading "+"
//     are read as E.164 without its "+", since intake never guesses a
//     region;
//   - an e-mail address, normalized as audience.email is (the domain
//     lower-cased, the local part as typed: herald keeps its case);
//   - a webhook URL, normalized as audience.webhook is;
//   - a user id, as "user:<id>" (which any input may also be).
//
// Input that no address rule accepts still yields its user ref.
func RecipientRefs(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if strings.HasPrefix(s, "user:") {
		return []string{s}
	}
	var refs []string
	add := func(ref string) {
		if ref != "" && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	switch {
	case strings.Contains(s, "://"):
		if v, code, _ := normalizeURL(s); code == "" {
			add(v)
		}
	case strings.Contains(s, "@"):
		if v, code, _ := normalizeEmail(s); code == "" {
			add(v)
		}
	case looksLikePhone(s):
		p := s
		if !strings.HasPrefix(p, "+") {
			p = "+" + p
		}
		if v, code, _ := normalizePhone(p); code == "" {
			add(v)
		}
	}
	add("user:" + s)
	return refs
}

// looksLikePhone reports whether s holds only what people type in a phone
// number: digits, an optional leading "+", spaces, dots, hyphens and
// parentheses, with at least one digit.
func looksLikePhone(s string) bool {
	digits := 0
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '+' && i == 0:
		case c == ' ' || c == '.' || c == '-' || c == '(' || c == ')':
		default:
			return false
		}
	}
	return digits > 0
}
