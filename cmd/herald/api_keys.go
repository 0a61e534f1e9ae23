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
		subs: []*command{
			{name: "create", summary: "create a key for a producer and print it, once", run: apiKeysCreate,
				example: "herald api-keys create -producer shop -reason 'checkout service'"},
			{name: "list", summary: "list the keys, never their secrets", run: apiKeysList, readOnly: true,
				example: "herald api-keys list -producer shop --json"},
			{name: "revoke", summary: "revoke one key of a producer", run: apiKeysRevoke,
				example: "herald api-keys revoke -producer shop -reason 'leaked' 42"},
		},
	})
}

// The api-keys subcommands: internal/api does the work, as an operator's
// login, through the audited schema functions.

func apiKeysCreate(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("api-keys create", &g)
	producer := fs.String("producer", "", "the producer the key acts for (required)")
	var a auditFlags
	a.bind(fs, m, "")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	if err := requireProducer(*producer, &a); err != nil {
		return err
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	k, err := api.CreateKey(ctx, pool, *producer, a.actor, a.reason)
	if err != nil {
		return err
	}
	return output(m, g.JSON, k, render.APIKeyCreated)
}

func apiKeysList(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("api-keys list", &g)
	producer := fs.String("producer", "", "only this producer's keys (default: every producer's)")
	if err := m.noArgs(fs, &g, args); err != nil {
		return err
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
	}
	keys, err := api.ListKeys(ctx, pool, *producer)
	if err != nil {
		return err
	}
	return output(m, g.JSON, keys, render.APIKeys)
}

func apiKeysRevoke(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newJSONFlagSet("api-keys revoke", &g)
	producer := fs.String("producer", "", "the producer the key acts for (required)")
	var a auditFlags
	a.bind(fs, m, "")
	arg, err := m.parseOneArg(fs, &g, args, "api-keys revoke", "KEY_ID")
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return usageError{fmt.Errorf("invalid KEY_ID %s: want the number api-keys list shows", operator.QuoteArg(arg))}
	}
	if err := requireProducer(*producer, &a); err != nil {
		return err
	}
	pool, err := m.pool(ctx, &g)
	if err != nil {
		return err
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

// requireProducer refuses an empty -producer, then an empty -actor.
func requireProducer(producer string, a *auditFlags) error {
	if producer == "" {
		return usageError{errors.New("invalid -producer: required")}
	}
	return a.check(false)
}
