package main

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:     "find",
		summary:  "find a notification by its producer and idempotency key, and show it as status does",
		example:  "herald find -producer billing -key invoice-2291",
		readOnly: true,
		run:      runFind,
	})
}

func runFind(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("find", &g)
	producer := fs.String("producer", "", "the producer that submitted it (required)")
	key := fs.String("key", "", "its idempotency key, as the producer gave it (required)")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if *producer == "" || *key == "" {
		return usageError{errors.New("find needs -producer and -key")}
	}
	return answer(ctx, m, &g, 0, func(op *operator.Operator) (*operator.Status, error) {
		return op.FindNotification(ctx, *producer, *key)
	}, render.Status)
}
