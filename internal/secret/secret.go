// Package secret says where a credential is kept: an environment variable
// or a file. A configuration holds a Secret, never the value; the value is
// read when a driver is built (Resolve), and a Secret prints as where it
// comes from only. It is a leaf package so that internal/config and the
// channel packages whose settings carry credentials share one type.
package secret

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Secret says where a credential is: an environment variable or a file
// (its content, trimmed). It never holds the value, and prints as where it
// comes from only.
type Secret struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

// CheckFunc checks one credential of a configuration: Resolve it (serve,
// which has the environment) or only CheckGiven (a machine writing settings
// for another).
type CheckFunc func(Secret) error

// IsZero reports whether the secret names no source.
func (s Secret) IsZero() bool { return s.Env == "" && s.File == "" }

// String describes where the secret comes from, never its value.
func (s Secret) String() string {
	switch {
	case s.Env != "":
		return "env " + s.Env
	case s.File != "":
		return "file " + s.File
	}
	return "unset"
}

// Resolve reads the secret. It returns an error naming the variable or
// file (never the value) when the source is missing or empty.
func (s Secret) Resolve(getenv func(string) string) (string, error) {
	var v string
	switch {
	case s.Env != "" && s.File != "":
		return "", errors.New("set env or file, not both")
	case s.Env != "":
		v = strings.TrimSpace(getenv(s.Env))
		if v == "" {
			return "", fmt.Errorf("environment variable %s is empty or unset", s.Env)
		}
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("read secret file: %w", err)
		}
		v = strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("secret file %s is empty", s.File)
		}
	default:
		return "", errors.New("required: set env or file")
	}
	return v, nil
}

// CheckGiven reports whether s names exactly one source, as Resolve would
// before reading it; it reads nothing.
func (s Secret) CheckGiven() error {
	switch {
	case s.Env != "" && s.File != "":
		return errors.New("set env or file, not both")
	case s.IsZero():
		return errors.New("required: set env or file")
	}
	return nil
}

// Resolver returns the CheckFunc that resolves each credential through
// getenv (or its file) and drops the value.
func Resolver(getenv func(string) string) CheckFunc {
	return func(s Secret) error {
		_, err := s.Resolve(getenv)
		return err
	}
}
