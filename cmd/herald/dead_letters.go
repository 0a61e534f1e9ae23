package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "dead-letters",
		summary: "list, show, replay dead letters, or follow a bulk replay's progress",
		subs: []*command{
			{name: "list", summary: "list dead letters, newest first, filtered", run: deadLettersList, readOnly: true, replicaReads: true,
				example: "herald dead-letters list -channel webhook -classification transient -since 24h"},
			{name: "show", summary: "show one notification's dead letters, or one route's", run: deadLettersShow, readOnly: true, replicaReads: true,
				example: "herald dead-letters show 0192f1c2-3b4a-7d5e-8f60-123456789abc"},
			{name: "replay", summary: "move dead letters back to be delivered again (audited)", run: deadLettersReplay,
				example: "herald dead-letters replay -channel webhook -since 2h -reason 'endpoint fixed'"},
			{name: "progress", summary: "follow a bulk replay that runs as a River job", run: deadLettersProgress, readOnly: true,
				example: "herald dead-letters progress rpl_0123456789abcdef --watch"},
			{name: "count", summary: "count dead letters by producer, channel, provider or classification", run: deadLettersCount, readOnly: true,
				example: "herald dead-letters count -by producer,classification -since 1h --watch"},
		},
	})
}

// bindFilter binds the filter flags of list and replay to a.
func bindFilter(fs *flag.FlagSet, a *operator.DeadLetterArgs) {
	fs.StringVar(&a.Filter.Channel, "channel", "", "only this channel: "+strings.Join(intake.RouteChannels(), ", "))
	fs.StringVar(&a.Filter.Producer, "producer", "", "only this producer")
	fs.StringVar(&a.Filter.NotificationType, "type", "", "only this notification type")
	fs.StringVar(&a.Filter.Provider, "provider", "", "only those whose last attempt was this provider's")
	fs.Func("classification", operator.ClassificationHelp()+"; several comma-separated or repeated", func(v string) error {
		a.Filter.Classification = strings.Trim(a.Filter.Classification+","+v, ",")
		return nil
	})
	fs.StringVar(&a.Since, "since", "", "only dead letters from this long ago (30m, 24h) or since this time (RFC 3339)")
}

// parseArgs parses flags wherever they stand among the positional
// arguments ("status ID --json" as well as "status --json ID"), which the
// flag package alone stops at, and returns the positional ones. argsUsage
// describes them in the usage line ("" for none).
func (m *Main) parseArgs(fs *flag.FlagSet, g *globalFlags, args []string, argsUsage string) ([]string, error) {
	var pos []string
	for {
		if err := m.parseWithArgs(fs, g, args, argsUsage); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseOneArg is parseArgs for a command that takes exactly one positional
// argument; the usage error says "<what> takes one argument: <arg>".
func (m *Main) parseOneArg(fs *flag.FlagSet, g *globalFlags, args []string, what, arg string) (string, error) {
	pos, err := m.parseArgs(fs, g, args, arg)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usageError{fmt.Errorf("%s takes one argument: %s", what, arg)}
	}
	return pos[0], nil
}

// noArgs is parseArgs for a command that takes no positional argument.
func (m *Main) noArgs(fs *flag.FlagSet, g *globalFlags, args []string) error {
	pos, err := m.parseArgs(fs, g, args, "")
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", pos[0])}
	}
	return nil
}

// listFlags are the flags every list command has: the global ones,
// --json, -limit and -after.
type listFlags struct {
	globalFlags
	limit int
	after string
}

// newListFlagSet is newFlagSet for a list command, with listFlags bound.
func (m *Main) newListFlagSet(name string, l *listFlags) *flag.FlagSet {
	fs := m.newJSONFlagSet(name, &l.globalFlags)
	fs.IntVar(&l.limit, "limit", operator.DefaultPageSize, fmt.Sprintf("rows per page, 1 to %d", operator.MaxPageSize))
	fs.StringVar(&l.after, "after", "", "the cursor printed under the previous page")
	return fs
}

// parseList parses the command line of a list command, which takes no
// positional argument. It refuses a -limit the list would otherwise
// quietly change: the operator takes a limit of 0 or less as its default
// and caps it at MaxPageSize.
func (m *Main) parseList(fs *flag.FlagSet, l *listFlags, args []string) error {
	if err := m.noArgs(fs, &l.globalFlags, args); err != nil {
		return err
	}
	if l.limit < 1 || l.limit > operator.MaxPageSize {
		return usageError{fmt.Errorf("invalid -limit %d: want 1 to %d", l.limit, operator.MaxPageSize)}
	}
	return nil
}

// answer connects, asks an Operator (of batchSize, 0 for its default)
// what the command wants with do, and prints the answer (see output). The
// operator's sentinel errors become what a person reads (cliError).
func answer[T any](ctx context.Context, m *Main, g *globalFlags, batchSize int, do func(*operator.Operator) (T, error), text func(io.Writer, T) error) error {
	op, err := m.operatorFor(ctx, g, batchSize)
	if err != nil {
		return err
	}
	v, err := do(op)
	if err != nil {
		return cliError(err)
	}
	return output(m, g.JSON, v, text)
}

// runShow runs a command that shows one thing: it takes one argument, an
// id whose form parse checks, and prints what fetch returns for it. name is
// the command's name; argUsage names the argument in the usage line.
func runShow[ID, T any](ctx context.Context, m *Main, name, argUsage string, args []string,
	parse func(string) (ID, error), fetch func(*operator.Operator, context.Context, ID) (T, error), text func(io.Writer, T, ID) error,
) error {
	var g globalFlags
	fs := m.newJSONFlagSet(name, &g)
	arg, err := m.parseOneArg(fs, &g, args, name[strings.LastIndexByte(name, ' ')+1:], argUsage)
	if err != nil {
		return err
	}
	id, err := parse(arg)
	if err != nil {
		return err
	}
	return answer(ctx, m, &g, 0, func(op *operator.Operator) (T, error) { return fetch(op, ctx, id) },
		func(w io.Writer, v T) error { return text(w, v, id) })
}

// operatorFor connects and returns an Operator logging to the command's
// logger.
func (m *Main) operatorFor(ctx context.Context, g *globalFlags, batchSize int) (*operator.Operator, error) {
	pool, err := m.pool(ctx, g)
	if err != nil {
		return nil, err
	}
	op, err := operator.New(pool, &operator.Config{Logger: m.logger(g), BatchSize: batchSize})
	if err != nil {
		return nil, usageError{err}
	}
	return op, nil
}

// cliError turns the operator's sentinel errors into what a person reads:
// a bad cursor is a usage error.
func cliError(err error) error {
	if errors.Is(err, operator.ErrBadCursor) || errors.Is(err, operator.ErrBadRouteRef) || errors.Is(err, operator.ErrBadProviderState) ||
		errors.Is(err, operator.ErrBadRecipient) {
		return usageError{err}
	}
	return err
}

func deadLettersList(ctx context.Context, m *Main, args []string) error {
	var l listFlags
	var d operator.DeadLetterArgs
	fs := m.newListFlagSet("dead-letters list", &l)
	bindFilter(fs, &d)
	if err := m.parseList(fs, &l, args); err != nil {
		return err
	}
	f, err := usage(d.ListFilter(time.Now()))
	if err != nil {
		return err
	}
	return answer(ctx, m, &l.globalFlags, 0, func(op *operator.Operator) (*operator.DeadLetterPage, error) {
		if err := op.ExpandClassification(ctx, &f); err != nil {
			return nil, err
		}
		return op.DeadLetters(ctx, f, l.limit, l.after)
	}, render.DeadLetterPage)
}

func deadLettersShow(ctx context.Context, m *Main, args []string) error {
	return runShow(ctx, m, "dead-letters show", "NOTIFICATION_ID[/ROUTE_ID]", args, parseRouteRef, (*operator.Operator).DeadLetter, render.DeadLetters)
}

func deadLettersReplay(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	var d operator.DeadLetterArgs
	fs := m.newJSONFlagSet("dead-letters replay", &g)
	bindFilter(fs, &d)
	dryRun := fs.Bool("dry-run", false, "show what would move, and move nothing")
	var a auditFlags
	a.bind(fs, m, " (required, but for -dry-run)")
	fs.BoolVar(&d.All, "all", false, "replay every dead letter (required when no filter and no id is given)")
	async := fs.Bool("async", false, "queue a River job that replays in the background (herald serve works it)")
	fs.Int64Var(&d.AsyncThreshold, "async-threshold", operator.DefaultAsyncThreshold, "queue a River job when more dead letters than this match (0 or more)")
	fs.IntVar(&d.BatchSize, "batch-size", operator.DefaultBatchSize, fmt.Sprintf("dead letters moved per statement, 1 to %d", operator.MaxBatchSize))
	includePermanent := fs.Bool("include-permanent", false, "without -classification, replay the permanent failures too (left out by default: they would fail again)")
	var err error
	if d.IDs, err = m.parseArgs(fs, &g, args, "[NOTIFICATION_ID[/ROUTE_ID] ...]"); err != nil {
		return err
	}
	if err := a.check(!*dryRun); err != nil {
		return err
	}
	f, err := usage(d.ReplayFilter(time.Now()))
	if err != nil {
		return err
	}
	opts := operator.ReplayOpts{Actor: a.actor, Reason: a.reason, DryRun: *dryRun}
	return answer(ctx, m, &g, d.BatchSize, func(op *operator.Operator) (*operator.ReplayOutcome, error) {
		if err := op.ExpandClassification(ctx, &f); err != nil {
			return nil, err
		}
		var left int64
		if !*includePermanent && len(f.IDs) == 0 {
			if left, err = op.LeavePermanentOut(ctx, &f); err != nil {
				return nil, err
			}
		}
		out, err := op.ReplayOrQueue(ctx, f, opts, *async, d.AsyncThreshold)
		if out != nil {
			out.LeftOutPermanent = left
		}
		return out, err
	}, render.ReplayOutcome)
}

func deadLettersProgress(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	var w watchFlags
	fs := m.newJSONFlagSet("dead-letters progress", &g)
	w.bind(fs)
	arg, err := m.parseOneArg(fs, &g, args, "progress", "REPLAY_ID")
	if err != nil {
		return err
	}
	id, err := parseReplayID(arg)
	if err != nil {
		return err
	}
	if err := w.check(); err != nil {
		return err
	}
	return answerWatch(ctx, m, &g, w, func(op *operator.Operator) (*operator.ReplayProgress, error) { return op.ReplayStatus(ctx, id) },
		render.ReplayProgress)
}

func deadLettersCount(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	var d operator.DeadLetterArgs
	var w watchFlags
	fs := m.newJSONFlagSet("dead-letters count", &g)
	bindFilter(fs, &d)
	byFlag := fs.String("by", operator.GroupProducer, "count per these, comma-separated: "+strings.Join(operator.Groups, ", "))
	w.bind(fs)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	by, err := operator.ParseGroups(*byFlag)
	if err != nil {
		return usageError{err}
	}
	if err := w.check(); err != nil {
		return err
	}
	f, err := usage(d.ListFilter(time.Now()))
	if err != nil {
		return err
	}
	return answerWatch(ctx, m, &g, w, func(op *operator.Operator) (*render.DeadLetterCounts, error) {
		if err := op.ExpandClassification(ctx, &f); err != nil {
			return nil, err
		}
		groups, err := op.DeadLetterCounts(ctx, f, by)
		return &render.DeadLetterCounts{By: by, Groups: groups}, err
	}, render.DeadLetterGroups)
}
