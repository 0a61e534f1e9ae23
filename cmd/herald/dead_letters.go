package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/schema"
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
	fs.StringVar(&d.channel, "channel", "", "only this channel: "+strings.Join(intake.Channels(), ", "))
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

// bindLimit binds the -limit flag of a list command.
func bindLimit(fs *flag.FlagSet) *int {
	return fs.Int("limit", operator.DefaultPageSize, fmt.Sprintf("rows per page, 1 to %d", operator.MaxPageSize))
}

// checkLimit refuses a -limit the list would otherwise quietly change: the
// operator takes a limit of 0 or less as its default and caps it at
// MaxPageSize.
func checkLimit(limit int) error {
	if limit < 1 || limit > operator.MaxPageSize {
		return usageError{fmt.Errorf("invalid -limit %d: want 1 to %d", limit, operator.MaxPageSize)}
	}
	return nil
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
	var g globalFlags
	var d deadLetterFlags
	fs := m.newFlagSet("dead-letters list", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	d.bind(fs)
	limit := bindLimit(fs)
	after := fs.String("after", "", "the cursor printed under the previous page")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if err := checkLimit(*limit); err != nil {
		return err
	}
	f, err := d.filter(time.Now())
	if err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	page, err := op.DeadLetters(ctx, f, *limit, *after)
	if err != nil {
		return cliError(err)
	}
	if g.JSON {
		return writeJSON(m.Stdout, page)
	}
	if len(page.DeadLetters) == 0 {
		fmt.Fprintln(m.Stdout, "no dead letters")
		return nil
	}
	tw := newTable(m.Stdout)
	fmt.Fprintln(tw, "DEAD LETTERED\tROUTE\tCHANNEL\tPRODUCER\tTYPE\tCLASS\tATTEMPTS\tMESSAGE")
	for _, dl := range page.DeadLetters {
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n",
			stamp(dl.DeadLetteredAt), dl.NotificationID, dl.RouteID, dl.Channel, dl.Producer,
			dl.NotificationType, dl.Classification, dl.Attempts, dl.MaxAttempts, clip(dl.Message, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(m.Stdout, "\nmore: herald dead-letters list --after %s (same filters)\n", page.Next)
	}
	return nil
}

func deadLettersShow(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("dead-letters show", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	id, err := m.parseOneArg(fs, &g, args, "show", "NOTIFICATION_ID[/ROUTE_ID]")
	if err != nil {
		return err
	}
	ref, err := parseRouteRef(id)
	if err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	dls, err := op.DeadLetter(ctx, ref)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(m.Stdout, dls)
	}
	for i, dl := range dls {
		if i > 0 {
			fmt.Fprintln(m.Stdout)
		}
		if err := printFields(m.Stdout, [][2]string{
			{"notification", dl.NotificationID},
			{"route", dl.RouteID},
			{"type", dl.NotificationType},
			{"producer", dl.Producer},
			{"channel", dl.Channel},
			{"recipient", dl.RecipientRef},
			{"attempts", fmt.Sprintf("%d of %d", dl.Attempts, dl.MaxAttempts)},
			{"classification", dl.Classification},
			{"message", dl.Message},
			{"recovery hint", dl.RecoveryHint},
			{"accepted", stamp(dl.AcceptedAt)},
			{"last failed", stamp(dl.LastFailedAt)},
			{"dead lettered", stamp(dl.DeadLetteredAt)},
		}); err != nil {
			return err
		}
	}
	fmt.Fprintf(m.Stdout, "\nreplay: herald dead-letters replay --reason WHY %s\n", ref)
	return nil
}

func deadLettersReplay(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	var d deadLetterFlags
	fs := m.newFlagSet("dead-letters replay", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
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
		if g.JSON {
			return writeJSON(m.Stdout, map[string]any{"queued": q})
		}
		fmt.Fprintf(m.Stdout, "queued replay %s of %d dead letters as River job %d; a running `herald serve` works it.\n", q.ReplayID, q.Matched, q.JobID)
		fmt.Fprintf(m.Stdout, "progress: herald dead-letters progress %s\n", q.ReplayID)
		return nil
	}
	res, err := op.Replay(ctx, f, opts)
	if err != nil {
		return cliError(err)
	}
	if g.JSON {
		return writeJSON(m.Stdout, res)
	}
	if res.DryRun {
		fmt.Fprintf(m.Stdout, "dry run: %d dead letters would move back to pending; nothing moved.\n", res.Matched)
		if len(res.Sample) > 0 {
			fmt.Fprintf(m.Stdout, "the first %d:\n", len(res.Sample))
			tw := newTable(m.Stdout)
			fmt.Fprintln(tw, "ROUTE\tCHANNEL\tPRODUCER\tCLASS\tMESSAGE")
			for _, dl := range res.Sample {
				fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\n", dl.NotificationID, dl.RouteID, dl.Channel, dl.Producer, dl.Classification, clip(dl.Message, 60))
			}
			return tw.Flush()
		}
		return nil
	}
	fmt.Fprintf(m.Stdout, "replayed %d routes in %d batches (replay %s, %s); they are pending with a fresh attempt budget.\n",
		res.Moved, res.Batches, res.ReplayID, res.Elapsed.Round(time.Millisecond))
	return nil
}

func deadLettersProgress(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("dead-letters progress", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	arg, err := m.parseOneArg(fs, &g, args, "progress", "REPLAY_ID")
	if err != nil {
		return err
	}
	id, err := parseReplayID(arg)
	if err != nil {
		return err
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	op, err := operator.New(pool, &operator.Config{Logger: m.logger(&g)})
	if err != nil {
		return err
	}
	p, err := op.Progress(ctx, id)
	if err != nil {
		return err
	}
	if p.Batches == 0 {
		// Nothing moved yet: a replay queued and not started, or none.
		queued, err := replayJobExists(ctx, pool, id)
		if err != nil {
			return err
		}
		if !queued {
			return fmt.Errorf("replay %s: %w: no batch in herald.audit_log and no River job", id, operator.ErrNotFound)
		}
	}
	if g.JSON {
		return writeJSON(m.Stdout, p)
	}
	fmt.Fprintf(m.Stdout, "replay %s: %d routes moved in %d batches", p.ReplayID, p.Moved, p.Batches)
	if p.LastAt != nil {
		fmt.Fprintf(m.Stdout, ", last at %s", stamp(*p.LastAt))
	}
	fmt.Fprintln(m.Stdout)
	return nil
}

// replayJobExists reports whether a River job of the bulk replay replayID
// exists, in any state. A replay queued by `replay --async` writes its
// first batch to herald.audit_log only once `herald serve` works it.
func replayJobExists(ctx context.Context, pool *pgxpool.Pool, replayID string) (bool, error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema.Name})
	if err != nil {
		return false, fmt.Errorf("river client: %w", err)
	}
	// River lists jobs by a predicate given as SQL: the rare statement
	// outside queries/, with its value passed as a parameter.
	res, err := client.JobList(ctx, river.NewJobListParams().
		Kinds(operator.ReplayArgs{}.Kind()).
		Where("args ->> 'replay_id' = @replay_id", river.NamedArgs{"replay_id": replayID}).
		First(1))
	if err != nil {
		return false, fmt.Errorf("look up replay job %s: %w", replayID, err)
	}
	return len(res.Jobs) > 0, nil
}
