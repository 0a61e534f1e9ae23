package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "malformed",
		summary: "list or show the intake entries the validator refused",
		run:     runMalformed,
	})
}

func runMalformed(ctx context.Context, m *Main, args []string) error {
	sub, args, err := m.subcommand("malformed", args, "list", "show")
	if err != nil {
		return err
	}
	if sub == "show" {
		return malformedShow(ctx, m, args)
	}
	return malformedList(ctx, m, args)
}

func malformedList(ctx context.Context, m *Main, args []string) error {
	var l listFlags
	fs := m.newListFlagSet("malformed list", &l)
	producer := fs.String("producer", "", "only this producer")
	codes := failureCodes()
	code := fs.String("code", "", "only this failure code: "+strings.Join(codes, ", "))
	sinceFlag := fs.String("since", "", "only entries from this long ago (30m, 24h) or since this time (RFC 3339)")
	if err := m.parseList(fs, &l, args); err != nil {
		return err
	}
	if *code != "" && !slices.Contains(codes, *code) {
		return usageError{fmt.Errorf("invalid -code %s: want one of %s", quoteArg(*code), strings.Join(codes, ", "))}
	}
	since, err := parseSince(*sinceFlag, time.Now())
	if err != nil {
		return err
	}
	f := operator.MalformedFilter{Producer: *producer, FailureCode: *code, Since: since}
	return runList(ctx, m, &l, func(op *operator.Operator) (*operator.MalformedPage, error) {
		return op.MalformedIntents(ctx, f, l.limit, l.after)
	}, render.MalformedPage)
}

func malformedShow(ctx context.Context, m *Main, args []string) error {
	return runShow(ctx, m, "malformed show", "intake:N", args, parseMalformedID, (*operator.Operator).MalformedIntent,
		func(w io.Writer, e *operator.Malformed, _ string) error { return render.Malformed(w, e) })
}

// failureCodes returns every failure code, as -code accepts it.
func failureCodes() []string {
	var out []string
	for _, c := range heraldtype.Codes() {
		out = append(out, string(c))
	}
	return out
}
