package webhook_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/secret"
)

func TestSettings_ConfigReadsTheSecretsAndSplitsThem(t *testing.T) {
	t.Parallel()
	s := webhook.Settings{Secrets: secret.Secret{Env: "HOOK_SECRETS"}, AllowHosts: []string{"hooks.example.com"}}
	getenv := func(k string) string { return map[string]string{"HOOK_SECRETS": " whsec_a  whsec_b "}[k] }
	cfg, err := s.Config(getenv)
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_a", "whsec_b"}, cfg.Secrets)
	require.Equal(t, []string{"hooks.example.com"}, cfg.AllowHosts)

	_, err = s.Config(func(string) string { return "" })
	require.EqualError(t, err, "secrets: environment variable HOOK_SECRETS is empty or unset")
	require.EqualError(t, webhook.Settings{}.Check(secret.Secret.CheckGiven), "secrets: required: set env or file")
}
