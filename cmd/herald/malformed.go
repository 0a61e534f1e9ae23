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
		run:     withSubcommands("malformed", subcommandFunc{"list", malformedList}, subcommandFunc{"show", malformedShow}),
	})
}

func malformedList(ctx context.Context, m *Main, args []string) error {
	var l listFlags
	fs := m.newListFlagSet("malformed list", &l)
	var codes []string // every failure code, as -code takes it
	for _, c := range heraldtype.Codes() {
		codes = append(codes, string(c))
	}
	var f operator.MalformedFilter
	fs.StringVar(&f.Producer, "producer", "", "only this producer")
	fs.StringVar(&f.FailureCode, "code", "", "only this failure code: "+strings.Join(codes, ", "))
	sinceFlag := fs.String("since", "", "only entries from this long ago (30m, 24h) or since this time (RFC 3339)")
	if err := m.parseList(fs, &l, args); err != nil {
		return err
	}
	if f.FailureCode != "" && !slices.Contains(codes, f.FailureCode) {
		return usageError{fmt.Errorf("invalid -code %s: want one of %s", operator.QuoteArg(f.FailureCode), strings.Join(codes, ", "))}
	}
	var err error
	if f.Since, err = usage(operator.ParseSince(*sinceFlag, time.Now())); err != nil {
		return err
	}
	return answer(ctx, m, &l.globalFlags, 0, func(op *operator.Operator) (*operator.MalformedPage, error) {
		return op.MalformedIntents(ctx, f, l.limit, l.after)
	}, render.MalformedPage)
}

func malformedShow(ctx context.Context, m *Main, args []string) error {
	return runShow(ctx, m, "malformed show", "intake:N", args, parseMalformedID, (*operator.Operator).MalformedIntent,
		func(w io.Writer, e *operator.Malformed, _ string) error { return render.Malformed(w, e) })
}
