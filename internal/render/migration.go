package render

import (
	"fmt"
	"io"

	"github.com/heraldhq/herald/schema"
)

// MigrationStatus writes where each component's migrations stand, as
// `herald migrate status` shows it.
func MigrationStatus(w io.Writer, sts []schema.Status) error {
	return table(w, "COMPONENT\tCURRENT\tLATEST\tPENDING", sts, false, func(s schema.Status) string {
		return fmt.Sprintf("%s\t%d\t%d\t%v", s.Component, s.Current, s.Latest, s.Pending)
	})
}

// MigrationRun is what `herald migrate up` or `down` did: the steps it
// took, failed or not. Its JSON form, the command's --json output, is
// {"steps": [...]}.
type MigrationRun struct {
	Steps []schema.Step `json:"steps"`
	// Up is true for migrate up, false for down.
	Up bool `json:"-"`
	// Failed is true when the run stopped on an error after Steps.
	Failed bool `json:"-"`
}

// MigrationSteps writes a line per migration applied (up) or rolled back,
// and, when there is none and the run did not fail, a line saying the
// schema is up to date (up) or already at the target version. A failed run
// shows the steps it took before failing, and nothing else.
func MigrationSteps(w io.Writer, r *MigrationRun) error {
	steps, up, failed := r.Steps, r.Up, r.Failed
	for _, s := range steps {
		fmt.Fprintf(w, "%-6s %-4s %5d  %s  (%s)\n", s.Component, s.Direction, s.Version, s.Name, s.Duration.Round(1000))
	}
	switch {
	case len(steps) > 0 || failed:
	case up:
		fmt.Fprintln(w, "nothing to do: the schema is up to date")
	default:
		fmt.Fprintln(w, "nothing to do: the schema is already at the target version")
	}
	return nil
}
