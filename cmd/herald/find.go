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
		summary:  "find a notification by its producer and idempotency key (shown as status does), or the newest ones to a recipient",
		example:  "herald find -recipient '+1 415 555 0123'",
		readOnly: true,
		run:      runFind,
	})
}

func runFind(ctx context.Context, m *Main, args []string) error {
	var l listFlags
	fs := m.newListFlagSet("find", &l)
	producer := fs.String("producer", "", "the producer that submitted it (with -key)")
	key := fs.String("key", "", "its idempotency key, as the producer gave it (with -producer)")
	recipient := fs.String("recipient", "", "or a phone number, e-mail address, webhook URL or user id: its newest notifications (-limit, -after) and dead letters")
	if err := m.parseList(fs, &l, args); err != nil {
		return err
	}
	switch {
	case *recipient != "" && *producer == "" && *key == "":
		return answer(ctx, m, &l.globalFlags, 0, func(op *operator.Operator) (*operator.RecipientSearch, error) {
			return op.FindByRecipient(ctx, *recipient, l.limit, l.after)
		}, render.RecipientSearch)
	case *recipient != "" || *producer == "" || *key == "":
		return usageError{errors.New("find needs -producer and -key, or -recipient alone")}
	}
	return answer(ctx, m, &l.globalFlags, 0, func(op *operator.Operator) (*operator.Status, error) {
		return op.FindNotification(ctx, *producer, *key)
	}, render.Status)
}
