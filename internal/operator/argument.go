package operator

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/routing"
)

// The operator commands check the form of the ids they are given before
// they touch the database, so that a mistyped argument is a usage error
// (exit 2) and not a replay of nothing, with its audit row, or an empty
// answer that reads like a real one. The forms are the ones herald
// assigns. Each Parse function's error is one line naming the argument.

// ParseNotificationID returns s if it is a notification id: a UUID in its
// 36-character text form (the UUIDv7 intake assigns), in lower case as
// stored.
func ParseNotificationID(s string) (string, error) {
	if len(s) == 36 {
		if id, err := uuid.Parse(s); err == nil {
			return id.String(), nil
		}
	}
	return "", fmt.Errorf("invalid notification id %s: want a UUID such as 0192f1c2-3b4a-7d5e-8f60-123456789abc", QuoteArg(s))
}

// routeIDForm is a route id: "<channel>:" and hex digits (intake writes the
// first 12 of a SHA-256).
var routeIDForm = regexp.MustCompile(`^([a-z]+):[0-9a-f]{1,64}$`)

// ParseRouteArg reads NOTIFICATION_ID or NOTIFICATION_ID/ROUTE_ID, each in
// the form herald assigns (ParseRouteRef, more lenient, checks neither).
func ParseRouteArg(s string) (RouteRef, error) {
	nid, rid, hasRoute := strings.Cut(s, "/")
	id, err := ParseNotificationID(nid)
	if err != nil {
		return RouteRef{}, err
	}
	if !hasRoute {
		return RouteRef{NotificationID: id}, nil
	}
	if m := routeIDForm.FindStringSubmatch(rid); m == nil || !slices.Contains(intake.RouteChannels(), m[1]) {
		return RouteRef{}, fmt.Errorf("invalid route id %s in %s: want CHANNEL:HEX as listed, e.g. email:3f2a9c1b7d4e", QuoteArg(rid), QuoteArg(s))
	}
	return RouteRef{NotificationID: id, RouteID: rid}, nil
}

// replayIDForm is a replay id as Replay and EnqueueReplay assign it:
// "rpl_" and 16 hex digits.
var replayIDForm = regexp.MustCompile(`^rpl_[0-9a-f]{16}$`)

// ParseReplayID returns s if it is a replay id.
func ParseReplayID(s string) (string, error) {
	if !replayIDForm.MatchString(s) {
		return "", fmt.Errorf("invalid replay id %s: want rpl_ and 16 hex digits, as replay printed", QuoteArg(s))
	}
	return s, nil
}

// malformedIDForm is a malformed intent's id: "intake:" and the intake
// entry's id, or "held:" and the id of a held intent an operator rejected.
var malformedIDForm = regexp.MustCompile(`^(intake|held):[1-9][0-9]{0,18}$`)

// ParseMalformedID returns s if it is a malformed intent's id.
func ParseMalformedID(s string) (string, error) {
	if !malformedIDForm.MatchString(s) {
		return "", fmt.Errorf("invalid id %s: want intake:N or held:N, as malformed list prints", QuoteArg(s))
	}
	return s, nil
}

// ParseChannel returns s if it names a channel a route can have ("" for
// no filter).
func ParseChannel(s string) (string, error) {
	if s != "" && !slices.Contains(intake.RouteChannels(), s) {
		return "", fmt.Errorf("invalid -channel %s: want one of %s", QuoteArg(s), strings.Join(intake.RouteChannels(), ", "))
	}
	return s, nil
}

// ParseSince reads -since: a duration back from now ("24h") or a time
// (RFC 3339); "" is the zero time, no bound.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid -since %q: want a duration like 24h or an RFC 3339 time", s)
	}
	return t, nil
}

// QuoteArg quotes a command-line argument for an error message, cut to 64
// bytes so that one line stays one readable line.
func QuoteArg(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return fmt.Sprintf("%q", s)
}

// DeadLetterArgs are the arguments of `herald dead-letters list` and
// `replay`, as given: the filter flags (Filter, but for Since), -since, and
// replay's ids, -all, -batch-size and -async-threshold.
type DeadLetterArgs struct {
	Filter         Filter
	Since          string
	IDs            []string
	All            bool
	BatchSize      int
	AsyncThreshold int64
}

// ListFilter returns the filter list uses: Since read back from now
// (ParseSince), Channel checked (ParseChannel) and Classification checked
// (one a dead letter can have, or an outcome class: ClassificationHelp).
func (a *DeadLetterArgs) ListFilter(now time.Time) (Filter, error) {
	f, err := a.filter(now)
	if err != nil {
		return f, err
	}
	return f, checkClassification(f.Classification)
}

func (a *DeadLetterArgs) filter(now time.Time) (f Filter, err error) {
	f = a.Filter
	if f.Since, err = ParseSince(a.Since, now); err != nil {
		return f, err
	}
	_, err = ParseChannel(f.Channel)
	return f, err
}

// ReplayFilter checks BatchSize and AsyncThreshold, then returns ListFilter
// with the IDs (ParseRouteArg) added, Classification checked last. It refuses to replay everything
// unless All is set: no id and no filter is a mistake.
func (a *DeadLetterArgs) ReplayFilter(now time.Time) (Filter, error) {
	if a.BatchSize < 1 || a.BatchSize > MaxBatchSize {
		return Filter{}, fmt.Errorf("invalid -batch-size %d: want 1 to %d", a.BatchSize, MaxBatchSize)
	}
	if a.AsyncThreshold < 0 {
		return Filter{}, fmt.Errorf("invalid -async-threshold %d: must not be negative", a.AsyncThreshold)
	}
	f, err := a.filter(now)
	if err != nil {
		return f, err
	}
	for _, s := range a.IDs {
		ref, err := ParseRouteArg(s)
		if err != nil {
			return f, err
		}
		f.IDs = append(f.IDs, ref)
	}
	g := a.Filter
	if len(f.IDs) == 0 && g.Channel == "" && g.Producer == "" && g.NotificationType == "" && g.Provider == "" && g.Classification == "" && a.Since == "" && !a.All {
		return f, errors.New("replay needs ids, a filter (-channel, -producer, -type, -provider, -classification, -since) or -all")
	}
	return f, checkClassification(f.Classification)
}

// RoutingTestArgs are the arguments of `herald routing test`, as given:
// the flags (-channel, -producer, -type, -priority, -tried) and the
// destination.
type RoutingTestArgs struct {
	Channel, Destination, Producer, NotificationType, Priority string
	// Tried is comma-separated; "" for none.
	Tried string
}

// PickInput returns the route TestRouting is asked about: Channel guessed
// from Destination when empty (routing.GuessChannel) and checked
// (ParseChannel), Priority transactional or bulk, Tried split at its
// commas. Its error is one line naming the argument.
func (a *RoutingTestArgs) PickInput() (routing.PickInput, error) {
	in := routing.PickInput{Channel: a.Channel, Destination: a.Destination, Producer: a.Producer,
		NotificationType: a.NotificationType, Priority: a.Priority}
	if in.Channel == "" {
		if in.Channel = routing.GuessChannel(a.Destination); in.Channel == "" {
			return in, fmt.Errorf("cannot tell the channel of %s: give -channel", QuoteArg(a.Destination))
		}
	}
	if _, err := ParseChannel(in.Channel); err != nil {
		return in, err
	}
	if in.Priority != string(heraldtype.PriorityTransactional) && in.Priority != string(heraldtype.PriorityBulk) {
		return in, fmt.Errorf("invalid -priority %s: want transactional or bulk", QuoteArg(in.Priority))
	}
	if a.Tried != "" {
		in.Tried = strings.Split(a.Tried, ",")
	}
	return in, nil
}

// FailureCodes returns every failure code, as `herald malformed list
// -code` takes it.
func FailureCodes() []string {
	var codes []string
	for _, c := range heraldtype.Codes() {
		codes = append(codes, string(c))
	}
	return codes
}

// ParseMalformedFilter returns f, its FailureCode checked (one of
// FailureCodes, or "") and its Since read from since (ParseSince).
func ParseMalformedFilter(f MalformedFilter, since string, now time.Time) (MalformedFilter, error) {
	if codes := FailureCodes(); f.FailureCode != "" && !slices.Contains(codes, f.FailureCode) {
		return f, fmt.Errorf("invalid -code %s: want one of %s", QuoteArg(f.FailureCode), strings.Join(codes, ", "))
	}
	var err error
	f.Since, err = ParseSince(since, now)
	return f, err
}
