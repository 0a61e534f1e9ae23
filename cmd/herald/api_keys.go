package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "api-keys",
		summary: "create, list and revoke the HTTP API's keys of a producer (audited; a key is shown once)",
		run:     runAPIKeys,
	})
}

// runAPIKeys is `herald api-keys create|list|revoke`: internal/api does
// the work, as an operator's login, through the audited schema functions.
func runAPIKeys(ctx context.Context, m *Main, args []string) error {
	sub, args, err := m.subcommand("api-keys", args, "create", "list", "revoke")
	if err != nil {
		return err
	}
	var g globalFlags
	fs := m.newJSONFlagSet("api-keys "+sub, &g)
	producer := fs.String("producer", "", "the producer the key acts for (required, but for list)")
	var a auditFlags
	a.bind(fs, m, "")
	var id int64
	if sub == "revoke" {
		arg, err := m.parseOneArg(fs, &g, args, "api-keys revoke", "KEY_ID")
		if err != nil {
			return err
		}
		if id, err = strconv.ParseInt(arg, 10, 64); err != nil {
			return usageError{fmt.Errorf("invalid KEY_ID %s: want the number api-keys list shows", operator.QuoteArg(arg))}
		}
	} else if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if sub != "list" && *producer == "" {
		return usageError{errors.New("invalid -producer: required")}
	} else if err := a.check(false); sub != "list" && err != nil {
		return err
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		k, err := api.CreateKey(ctx, pool, *producer, a.actor, a.reason)
		if err != nil {
			return err
		}
		return output(m, g.JSON, k, render.APIKeyCreated)
	case "list":
		keys, err := api.ListKeys(ctx, pool, *producer)
		if err != nil {
			return err
		}
		return output(m, g.JSON, keys, render.APIKeys)
	}
	at, err := api.RevokeKey(ctx, pool, *producer, id, a.actor, a.reason)
	if errors.Is(err, api.ErrKeyNotFound) {
		return fmt.Errorf("revoke: producer %s has no api key %d", *producer, id)
	}
	if err != nil {
		return err
	}
	return output(m, g.JSON, &render.APIKeyRevoked{ID: id, Producer: *producer, RevokedAt: at}, render.Revoked)
}
