package email_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/secret"
)

func TestSettings_CheckNamesTheFieldOfTheSection(t *testing.T) {
	t.Parallel()
	ok := email.Settings{Host: "smtp.example.com", From: "a@example.com"}
	require.NoError(t, ok.Check(secret.Secret.CheckGiven))
	for want, mutate := range map[string]func(*email.Settings){
		"host: required":                    func(s *email.Settings) { s.Host = "" },
		"from: required":                    func(s *email.Settings) { s.From = "" },
		"port: must be between 1 and 65535": func(s *email.Settings) { s.Port = 70000 },
		`tls: "ssl" is not starttls, opportunistic, implicit or none`: func(s *email.Settings) { s.TLS = "ssl" },
		"password: required: set env or file":                         func(s *email.Settings) { s.Username = "herald" },
	} {
		s := ok
		mutate(&s)
		require.EqualError(t, s.Check(secret.Secret.CheckGiven), want)
	}
}

func TestSettings_ConfigReadsThePasswordOnlyWithAUsername(t *testing.T) {
	t.Parallel()
	s := email.Settings{Host: "smtp.example.com", Port: 587, From: "a@example.com", Password: secret.Secret{Env: "PW"}}
	cfg, err := s.Config(func(string) string { return "" })
	require.NoError(t, err, "no username: the password is not read")
	require.Empty(t, cfg.Password)
	s.Username = "herald"
	cfg, err = s.Config(func(k string) string { return map[string]string{"PW": "pw"}[k] })
	require.NoError(t, err)
	require.Equal(t, email.Config{Host: "smtp.example.com", Port: 587, From: "a@example.com", Username: "herald", Password: "pw"}, cfg)
}
