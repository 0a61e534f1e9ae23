package main

import (
	"context"
	"io"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:     "status",
		summary:  "show one notification: its record, routes and timeline",
		example:  "herald status 0192f1c2-3b4a-7d5e-8f60-123456789abc",
		readOnly: true, replicaReads: true,
		run: runStatus,
	})
}

func runStatus(ctx context.Context, m *Main, args []string) error {
	return runShow(ctx, m, "status", "NOTIFICATION_ID", args, parseNotificationID, (*operator.Operator).Status,
		func(w io.Writer, st *operator.Status, _ string) error { return render.Status(w, st) })
}
