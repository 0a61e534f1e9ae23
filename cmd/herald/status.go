package main

import (
	"context"
	"fmt"
	"strings"
)

func init() {
	register(&command{
		name:    "status",
		summary: "show one notification: its record, routes and timeline",
		run:     runStatus,
	})
}

func runStatus(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("status", &g)
	fs.BoolVar(&g.JSON, "json", false, "print JSON")
	arg, err := m.parseOneArg(fs, &g, args, "status", "NOTIFICATION_ID")
	if err != nil {
		return err
	}
	id, err := parseNotificationID(arg)
	if err != nil {
		return err
	}
	op, err := m.operatorFor(ctx, &g, 0)
	if err != nil {
		return err
	}
	st, err := op.Status(ctx, id)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(m.Stdout, st)
	}
	r := st.Record
	tw := newTable(m.Stdout)
	fmt.Fprintf(tw, "notification:\t%s\n", r.NotificationID)
	fmt.Fprintf(tw, "type:\t%s\n", r.NotificationType)
	fmt.Fprintf(tw, "producer:\t%s (key %s)\n", r.Producer, r.IdempotencyKey)
	fmt.Fprintf(tw, "channels:\t%s, priority %d\n", strings.Join(r.Channels, ", "), r.Priority)
	fmt.Fprintf(tw, "accepted:\t%s\n", stamp(r.AcceptedAt))
	if r.SendAt != nil {
		fmt.Fprintf(tw, "send at:\t%s\n", stamp(*r.SendAt))
	}
	if r.ExpiresAt != nil {
		fmt.Fprintf(tw, "expires:\t%s\n", stamp(*r.ExpiresAt))
	}
	if r.TraceID != "" {
		fmt.Fprintf(tw, "trace:\t%s\n", r.TraceID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(m.Stdout, "\nroutes:")
	tw = newTable(m.Stdout)
	fmt.Fprintln(tw, "ROUTE\tCHANNEL\tSTATUS\tATTEMPTS\tNEXT ATTEMPT\tLAST ERROR")
	for _, rt := range st.Routes {
		next := "-"
		if rt.NextAttemptAt != nil {
			next = stamp(*rt.NextAttemptAt)
		}
		last := "-"
		if rt.LastErrorClass != "" || rt.LastError != "" {
			last = clip(rt.LastErrorClass+": "+rt.LastError, 60)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%s\t%s\t%s\n", rt.RouteID, rt.Channel, rt.Status, rt.Attempts, maxAttempts(rt.MaxAttempts), next, last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(m.Stdout, "\ntimeline:")
	tw = newTable(m.Stdout)
	fmt.Fprintln(tw, "AT\tROUTE\tEVENT\tATTEMPT\tDETAIL")
	for _, e := range st.Timeline {
		attempt := "-"
		if e.Attempt > 0 {
			attempt = fmt.Sprint(e.Attempt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", stamp(e.At), dash(e.RouteID), e.Event, attempt, clip(e.Detail, 80))
	}
	return tw.Flush()
}

// maxAttempts shows a route's attempt budget; 0 is the channel's default.
func maxAttempts(n int) string {
	if n == 0 {
		return "default"
	}
	return fmt.Sprint(n)
}
