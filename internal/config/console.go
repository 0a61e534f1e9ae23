package config

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Console configures the operator console (internal/console): off unless
// Listen is set. Zero values take the console's defaults.
//
// Its environment overrides: HERALD_CONSOLE_LISTEN,
// HERALD_CONSOLE_DATABASE_URL, HERALD_CONSOLE_SESSION_IDLE,
// HERALD_CONSOLE_SECURE_COOKIES, HERALD_CONSOLE_READ_TIMEOUT,
// HERALD_CONSOLE_WRITE_TIMEOUT, HERALD_CONSOLE_IDLE_TIMEOUT,
// HERALD_CONSOLE_MAX_CLIENT_CONNS.
type Console struct {
	// Listen is the address the console serves on, e.g. "127.0.0.1:8089".
	Listen string `yaml:"listen"`
	// DatabaseURL says where a person signing in connects (host, port,
	// database, TLS); its user and password, if any, are ignored: each
	// person connects as their own login. Default: serve's own database
	// URL.
	DatabaseURL string `yaml:"database_url"`
	// SessionIdle is how long a session may go unused (default 30m).
	SessionIdle time.Duration `yaml:"session_idle"`
	// SecureCookies marks the session cookie Secure on plain HTTP too:
	// for a console behind a TLS-terminating proxy.
	SecureCookies bool `yaml:"secure_cookies"`
	// The http.Server's timeouts and bound on open connections
	// (internal/httpserve's defaults: 30s, 30s, 2m, 1024).
	ReadTimeout    time.Duration `yaml:"read_timeout"`
	WriteTimeout   time.Duration `yaml:"write_timeout"`
	IdleTimeout    time.Duration `yaml:"idle_timeout"`
	MaxClientConns int           `yaml:"max_client_conns"`
}

// applyEnv overlays the HERALD_CONSOLE_* variables and returns the
// errors of those that do not parse, each naming its variable.
func (c *Console) applyEnv(getenv func(string) string) []error {
	var errs []error
	str := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	dur := func(dst *time.Duration, key string) {
		if v := getenv(key); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration like 500ms, 30s or 5m", key, v))
				return
			}
			*dst = d
		}
	}
	str(&c.Listen, "HERALD_CONSOLE_LISTEN")
	str(&c.DatabaseURL, "HERALD_CONSOLE_DATABASE_URL")
	dur(&c.SessionIdle, "HERALD_CONSOLE_SESSION_IDLE")
	dur(&c.ReadTimeout, "HERALD_CONSOLE_READ_TIMEOUT")
	dur(&c.WriteTimeout, "HERALD_CONSOLE_WRITE_TIMEOUT")
	dur(&c.IdleTimeout, "HERALD_CONSOLE_IDLE_TIMEOUT")
	if v := getenv("HERALD_CONSOLE_SECURE_COOKIES"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HERALD_CONSOLE_SECURE_COOKIES: %q is not true or false", v))
		}
		c.SecureCookies = b
	}
	if v := getenv("HERALD_CONSOLE_MAX_CLIENT_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HERALD_CONSOLE_MAX_CLIENT_CONNS: %q is not a whole number", v))
		}
		c.MaxClientConns = n
	}
	return errs
}

// validate names the first console setting out of range.
func (c *Console) validate() error {
	switch {
	case c.SessionIdle < 0 || (c.SessionIdle > 0 && c.SessionIdle < time.Minute):
		return errors.New("console.session_idle: must be at least 1m")
	case c.ReadTimeout < 0:
		return errors.New("console.read_timeout: must not be negative")
	case c.WriteTimeout < 0:
		return errors.New("console.write_timeout: must not be negative")
	case c.IdleTimeout < 0:
		return errors.New("console.idle_timeout: must not be negative")
	case c.MaxClientConns < 0:
		return errors.New("console.max_client_conns: must not be negative")
	}
	return nil
}
