package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/connstr"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// CheckCommandLine checks what `herald demo` was given: -users, -timeout
// and -otlp-endpoint ("" for none). Its error is one line naming the flag.
func CheckCommandLine(users int, timeout time.Duration, otlpEndpoint string) error {
	switch u, err := url.Parse(otlpEndpoint); {
	case users < 10 || users > 5000:
		return fmt.Errorf("invalid -users %d: want 10 to 5000", users)
	case timeout <= 0:
		return fmt.Errorf("invalid -timeout %s: must be positive", timeout)
	case otlpEndpoint != "" && (err != nil || !strings.HasPrefix(u.Scheme, "http") || u.Host == ""):
		return fmt.Errorf("invalid -otlp-endpoint %q: want an http(s) URL", otlpEndpoint)
	}
	return nil
}

// StartThrowaway starts a throwaway PostgreSQL from the local binaries for
// a demo given no database, saying so on progress. It returns the cluster's
// URL and the function that removes it, which logs a failure to logger.
func StartThrowaway(ctx context.Context, progress io.Writer, logger *slog.Logger) (string, func(), error) {
	fmt.Fprintln(progress, "demo: no DATABASE_URL: starting a throwaway PostgreSQL from the local binaries")
	// Every login but the superuser gives its password, so that the
	// console's sign-in checks the one the summary shows.
	cluster, stopCluster, err := pgtemp.StartWithPasswords(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("start throwaway postgres: %w", err)
	}
	stop := func() {
		if err := stopCluster(); err != nil {
			logger.Warn("stop throwaway postgres", "err", err)
		}
	}
	u := cluster.URL("postgres")
	fmt.Fprintf(progress, "demo: PostgreSQL at %s (removed when the demo exits)\n", connstr.Redact(u))
	return u, stop, nil
}
