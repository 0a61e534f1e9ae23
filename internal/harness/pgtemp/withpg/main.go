// Command withpg runs a command with TEST_DATABASE_URL pointing at a
// throwaway PostgreSQL cluster, started once for the whole run:
//
//	go run ./internal/harness/pgtemp/withpg go test ./...
//
// If TEST_DATABASE_URL is already set, the command runs against that server
// and no cluster starts. The cluster is stopped and removed afterwards, and
// withpg exits with the command's exit status.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func main() { os.Exit(run()) }

func run() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: withpg COMMAND [ARGS...]")
		return 2
	}
	ctx := context.Background()
	if os.Getenv(pgtemp.EnvURL) == "" {
		start := time.Now()
		c, err := pgtemp.Start(ctx, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "withpg:", err)
			return 1
		}
		defer c.Stop()
		fmt.Fprintf(os.Stderr, "withpg: PostgreSQL on 127.0.0.1:%d (started in %s)\n", c.Port(), time.Since(start).Round(time.Millisecond))
		os.Setenv(pgtemp.EnvURL, c.URL("postgres"))
	}
	// Build the migrated template once, before the test processes race to.
	start := time.Now()
	if _, _, err := pgtemp.Server(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "withpg: template database ready in %s\n", time.Since(start).Round(time.Millisecond))

	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	return 0
}
