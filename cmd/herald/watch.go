package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/heraldhq/herald/internal/operator"
)

// watchFlags are --watch and -interval, for a command whose figures move.
type watchFlags struct {
	on    bool
	every time.Duration
}

func (w *watchFlags) bind(fs *flag.FlagSet) {
	fs.BoolVar(&w.on, "watch", false, "print the answer again every -interval until interrupted (one JSON document each with --json)")
	fs.DurationVar(&w.every, "interval", 2*time.Second, "how often --watch prints, at least 100ms")
}

func (w *watchFlags) check() error {
	if w.on && w.every < 100*time.Millisecond {
		return usageError{fmt.Errorf("invalid -interval %s: at least 100ms", w.every)}
	}
	return nil
}

// answerWatch is answer, repeated every w.every with --watch until ctx
// ends (an interrupt), on one connection; on a terminal each answer
// replaces the last. It returns nil when ctx ends.
func answerWatch[T any](ctx context.Context, m *Main, g *globalFlags, w watchFlags, do func(*operator.Operator) (T, error), text func(io.Writer, T) error) error {
	if !w.on {
		return answer(ctx, m, g, 0, do, text)
	}
	op, err := m.operatorFor(ctx, g, 0)
	if err != nil {
		return err
	}
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		v, err := do(op)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil
		}
		if err != nil {
			return cliError(err)
		}
		if m.IsTerminal && !g.JSON {
			fmt.Fprint(m.Stdout, "\033[H\033[2J") // clear the screen
		}
		if err := output(m, g.JSON, v, text); err != nil {
			return err
		}
		if !g.JSON {
			fmt.Fprintf(m.Stdout, "\n(every %s; interrupt to stop)\n", w.every)
		}
		if m.watched != nil {
			m.watched()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
