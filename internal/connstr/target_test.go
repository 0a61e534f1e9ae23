package connstr_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/connstr"
)

func TestNamed_TakesAURLOrAPGVariable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  map[string]string
		s    string
		want bool
	}{
		{nil, "", false},
		{map[string]string{"PGUSER": "ann", "PGPASSWORD": "x", "PGSSLMODE": "require"}, "", false},
		{nil, "postgres://db/herald", true},
		{nil, "host=/run/postgresql", true},
		{map[string]string{"PGHOST": "/run/postgresql"}, "", true},
		{map[string]string{"PGHOSTADDR": "10.0.0.1"}, "", true},
		{map[string]string{"PGPORT": "5433"}, "", true},
		{map[string]string{"PGDATABASE": "herald"}, "", true},
		{map[string]string{"PGSERVICE": "herald"}, "", true},
	} {
		getenv := func(k string) string { return tt.env[k] }
		require.Equal(t, tt.want, connstr.Named(tt.s, getenv), "%v %q", tt.env, tt.s)
	}
}
