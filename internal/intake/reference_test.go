package intake

// This file keeps normalizeList and normalizeURL as they were before their
// fast paths, verbatim but for the ref prefix: the reference the fast
// paths must match. Do not "fix" them. The references of canonical JSON
// and the fingerprint are in package canonjsonref.

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/harness/canonjsonref"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// refFingerprint returns the encoding/json reference's fingerprint of the
// normalized intent in, whose canonical content JSON is payload: it covers
// everything in the intent but request_id, trace_id and occurred_at.
func refFingerprint(in *Intent, payload []byte) string {
	return canonjsonref.Fingerprint(&canonjson.Request{
		NotificationType: in.NotificationType,
		Producer:         in.Producer,
		IdempotencyKey:   in.IdempotencyKey,
		Channels:         in.Channels,
		UserIDs:          in.Audience.UserIDs,
		SMS:              in.Audience.SMS,
		Email:            in.Audience.Email,
		Webhook:          in.Audience.Webhook,
		Content:          payload,
		SendAt:           in.SendAt,
		ExpiresAt:        in.ExpiresAt,
		Priority:         string(in.Priority),
		MaxAttempts:      in.MaxAttempts,
	})
}

// normalizeList normalizes each element of list with norm, which returns
// the normalized value or a code and message. Invalid elements are
// reported as field[i]; duplicates after normalization are dropped, keeping
// the first.
func refNormalizeList(errs *errorList, field string, list []string, norm func(string) (string, heraldtype.Code, string)) []string {
	var out []string
	seen := map[string]bool{}
	for i, s := range list {
		v, code, msg := norm(strings.TrimSpace(s))
		if code != "" {
			errs.add(fmt.Sprintf("%s[%d]", field, i), code, "%s", msg)
			continue
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// normalizeURL returns s with its scheme and host lower-cased, if it is an
// absolute http or https URL with a host and no userinfo.
//
// The port rule (1..65535) and the UTF-8 check were added after the fast
// path, with the same rule in both; the port rule is written here
// without validPort.
func refNormalizeURL(s string) (string, heraldtype.Code, string) {
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
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", heraldtype.CodeInvalidURL, fmt.Sprintf("URL port %s is outside 1..65535", quoteShort(p))
		}
	}
	u.Host = strings.ToLower(u.Host)
	out := u.String()
	if utf8.RuneCountInString(out) > maxURLLen {
		return "", heraldtype.CodeInvalidURL, fmt.Sprintf("URL is longer than %d characters", maxURLLen)
	}
	return out, "", ""
}
