package main

import (
	"cmp"
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
		run:     runDeadLetters,
	})
}

// defaultAsyncThreshold is how many matching dead letters make `replay`
// queue a River job instead of replaying in the command itself.
const defaultAsyncThreshold = 50_000

// maxReplayBatchSize caps -batch-size: one statement moving more holds its
// row locks, and writes an audit row listing them, out of all proportion
// (the default is 1000); and the statement's limit is an int32.
const maxReplayBatchSize = 100_000

// deadLetterFlags are the filter flags of list and replay.
type deadLetterFlags struct {
	channel, producer, typ, classification, since string
}

func (d *deadLetterFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&d.channel, "channel", "", "only this channel: "+strings.Join(intake.RouteChannels(), ", "))
	fs.StringVar(&d.producer, "producer", "", "only this producer")
	fs.StringVar(&d.typ, "type", "", "only this notification type")
	fs.StringVar(&d.classification, "classification", "", "only this failure classification (permanent, exhausted, expired, ...)")
	fs.StringVar(&d.since, "since", "", "only dead letters from this long ago (30m, 24h) or since this time (RFC 3339)")
}

func (d *deadLetterFlags) filter(now time.Time) (operator.Filter, error) {
	since, err := parseSince(d.since, now)
	if err != nil {
		return operator.Filter{}, err
	}
	if _, err := parseChannel(d.channel); err != nil {
		return operator.Filter{}, err
	}
	return operator.Filter{
		Channel:          d.channel,
		Producer:         d.producer,
		NotificationType: d.typ,
		Classification:   d.classification,
		Since:            since,
	}, nil
}

func (d *deadLetterFlags) empty() bool {
	return d.channel == "" && d.producer == "" && d.typ == "" && d.classification == "" && d.since == ""
}

// parseSince reads a duration back from now ("24h") or a time (RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usageError{fmt.Errorf("invalid -since %q: want a duration like 24h or an RFC 3339 time", s)}
	}
	return t, nil
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

// runList connects, fetches a page of a list command and prints it.
func runList[T any](ctx context.Context, m *Main, l *listFlags, fetch func(*operator.Operator) (T, error), text func(io.Writer, T) error) error {
	op, err := m.operatorFor(ctx, &l.globalFlags, 0)
	if err != nil {
		return err
	}
	page, err := fetch(op)
	if err != nil {
		return cliError(err)
	}
	return output(m, l.JSON, page, text)
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
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	v, err := fetch(op, ctx, id)
	if err != nil {
		return err
	}
	return output(m, g.JSON, v, func(w io.Writer, v T) error { return text(w, v, id) })
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
	if errors.Is(err, operator.ErrBadCursor) || errors.Is(err, operator.ErrBadRouteRef) {
		return usageError{err}
	}
	return err
}

func runDeadLetters(ctx context.Context, m *Main, args []string) error {
	sub, args, err := m.subcommand("dead-letters", args, "list", "show", "replay", "progress")
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return deadLettersList(ctx, m, args)
	case "show":
		return deadLettersShow(ctx, m, args)
	case "replay":
		return deadLettersReplay(ctx, m, args)
	default:
		return deadLettersProgress(ctx, m, args)
	}
}

func deadLettersList(ctx context.Context, m *Main, args []string) error {
	var l listFlags
	var d deadLetterFlags
	fs := m.newListFlagSet("dead-letters list", &l)
	d.bind(fs)
	if err := m.parseList(fs, &l, args); err != nil {
		return err
	}
	f, err := d.filter(time.Now())
	if err != nil {
		return err
	}
	return runList(ctx, m, &l, func(op *operator.Operator) (*operator.DeadLetterPage, error) {
		return op.DeadLetters(ctx, f, l.limit, l.after)
	}, render.DeadLetterPage)
}

func deadLettersShow(ctx context.Context, m *Main, args []string) error {
	return runShow(ctx, m, "dead-letters show", "NOTIFICATION_ID[/ROUTE_ID]", args, parseRouteRef, (*operator.Operator).DeadLetter, render.DeadLetters)
}

func deadLettersReplay(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	var d deadLetterFlags
	fs := m.newJSONFlagSet("dead-letters replay", &g)
	d.bind(fs)
	dryRun := fs.Bool("dry-run", false, "show what would move, and move nothing")
	reason := fs.String("reason", "", "why: recorded in herald.audit_log (required, but for -dry-run)")
	actor := fs.String("actor", cmp.Or(m.Getenv("USER"), m.Getenv("LOGNAME")), "who: recorded in herald.audit_log (default $USER)")
	all := fs.Bool("all", false, "replay every dead letter (required when no filter and no id is given)")
	async := fs.Bool("async", false, "queue a River job that replays in the background (herald serve works it)")
	threshold := fs.Int64("async-threshold", defaultAsyncThreshold, "queue a River job when more dead letters than this match (0 or more)")
	batch := fs.Int("batch-size", operator.DefaultBatchSize, fmt.Sprintf("dead letters moved per statement, 1 to %d", maxReplayBatchSize))
	pos, err := m.parseArgs(fs, &g, args, "[NOTIFICATION_ID[/ROUTE_ID] ...]")
	if err != nil {
		return err
	}
	if *reason == "" && !*dryRun {
		return usageError{errors.New("invalid -reason: required, it goes into herald.audit_log")}
	}
	if *actor == "" {
		return usageError{errors.New("invalid -actor: empty, and $USER is unset")}
	}
	if *batch < 1 || *batch > maxReplayBatchSize {
		return usageError{fmt.Errorf("invalid -batch-size %d: want 1 to %d", *batch, maxReplayBatchSize)}
	}
	if *threshold < 0 {
		return usageError{fmt.Errorf("invalid -async-threshold %d: must not be negative", *threshold)}
	}
	f, err := d.filter(time.Now())
	if err != nil {
		return err
	}
	for _, a := range pos {
		ref, err := parseRouteRef(a)
		if err != nil {
			return err
		}
		f.IDs = append(f.IDs, ref)
	}
	if len(f.IDs) == 0 && d.empty() && !*all {
		return usageError{errors.New("replay needs ids, a filter (-channel, -producer, -type, -classification, -since) or -all")}
	}
	op, err := m.operatorFor(ctx, &g, *batch)
	if err != nil {
		return err
	}
	opts := operator.ReplayOpts{Actor: *actor, Reason: *reason, DryRun: *dryRun}
	if !*dryRun && !*async {
		n, err := op.CountDeadLetters(ctx, f)
		if err != nil {
			return err
		}
		*async = n > *threshold
	}
	if *async && !*dryRun {
		q, err := op.EnqueueReplay(ctx, f, opts)
		if err != nil {
			return err
		}
		return output(m, g.JSON, render.QueuedReplay{Queued: q}, render.Queued)
	}
	res, err := op.Replay(ctx, f, opts)
	if err != nil {
		return cliError(err)
	}
	return output(m, g.JSON, res, render.ReplayResult)
}

func deadLettersProgress(ctx context.Context, m *Main, args []string) error {
	return runShow(ctx, m, "dead-letters progress", "REPLAY_ID", args, parseReplayID, (*operator.Operator).ReplayStatus,
		func(w io.Writer, p *operator.ReplayProgress, _ string) error { return render.ReplayProgress(w, p) })
}
