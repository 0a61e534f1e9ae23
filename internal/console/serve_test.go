package console_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/console"
)

func TestFromConfig_OffWithoutListen(t *testing.T) {
	t.Parallel()
	require.Nil(t, console.FromConfig(config.Console{}, "postgres://db/herald", slog.New(slog.DiscardHandler)))
	cfg := console.FromConfig(config.Console{Listen: ":8089", MaxClientConns: 3}, "postgres://engine:pw@db/herald", slog.New(slog.DiscardHandler))
	require.Equal(t, "postgres://engine:pw@db/herald", cfg.DatabaseURL, "sign-ins go where serve's database is")
	require.Equal(t, 3, cfg.Server.MaxConns)
	cfg = console.FromConfig(config.Console{Listen: ":8089", DatabaseURL: "postgres://replica/herald"}, "postgres://db/herald", slog.New(slog.DiscardHandler))
	require.Equal(t, "postgres://replica/herald", cfg.DatabaseURL)
}

// TestRunBeside_ServesWhileRunRuns proves serve's wiring: the console
// answers while the engine's run function runs, and both stop when it
// returns.
func TestRunBeside_ServesWhileRunRuns(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := console.FromConfig(config.Console{Listen: addr}, "postgres://127.0.0.1:1/herald", slog.New(slog.DiscardHandler))
	var status int
	var page string
	err = console.RunBeside(context.Background(), cfg, func(ctx context.Context) error {
		res, err := http.Get("http://" + addr + "/login")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		status, page = res.StatusCode, string(b)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Database login")
	_, err = net.Dial("tcp", addr)
	require.Error(t, err, "the console still listens after run returned")

	// An address in use stops serve before the engine runs.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	ran := false
	err = console.RunBeside(context.Background(), &console.Config{Listen: busy.Addr().String()}, func(context.Context) error { ran = true; return nil })
	require.ErrorContains(t, err, "console address")
	require.False(t, ran)
}
