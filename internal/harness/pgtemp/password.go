package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// passwordHBA is a pg_hba.conf under which the superuser postgres
// connects without a password (over the socket and loopback TCP) and every
// other login must give its password over TCP.
const passwordHBA = `local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
`

// StartWithPasswords starts a cluster like Start, except that every login
// but the superuser must give its password over TCP: for a test that
// proves a wrong password is refused (Start's cluster trusts every local
// connection, whatever password it gives). Create databases on it with
// CreateDatabase, whose ServerURL is the cluster's URL("postgres"). stop
// stops it and removes it.
func StartWithPasswords(ctx context.Context) (c *Cluster, stop func() error, err error) {
	// The server may run as another user than the test (as root, Start
	// runs it unprivileged): the file must be readable by everyone.
	f, err := os.CreateTemp("", "herald-pg-hba-*.conf")
	if err != nil {
		return nil, nil, fmt.Errorf("write pg_hba.conf: %w", err)
	}
	_, werr := f.WriteString(passwordHBA)
	if err := errors.Join(werr, f.Chmod(0o644), f.Close()); err != nil {
		_ = os.Remove(f.Name())
		return nil, nil, fmt.Errorf("write pg_hba.conf: %w", err)
	}
	c, err = Start(ctx, &Config{Settings: map[string]string{"hba_file": f.Name(), "password_encryption": "scram-sha-256"}})
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, nil, err
	}
	return c, func() error { return errors.Join(c.Stop(), os.Remove(f.Name())) }, nil
}
