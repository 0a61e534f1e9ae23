package bench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Modes are what the bench can measure, as `herald bench -mode` names
// them: compare (the workload, Run), scale (claim throughput at a small and
// a large backlog, RunScale), xmin (an old snapshot held mid-run, RunXmin),
// soak (memory over a long steady run, RunSoak) and retention (a finished
// history deleted while the engine delivers, RunRetention).
var Modes = []string{"compare", "scale", "xmin", "soak", "retention"}

// ModeParams are the settings of the modes beside compare.
type ModeParams struct {
	// Backlog is scale's large backlog of due routes.
	Backlog int
	// Hold is how long xmin holds its old snapshot.
	Hold time.Duration
	// Duration is how long soak runs.
	Duration time.Duration
	// Retention is the retention mode's settings.
	Retention RetentionParams
}

// RunMode runs the bench in mode (one of Modes) and returns its report, as
// --json prints it, and the function that writes it as a table. It returns
// an error for an unknown mode, and the mode's own errors.
func RunMode(ctx context.Context, db *Database, cfg *Config, mode string, p ModeParams) (any, func(io.Writer) error, error) {
	switch mode {
	case "compare":
		rep, err := Run(ctx, db, cfg)
		return written(rep, err, WriteTable)
	case "scale":
		rep, err := RunScale(ctx, db, cfg, p.Backlog)
		return written(rep, err, WriteScale)
	case "xmin":
		rep, err := RunXmin(ctx, db, cfg, p.Hold)
		return written(rep, err, WriteXmin)
	case "soak":
		rep, err := RunSoak(ctx, db, cfg, p.Duration)
		return written(rep, err, WriteSoak)
	case "retention":
		rep, err := RunRetention(ctx, db, cfg, p.Retention)
		return written(rep, err, WriteRetention)
	}
	return nil, nil, fmt.Errorf("unknown bench mode %q", mode)
}

// written pairs a report with its table writer, or passes err on.
func written[R any](rep R, err error, write func(io.Writer, R) error) (any, func(io.Writer) error, error) {
	if err != nil {
		return nil, nil, err
	}
	return rep, func(w io.Writer) error { return write(w, rep) }, nil
}
