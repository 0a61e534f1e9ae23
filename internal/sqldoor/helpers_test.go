package sqldoor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/intaketest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

// Fixtures shared with package intake's tests.
var (
	testNow    = intaketest.Now
	fuzzLimits = intake.Limits(intaketest.Limits)
)

const validEntry = intaketest.ValidEntry

// mustValidate validates in at testNow.
func mustValidate(t *testing.T, in *intake.Intent) *intake.Validated {
	t.Helper()
	v, err := intake.Validate(in, intake.Limits{}, testNow)
	require.NoError(t, err)
	return v
}
