// Package connstr masks the passwords of PostgreSQL connection strings, URL
// and keyword/value forms alike, wherever herald prints one: flag defaults,
// summaries, error messages; and connects with one (Connect), its errors
// masked alike, or, for a read that may be served by a streaming replica,
// with the replica or the primary, whichever is fresh enough
// (ConnectRead).
package connstr

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a password wherever herald prints a connection string: the
// mask pgx uses in its own parse errors.
const Mask = "xxxxx"

// Redact returns the PostgreSQL connection string s with its
// passwords masked, for printing (flag defaults, summaries, errors):
// "postgres://user:xxxxx@host/db" for a URL, whose password and sslpassword
// parameters are masked too, and "password=xxxxx" in the keyword/value
// form. A URL that does not parse has everything from its first ':' to its
// last '@' after "://" masked: too much rather than too little.
func Redact(s string) string {
	rest, ok := cutScheme(s)
	if !ok {
		return kvPassword.ReplaceAllString(s, "${1}password="+Mask)
	}
	u, err := url.Parse(s)
	if err != nil {
		userinfo, after, found := cutLast(rest, "@")
		if i := strings.IndexByte(userinfo, ':'); found && i >= 0 {
			return s[:len(s)-len(rest)] + userinfo[:i+1] + Mask + "@" + after
		}
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Mask)
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			k, _, _ := strings.Cut(p, "=")
			if k, err := url.QueryUnescape(k); err == nil && isPasswordKey(k) {
				params[i] = k + "=" + Mask
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	return u.String()
}

// kvPassword matches a password or sslpassword setting of a keyword/value
// connection string, its value plain or single-quoted.
var kvPassword = regexp.MustCompile(`(?i)\b(ssl)?password\s*=\s*(?:'(?:[^'\\]|\\.)*'?|(?:\\.|[^\s\\])*)`)

func isPasswordKey(k string) bool {
	k = strings.ToLower(k)
	return k == "password" || k == "sslpassword"
}

// cutScheme returns what follows "postgres://" or "postgresql://" in s.
func cutScheme(s string) (string, bool) {
	for _, p := range []string{"postgres://", "postgresql://"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return s[len(p):], true
		}
	}
	return "", false
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// RedactErr returns err's message with the passwords of connString, the
// connection string it is about, masked. pgx masks them in its own parse
// errors already, on a best-effort basis for a malformed string; this masks
// the string quoted whole, and then every password of it left in the
// message, even where the same text stands for something else (a user
// named like its password): too much rather than too little.
func RedactErr(err error, connString string) string {
	s := err.Error()
	if connString == "" {
		return s
	}
	s = strings.ReplaceAll(s, connString, Redact(connString))
	for _, pw := range connSecrets(connString) {
		s = strings.ReplaceAll(s, pw, Mask)
	}
	return s
}

// connSecrets returns the passwords s holds, as written and decoded.
func connSecrets(s string) []string {
	var out []string
	add := func(v string) {
		if v != "" && v != Mask {
			out = append(out, v)
		}
	}
	if rest, ok := cutScheme(s); ok {
		// The userinfo ends at the authority's last '@' or, if the
		// password holds an unescaped '/', at the string's.
		authority, _, _ := strings.Cut(rest, "/")
		for _, a := range []string{authority, rest} {
			if userinfo, _, found := cutLast(a, "@"); found {
				if _, pw, ok := strings.Cut(userinfo, ":"); ok {
					add(pw)
					if dec, err := url.PathUnescape(pw); err == nil {
						add(dec)
					}
				}
			}
		}
		if _, q, ok := strings.Cut(rest, "?"); ok {
			for _, p := range strings.Split(q, "&") {
				k, v, _ := strings.Cut(p, "=")
				if k, err := url.QueryUnescape(k); err == nil && isPasswordKey(k) {
					add(v)
					if dec, err := url.QueryUnescape(v); err == nil {
						add(dec)
					}
				}
			}
		}
		return out
	}
	for _, m := range kvPassword.FindAllString(s, -1) {
		_, v, _ := strings.Cut(m, "=")
		v = strings.TrimSpace(v)
		add(v)
		if unq, ok := strings.CutPrefix(v, "'"); ok {
			unq = strings.TrimSuffix(unq, "'")
			add(strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(unq))
		}
	}
	return out
}
