package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:     "stats",
		summary:  "show backlog, lag, recent throughput and dead letters per channel, and provider health",
		example:  "herald stats -window 15m --watch",
		readOnly: true,
		run:      runStats,
	})
}

func runStats(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("stats", &g)
	window := fs.Duration("window", 5*time.Minute, "throughput, provider outcomes and failovers over this last stretch of time")
	var w watchFlags
	w.bind(fs)
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if err := w.check(); err != nil {
		return err
	}
	if *window <= 0 {
		return usageError{fmt.Errorf("invalid -window %s: must be positive", *window)}
	}
	return answerWatch(ctx, m, &g, w, func(op *operator.Operator) (*operator.Stats, error) { return op.Stats(ctx, *window) },
		func(w io.Writer, st *operator.Stats) error { return render.Stats(w, st, *window) })
}
