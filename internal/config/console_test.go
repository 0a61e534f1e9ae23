package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoad_ConsoleFromFileAndEnv(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "console:\n  listen: 127.0.0.1:8089\n  session_idle: 10m\n  read_timeout: 5s\n"+
		"channels:\n  sms: {driver: log}\n")
	c, err := Load(file, env(map[string]string{
		"HERALD_CONSOLE_SECURE_COOKIES":   "true",
		"HERALD_CONSOLE_MAX_CLIENT_CONNS": "12",
		"HERALD_CONSOLE_DATABASE_URL":     "postgres://db.internal/herald",
	}))
	require.NoError(t, err)
	require.Equal(t, Console{Listen: "127.0.0.1:8089", DatabaseURL: "postgres://db.internal/herald", SessionIdle: 10 * time.Minute,
		SecureCookies: true, ReadTimeout: 5 * time.Second, MaxClientConns: 12}, c.Console)

	c, err = Load("", env(map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "log", "HERALD_CONSOLE_LISTEN": ":8089"}))
	require.NoError(t, err)
	require.Equal(t, ":8089", c.Console.Listen)

	for key, want := range map[string]string{
		"HERALD_CONSOLE_SESSION_IDLE":     "console.session_idle",
		"HERALD_CONSOLE_IDLE_TIMEOUT":     "console.idle_timeout",
		"HERALD_CONSOLE_MAX_CLIENT_CONNS": "console.max_client_conns",
		"HERALD_CONSOLE_SECURE_COOKIES":   "HERALD_CONSOLE_SECURE_COOKIES",
	} {
		value := "-1"
		switch key {
		case "HERALD_CONSOLE_SESSION_IDLE":
			value = "30s"
		case "HERALD_CONSOLE_IDLE_TIMEOUT":
			value = "-1s"
		case "HERALD_CONSOLE_SECURE_COOKIES":
			value = "maybe"
		}
		_, err := Load("", env(map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "log", key: value}))
		require.ErrorContains(t, err, want, key)
	}
}
