package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAPIKeysCmd_CreateListRevokeAudited(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	_, _, err := run(t, b.env, "api-keys", "create")
	require.Equal(t, 2, exitCode(err))
	require.ErrorContains(t, err, "-producer")

	out, stderr, err := run(t, b.env, "api-keys", "create", "--producer", "shop", "--reason", "shop goes live")
	require.NoError(t, err, stderr)
	require.Contains(t, out, "never show it again")
	var secret string
	for l := range strings.Lines(out) {
		if s := strings.TrimSpace(l); strings.HasPrefix(s, "hk_") {
			secret = s
		}
	}
	require.NotEmpty(t, secret)

	var keys []struct {
		ID       int64  `json:"id"`
		Producer string `json:"producer"`
		Prefix   string `json:"prefix"`
		Secret   string `json:"secret"`
	}
	runJSON(t, b.env, &keys, "api-keys", "list", "--producer", "shop")
	require.Len(t, keys, 1)
	require.Equal(t, secret[:len(keys[0].Prefix)], keys[0].Prefix)
	require.Empty(t, keys[0].Secret, "never listed")
	out, _, err = run(t, b.env, "api-keys", "list")
	require.NoError(t, err)
	require.NotContains(t, out, secret)

	_, _, err = run(t, b.env, "api-keys", "revoke", "--producer", "mall", fmt.Sprint(keys[0].ID))
	require.ErrorContains(t, err, "has no api key")
	out, _, err = run(t, b.env, "api-keys", "revoke", "--producer", "shop", "--reason", "leaked", fmt.Sprint(keys[0].ID))
	require.NoError(t, err)
	require.Contains(t, out, "revoked")
	var actions []string
	rows, err := b.pool.Query(context.Background(), `SELECT action || ' by ' || actor FROM herald.audit_log ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		actions = append(actions, a)
	}
	require.Equal(t, []string{"api_key_create by tester", "api_key_revoke by tester"}, actions)
}

// TestAPIKeysCreate_RecordsTheActorGiven runs api-keys as an operator's
// login: the --actor given, not the login, is who created the key, in the
// audit row and in the key's created_by; the login stays in the audit row.
func TestAPIKeysCreate_RecordsTheActorGiven(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	login, _, opEnv := loginAs(t, b, "oncall", "herald_operator")
	_, stderr, err := run(t, opEnv, "api-keys", "create", "--producer", "shop", "--actor", "alice", "--reason", "shop goes live")
	require.NoError(t, err, stderr)
	var actor, loggedLogin, createdBy string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT a.actor, a.login, k.created_by
		FROM herald.audit_log a JOIN herald.api_keys k ON k.id = (a.details ->> 'key_id')::bigint
		WHERE a.action = 'api_key_create'`).Scan(&actor, &loggedLogin, &createdBy))
	require.Equal(t, "alice", actor)
	require.Equal(t, login, loggedLogin)
	require.Equal(t, "alice", createdBy)
	var keys []struct {
		CreatedBy string `json:"created_by"`
	}
	runJSON(t, opEnv, &keys, "api-keys", "list", "--producer", "shop")
	require.Len(t, keys, 1)
	require.Equal(t, "alice", keys[0].CreatedBy)
}
