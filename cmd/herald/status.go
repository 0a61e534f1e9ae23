package main

import (
	"context"
	"io"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "status",
		summary: "show one notification: its record, routes and timeline",
		run:     runStatus,
	})
}

func runStatus(ctx context.Context, m *Main, args []string) error {
	return runShow(ctx, m, "status", "NOTIFICATION_ID", args, parseNotificationID, (*operator.Operator).Status,
		func(w io.Writer, st *operator.Status, _ string) error { return render.Status(w, st) })
}
