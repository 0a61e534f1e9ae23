package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
)

// The operator commands check the form of the ids they are given before
// they touch the database, so that a mistyped argument is a usage error
// (exit 2) and not a replay of nothing, with its audit row, or an empty
// answer that reads like a real one. The forms are the ones herald assigns.

// parseNotificationID returns s if it is a notification id: a UUID in its
// 36-character text form (the UUIDv7 intake assigns), in lower case as
// stored.
func parseNotificationID(s string) (string, error) {
	if len(s) == 36 {
		if id, err := uuid.Parse(s); err == nil {
			return id.String(), nil
		}
	}
	return "", usageError{fmt.Errorf("invalid notification id %s: want a UUID such as 0192f1c2-3b4a-7d5e-8f60-123456789abc", quoteArg(s))}
}

// routeIDForm is a route id: "<channel>:" and hex digits (intake writes the
// first 12 of a SHA-256).
var routeIDForm = regexp.MustCompile(`^([a-z]+):[0-9a-f]{1,64}$`)

// parseRouteRef reads NOTIFICATION_ID or NOTIFICATION_ID/ROUTE_ID, each in
// the form herald assigns.
func parseRouteRef(s string) (operator.RouteRef, error) {
	nid, rid, hasRoute := strings.Cut(s, "/")
	id, err := parseNotificationID(nid)
	if err != nil {
		return operator.RouteRef{}, err
	}
	if !hasRoute {
		return operator.RouteRef{NotificationID: id}, nil
	}
	if m := routeIDForm.FindStringSubmatch(rid); m == nil || !slices.Contains(intake.RouteChannels(), m[1]) {
		return operator.RouteRef{}, usageError{fmt.Errorf("invalid route id %s in %s: want CHANNEL:HEX as listed, e.g. email:3f2a9c1b7d4e", quoteArg(rid), quoteArg(s))}
	}
	return operator.RouteRef{NotificationID: id, RouteID: rid}, nil
}

// replayIDForm is a replay id as operator.Replay and EnqueueReplay assign
// it: "rpl_" and 16 hex digits.
var replayIDForm = regexp.MustCompile(`^rpl_[0-9a-f]{16}$`)

// parseReplayID returns s if it is a replay id.
func parseReplayID(s string) (string, error) {
	if !replayIDForm.MatchString(s) {
		return "", usageError{fmt.Errorf("invalid replay id %s: want rpl_ and 16 hex digits, as replay printed", quoteArg(s))}
	}
	return s, nil
}

// malformedIDForm is a malformed intent's id: "intake:" and the intake
// entry's id, or "held:" and the id of a held intent an operator rejected.
var malformedIDForm = regexp.MustCompile(`^(intake|held):[1-9][0-9]{0,18}$`)

// parseMalformedID returns s if it is a malformed intent's id.
func parseMalformedID(s string) (string, error) {
	if !malformedIDForm.MatchString(s) {
		return "", usageError{fmt.Errorf("invalid id %s: want intake:N or held:N, as malformed list prints", quoteArg(s))}
	}
	return s, nil
}

// parseChannel returns s if it names a channel a route can have ("" for
// no filter).
func parseChannel(s string) (string, error) {
	if s != "" && !slices.Contains(intake.RouteChannels(), s) {
		return "", usageError{fmt.Errorf("invalid -channel %s: want one of %s", quoteArg(s), strings.Join(intake.RouteChannels(), ", "))}
	}
	return s, nil
}

// quoteArg quotes a command-line argument for an error message, cut to 64
// bytes so that one line stays one readable line.
func quoteArg(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return fmt.Sprintf("%q", s)
}
