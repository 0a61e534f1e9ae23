package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/operator"
)

// TestFindCmd_ByRecipient finds the notifications to a phone number typed
// as a person would, in text and JSON, page by page, and what a producer's
// login finds.
func TestFindCmd_ByRecipient(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	nameA, _, envA := loginAs(t, b, "shop", "herald_producer")
	// operatortest's sms routes go to +14155550123.
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 3, Channel: "sms", Producer: "billing"})
	dead := operatortest.Seed(t, b.pool, operatortest.Spec{N: 1, Channel: "sms", Producer: nameA, Dead: true})
	operatortest.Seed(t, b.pool, operatortest.Spec{N: 2, Channel: "email", Producer: "billing"})

	out, stderr, err := run(t, b.env, "find", "-recipient", "+1 (415) 555-0123")
	require.NoError(t, err, stderr)
	require.Contains(t, out, `recipient "+1 (415) 555-0123", looked up as +14155550123 or user:+1 (415) 555-0123`)
	require.Contains(t, out, "newest 4 notifications")
	require.Equal(t, 4, strings.Count(out, "+14155550123  "), out)
	require.Contains(t, out, "dead letters:")
	require.Contains(t, out, dead[0].NotificationID+"/"+dead[0].RouteID)
	require.NotContains(t, out, "more:")

	var s operator.RecipientSearch
	runJSON(t, b.env, &s, "find", "-recipient", "+14155550123")
	require.Len(t, s.Routes, 4)
	require.Equal(t, dead[0].NotificationID, s.Routes[0].NotificationID, "newest first")
	require.Len(t, s.DeadLetters, 1)
	require.Empty(t, s.Next)

	// Pages of two: the text names the command for the next.
	out, stderr, err = run(t, b.env, "find", "-recipient", "+14155550123", "-limit", "2")
	require.NoError(t, err, stderr)
	require.Contains(t, out, `more: herald find -recipient "+14155550123" --after `)
	var page operator.RecipientSearch
	runJSON(t, b.env, &page, "find", "-recipient", "+14155550123", "-limit", "2")
	require.Len(t, page.Routes, 2)
	require.NotEmpty(t, page.Next)
	var rest operator.RecipientSearch
	runJSON(t, b.env, &rest, "find", "-recipient", "+14155550123", "-limit", "2", "-after", page.Next)
	require.Len(t, rest.Routes, 2)
	require.Empty(t, rest.Next)
	require.Equal(t, s.Routes[2:], rest.Routes)

	// Nobody.
	out, stderr, err = run(t, b.env, "find", "-recipient", "nobody@example.com")
	require.NoError(t, err, stderr)
	require.Contains(t, out, "no notifications to this recipient")
	require.Contains(t, out, "no dead letters of this recipient")

	// A producer's login finds its own only.
	var own operator.RecipientSearch
	runJSON(t, envA, &own, "find", "-recipient", "+14155550123")
	require.Len(t, own.Routes, 1)
	require.Equal(t, nameA, own.Routes[0].Producer)
	require.Len(t, own.DeadLetters, 1)
}

func TestFindCmd_UsageErrorsExit2(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	for _, args := range [][]string{
		{"find"},
		{"find", "-producer", "shop"},
		{"find", "-recipient", "+14155550123", "-producer", "shop", "-key", "k"},
		{"find", "-recipient", "+14155550123", "-limit", "0"},
		{"find", "-recipient", " "},
		{"find", "-recipient", "+14155550123", "-after", "not-a-cursor"},
		{"find", "-recipient", "+14155550123", "extra"},
	} {
		stdout, stderr, code := execute(t, b.env, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
		require.Empty(t, stdout, "%v", args)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "%v: one line: %s", args, stderr)
	}
	stdout, stderr, code := execute(t, b.env, "find", "-h")
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "-recipient")
}
