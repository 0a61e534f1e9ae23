package main

import (
	"context"
	"fmt"
	"time"
)

func init() {
	register(&command{
		name:    "stats",
		summary: "show backlog, lag, recent throughput and dead letters per channel",
		run:     runStats,
	})
}

func runStats(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("stats", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	window := fs.Duration("window", 5*time.Minute, "throughput over this last stretch of time")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if *window <= 0 {
		return usageError{fmt.Errorf("invalid -window %s: must be positive", *window)}
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	st, err := op.Stats(ctx, *window)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(m.Stdout, st)
	}
	fmt.Fprintf(m.Stdout, "at %s\n\nbacklog (routes still to deliver):\n", stamp(st.At))
	tw := newTable(m.Stdout)
	fmt.Fprintln(tw, "CHANNEL\tSTATUS\tROUTES\tDUE\tLAG")
	for _, b := range st.Backlog {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", b.Channel, b.Status, b.Routes, b.Due,
			(time.Duration(b.LagSeconds * float64(time.Second))).Round(time.Millisecond))
	}
	if len(st.Backlog) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(m.Stdout, "\npublished in the last %s:\n", *window)
	tw = newTable(m.Stdout)
	fmt.Fprintln(tw, "CHANNEL\tPUBLISHED\tPER SECOND\tMEAN LATENCY\tMAX LATENCY")
	for _, t := range st.Throughput {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\n", t.Channel, t.Published, t.PerSecond,
			seconds(t.MeanLatencySeconds), seconds(t.MaxLatencySeconds))
	}
	if len(st.Throughput) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(m.Stdout, "\ndead letters:")
	tw = newTable(m.Stdout)
	fmt.Fprintln(tw, "CHANNEL\tCLASSIFICATION\tDEAD LETTERS\tNEWEST")
	for _, d := range st.DeadLetters {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", d.Channel, d.Classification, d.DeadLetters, stamp(d.NewestAt))
	}
	if len(st.DeadLetters) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	return tw.Flush()
}

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
