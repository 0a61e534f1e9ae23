package main

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "malformed",
		summary: "list or show the intake entries the validator refused",
		subs: []*command{
			{name: "list", summary: "list the refused entries, newest first", run: malformedList, readOnly: true, replicaReads: true,
				example: "herald malformed list -code not_json -since 24h"},
			{name: "show", summary: "show one refused entry and why it was refused", run: malformedShow, readOnly: true, replicaReads: true,
				example: "herald malformed show intake:42"},
		},
	})
}

func malformedList(ctx context.Context, m *Main, args []string) error {
	var l listFlags
	fs := m.newListFlagSet("malformed list", &l)
	var given operator.MalformedFilter
	fs.StringVar(&given.Producer, "producer", "", "only this producer")
	fs.StringVar(&given.FailureCode, "code", "", "only this failure code: "+strings.Join(operator.FailureCodes(), ", "))
	since := fs.String("since", "", "only entries from this long ago (30m, 24h) or since this time (RFC 3339)")
	if err := m.parseList(fs, &l, args); err != nil {
		return err
	}
	f, err := usage(operator.ParseMalformedFilter(given, *since, time.Now()))
	if err != nil {
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
