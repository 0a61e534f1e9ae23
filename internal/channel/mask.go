package channel

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaskAddress returns addr with enough hidden that it can be logged or
// stored in an error message: a phone number keeps its first four digits
// and its last two ("+1415*****00"), an e-mail address keeps the first
// character of its local part and its domain ("j***@example.com"), and a
// URL is reduced to its scheme and host ("https://hooks.example.com"), so
// paths, queries and credentials that often carry tokens never leak.
// Anything else keeps only its first character. An empty addr returns "".
func MaskAddress(addr string) string {
	addr = strings.TrimSpace(addr)
	switch {
	case addr == "":
		return ""
	case strings.Contains(addr, "://"):
		return maskURL(addr)
	case strings.Contains(addr, "@"):
		return maskEmail(addr)
	case looksLikePhone(addr):
		return maskPhone(addr)
	default:
		r, _ := utf8.DecodeRuneInString(addr)
		return string(r) + "***"
	}
}

// maskURL keeps the scheme and host of a URL; an unparsable URL is hidden
// whole.
func maskURL(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "[url]"
	}
	return u.Scheme + "://" + u.Host
}

// maskEmail keeps the first character of the local part and the domain.
func maskEmail(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	local, domain := addr[:at], addr[at+1:]
	// A display name or angle brackets ("Jane <jane@example.com>") are
	// dropped along with most of the local part.
	if i := strings.LastIndexByte(local, '<'); i >= 0 {
		local = local[i+1:]
	}
	domain = strings.TrimSuffix(domain, ">")
	if local == "" {
		return "***@" + domain
	}
	r, _ := utf8.DecodeRuneInString(local)
	return string(r) + "***@" + domain
}

// looksLikePhone reports whether s is made of digits with an optional
// leading '+' and the usual separators.
func looksLikePhone(s string) bool {
	digits := 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '+' && i == 0:
		case r == ' ' || r == '-' || r == '(' || r == ')' || r == '.':
		default:
			return false
		}
	}
	return digits >= 3
}

// maskPhone keeps a leading '+', the first four and the last two digits of
// a long number; shorter numbers keep less, and a number of six digits or
// fewer keeps none.
func maskPhone(s string) string {
	var digits []byte
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			digits = append(digits, s[i])
		}
	}
	prefix := ""
	if strings.HasPrefix(s, "+") {
		prefix = "+"
	}
	n := len(digits)
	head, tail := 4, 2
	switch {
	case n <= 6:
		head, tail = 0, 0
	case n <= 9:
		head, tail = 2, 2
	}
	return prefix + string(digits[:head]) + strings.Repeat("*", n-head-tail) + string(digits[n-tail:])
}

var (
	// emailPattern finds e-mail addresses inside free text.
	emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+\-'!#$&*/=?^{|}~]+@[A-Za-z0-9.\-]+[A-Za-z0-9]`)
	// phonePattern finds runs of seven or more digits, optionally with a
	// leading '+' and separators, inside free text.
	phonePattern = regexp.MustCompile(`\+?\d[\d \-().]{5,}\d`)
	// statusCodePattern is a 32-bit code written as protocols write them
	// ("0x0000000D", an SMPP command_status): not a number to mask.
	// codeOrPhonePattern finds such codes, or else phone numbers: a code
	// starting where a phone number would is kept whole.
	statusCodePattern  = regexp.MustCompile(`^0[xX][0-9A-Fa-f]{8}$`)
	codeOrPhonePattern = regexp.MustCompile(`0[xX][0-9A-Fa-f]{8}\b|` + phonePattern.String())
	// urlPattern finds absolute http(s) URLs inside free text.
	urlPattern = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>]+`)
)

// Redact returns s, a piece of free text from a remote system (an SMTP
// reply, a provider's error message), with every e-mail address, long
// digit run and URL in it masked by MaskAddress, and cut to at most max
// bytes (0 means no limit) on a rune boundary with "…" appended. Use it
// before putting anything a remote system said into an Outcome or a log.
func Redact(s string, max int) string {
	s = urlPattern.ReplaceAllStringFunc(s, MaskAddress)
	s = emailPattern.ReplaceAllStringFunc(s, MaskAddress)
	s = codeOrPhonePattern.ReplaceAllStringFunc(s, func(m string) string {
		if statusCodePattern.MatchString(m) || countDigits(m) < 7 {
			return m
		}
		return MaskAddress(m)
	})
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}
