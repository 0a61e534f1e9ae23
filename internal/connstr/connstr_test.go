package connstr_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/connstr"
)

func TestRedact_MasksEveryPassword(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"postgres://bob@db.example.com/herald", "postgres://bob@db.example.com/herald"},
		{"postgres://bob:s3cret@db.example.com:5432/herald?sslmode=require", "postgres://bob:xxxxx@db.example.com:5432/herald?sslmode=require"},
		{"postgresql://bob:s%2Fc%40ret@db/herald", "postgresql://bob:xxxxx@db/herald"},
		{"postgres://bob@db/herald?password=s3cret&sslpassword=k3y&application_name=x", "postgres://bob@db/herald?password=xxxxx&sslpassword=xxxxx&application_name=x"},
		{"postgres://bob:s3c@ret@db:99999999/herald", "postgres://bob:xxxxx@db:99999999/herald"},
		{"postgres://bob:s3cret@%zz/herald", "postgres://bob:xxxxx@%zz/herald"},
		{"host=db user=bob password=s3cret dbname=herald", "host=db user=bob password=xxxxx dbname=herald"},
		{"host=db password = 's3 c\\'ret' sslpassword=k3y", "host=db password=xxxxx sslpassword=xxxxx"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, connstr.Redact(tt.in), "%q", tt.in)
	}
}

func TestConnect_ErrorsHoldNoPassword(t *testing.T) {
	t.Parallel()

	_, err := connstr.Connect(t.Context(), "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=x", nil)
	require.ErrorContains(t, err, "database url: ")
	require.NotContains(t, err.Error(), "s3cret")

	// Port 1 answers nothing: the ping fails, and the error names the
	// database without its password.
	_, err = connstr.Connect(t.Context(), "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=1", nil)
	require.ErrorContains(t, err, "connect to postgres://u@127.0.0.1:1/db: ")
	require.NotContains(t, err.Error(), "s3cret")
}
