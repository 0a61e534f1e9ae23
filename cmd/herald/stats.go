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
		example:  "herald stats -window 15m",
		readOnly: true, replicaReads: true,
		run: runStats,
	})
}

func runStats(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("stats", &g)
	window := fs.Duration("window", 5*time.Minute, "throughput over this last stretch of time")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if *window <= 0 {
		return usageError{fmt.Errorf("invalid -window %s: must be positive", *window)}
	}
	return answer(ctx, m, &g, 0, func(op *operator.Operator) (*operator.Stats, error) { return op.Stats(ctx, *window) },
		func(w io.Writer, st *operator.Stats) error { return render.Stats(w, st, *window) })
}
