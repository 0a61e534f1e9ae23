package intake

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"github.com/heraldhq/herald/internal/e164"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// normalizeList normalizes each element of list with norm, which returns
// the normalized value or a code and message. Invalid elements are
// reported as field[i]; duplicates after normalization are dropped, keeping
// the first.
func normalizeList(errs *errorList, field string, list []string, norm func(string) (string, heraldtype.Code, string)) []string {
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
func normalizePhone(s string) (string, heraldtype.Code, string) {
	const want = "want an international number with a leading +, e.g. +14155550123"
	if !strings.HasPrefix(s, "+") {
		return "", heraldtype.CodeInvalidPhone, "phone number has no leading +; " + want
	}
	if e164.Valid(s) {
		return s, "", "" // what the parse below returns, without the parse
	}
	num, err := phonenumbers.Parse(s, "ZZ")
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", heraldtype.CodeInvalidPhone, "not a valid phone number; " + want
	}
	if num.GetExtension() != "" {
		// E.164 has no extensions: dropping it would text the switchboard.
		return "", heraldtype.CodeInvalidPhone, "phone number has an extension, which no SMS can be delivered to; give the number without it"
	}
	return phonenumbers.Format(num, phonenumbers.E164), "", ""
}

// normalizeEmail returns the bare addr-spec of s as net/mail parses it,
// with the domain lower-cased and the local part quoted only if it must be.
func normalizeEmail(s string) (string, heraldtype.Code, string) {
	const bad = "not a valid e-mail address"
	if s == "" || !utf8.ValidString(s) || hasControl(s) {
		return "", heraldtype.CodeInvalidEmail, bad
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", heraldtype.CodeInvalidEmail, bad
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at <= 0 || at == len(a.Address)-1 {
		return "", heraldtype.CodeInvalidEmail, bad
	}
	local, domain := a.Address[:at], strings.ToLower(a.Address[at+1:])
	// Address.String quotes the local part when needed and, with no name,
	// returns "<addr-spec>".
	out := (&mail.Address{Address: local + "@" + domain}).String()
	out = strings.TrimSuffix(strings.TrimPrefix(out, "<"), ">")
	if len(out) > maxEmailLen {
		return "", heraldtype.CodeInvalidEmail, fmt.Sprintf("e-mail address is longer than %d bytes", maxEmailLen)
	}
	return out, "", ""
}

// normalizeURL returns s with its scheme and host lower-cased, if it is an
// absolute http or https URL with a host, no userinfo and, if it names a
// port, one in 1..65535.
func normalizeURL(s string) (string, heraldtype.Code, string) {
	if len(s) <= maxURLLen && isPlainURL(s) {
		return s, "", "" // what the parse below returns, without the parse
	}
	if utf8.RuneCountInString(s) > maxURLLen {
		return "", heraldtype.CodeInvalidURL, fmt.Sprintf("URL is longer than %d characters", maxURLLen)
	}
	if !utf8.ValidString(s) {
		return "", heraldtype.CodeInvalidURL, "URL is not valid UTF-8"
	}
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return "", heraldtype.CodeInvalidURL, "not a valid URL"
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", heraldtype.CodeInvalidURL, "URL scheme must be http or https"
	case u.Opaque != "" || u.Hostname() == "":
		return "", heraldtype.CodeInvalidURL, "URL has no host"
	case u.User != nil:
		return "", heraldtype.CodeInvalidURL, "URL must not carry userinfo; put credentials in the recipient directory"
	case !validPort(u.Port()):
		return "", heraldtype.CodeInvalidURL, fmt.Sprintf("URL port %s is outside 1..65535", quoteShort(u.Port()))
	}
	u.Host = strings.ToLower(u.Host)
	out := u.String()
	if utf8.RuneCountInString(out) > maxURLLen {
		return "", heraldtype.CodeInvalidURL, fmt.Sprintf("URL is longer than %d characters", maxURLLen)
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
