package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestViewOrder_PutsAViewAfterTheViewsItNames(t *testing.T) {
	t.Parallel()
	view := func(name, sql string) definition { return definition{kind: kindView, name: name, sql: sql} }
	names := func(defs []definition) []string {
		var out []string
		for _, d := range defs {
			out = append(out, d.name)
		}
		return out
	}

	got, err := viewOrder([]definition{
		view("a_view", "CREATE OR REPLACE VIEW herald.a_view AS SELECT * FROM herald.c_view"),
		view("b_view", "-- not from a_view\nCREATE OR REPLACE VIEW herald.b_view AS SELECT 1"),
		view("c_view", "CREATE OR REPLACE VIEW herald.c_view AS SELECT * FROM herald.b_view, herald.b_view_x"),
	})
	require.NoError(t, err)
	require.Equal(t, []string{"b_view", "c_view", "a_view"}, names(got), "a name in a comment is no dependency")

	_, err = viewOrder([]definition{
		view("x_view", "SELECT * FROM herald.y_view"),
		view("y_view", "SELECT * FROM herald.x_view"),
		view("z_view", "SELECT 1"),
	})
	require.EqualError(t, err, "views name each other in a cycle: x_view, y_view")
}
