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

// MigrationSteps writes a line per migration applied (up) or rolled back,
// and, when there is none and the run did not fail, a line saying the
// schema is up to date (up) or already at the target version. A failed run
// shows the steps it took before failing, and nothing else.
func MigrationSteps(w io.Writer, steps []schema.Step, up, failed bool) error {
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
