package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/operator"
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
	var g globalFlags
	fs := m.newFlagSet("malformed list", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	producer := fs.String("producer", "", "only this producer")
	codes := failureCodes()
	code := fs.String("code", "", "only this failure code: "+strings.Join(codes, ", "))
	sinceFlag := fs.String("since", "", "only entries from this long ago (30m, 24h) or since this time (RFC 3339)")
	limit := bindLimit(fs)
	after := fs.String("after", "", "the cursor printed under the previous page")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if err := checkLimit(*limit); err != nil {
		return err
	}
	if *code != "" && !slices.Contains(codes, *code) {
		return usageError{fmt.Errorf("invalid -code %s: want one of %s", quoteArg(*code), strings.Join(codes, ", "))}
	}
	since, err := parseSince(*sinceFlag, time.Now())
	if err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	page, err := op.MalformedIntents(ctx, operator.MalformedFilter{Producer: *producer, FailureCode: *code, Since: since}, *limit, *after)
	if err != nil {
		return cliError(err)
	}
	if g.JSON {
		return writeJSON(m.Stdout, page)
	}
	if len(page.Malformed) == 0 {
		fmt.Fprintln(m.Stdout, "no malformed intents")
		return nil
	}
	tw := newTable(m.Stdout)
	fmt.Fprintln(tw, "RECORDED\tID\tCODE\tPRODUCER\tTYPE\tMESSAGE")
	for _, e := range page.Malformed {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", stamp(e.RecordedAt), e.EntryRef, e.FailureCode,
			dash(e.Producer), dash(e.NotificationType), clip(e.FailureMessage, 70))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(m.Stdout, "\nmore: herald malformed list --after %s (same filters)\n", page.Next)
	}
	return nil
}

func malformedShow(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("malformed show", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	arg, err := m.parseOneArg(fs, &g, args, "show", "intake:N")
	if err != nil {
		return err
	}
	id, err := parseMalformedID(arg)
	if err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	e, err := op.MalformedIntent(ctx, id)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(m.Stdout, e)
	}
	if err := printFields(m.Stdout, [][2]string{
		{"id", e.EntryRef},
		{"recorded", stamp(e.RecordedAt)},
		{"code", e.FailureCode},
		{"message", e.FailureMessage},
		{"producer", dash(e.Producer)},
		{"type", dash(e.NotificationType)},
		{"idempotency key", dash(e.IdempotencyKey)},
	}); err != nil {
		return err
	}
	var raw any
	if json.Unmarshal(e.RawFields, &raw) == nil {
		fmt.Fprintln(m.Stdout, "raw fields:")
		b, _ := json.MarshalIndent(raw, "  ", "  ")
		fmt.Fprintf(m.Stdout, "  %s\n", b)
	}
	return nil
}

// failureCodes returns every failure code, as -code accepts it.
func failureCodes() []string {
	var out []string
	for _, c := range heraldtype.Codes() {
		out = append(out, string(c))
	}
	return out
}
