package main

import (
	"context"
	"fmt"
	"io"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:     "status",
		summary:  "show every serve process and its readiness; given a notification id, that notification: its record, routes and timeline",
		example:  "herald status 0192f1c2-3b4a-7d5e-8f60-123456789abc",
		readOnly: true, replicaReads: true,
		run: runStatus,
	})
}

func runStatus(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("status", &g)
	pos, err := m.parseArgs(fs, &g, args, "[NOTIFICATION_ID]")
	switch {
	case err != nil:
		return err
	case len(pos) > 1:
		return usageError{fmt.Errorf("status takes one argument or none: [NOTIFICATION_ID]")}
	case len(pos) == 0:
		return answer(ctx, m, &g, 0, func(op *operator.Operator) (*operator.ServeProcessList, error) { return op.ServeProcesses(ctx) }, render.ServeProcesses)
	}
	id, err := parseNotificationID(pos[0])
	if err != nil {
		return err
	}
	return answer(ctx, m, &g, 0, func(op *operator.Operator) (*operator.Status, error) { return op.Status(ctx, id) },
		func(w io.Writer, st *operator.Status) error { return render.Status(w, st) })
}
