package main

import "github.com/heraldhq/herald/internal/operator"

// The operator commands check the form of the ids they are given before
// they touch the database (operator.ParseNotificationID and the rest): a
// mistyped one is a usage error, exit 2.

func parseNotificationID(s string) (string, error) { return usage(operator.ParseNotificationID(s)) }

func parseRouteRef(s string) (operator.RouteRef, error) { return usage(operator.ParseRouteArg(s)) }

func parseReplayID(s string) (string, error) { return usage(operator.ParseReplayID(s)) }

func parseMalformedID(s string) (string, error) { return usage(operator.ParseMalformedID(s)) }

func parseChannel(s string) (string, error) { return usage(operator.ParseChannel(s)) }

// usage returns v, and err as a usage error (exit 2) if it is not nil.
func usage[T any](v T, err error) (T, error) {
	if err != nil {
		return v, usageError{err}
	}
	return v, nil
}
