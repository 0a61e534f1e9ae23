package demo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMaxInWindow_CountsAnySecond(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		times []time.Time
		want  int
	}{
		{"None", nil, 0},
		{"One", at(0), 1},
		{"AllWithinASecond", at(0, 100, 999), 3},
		{"ASecondApartIsTwoWindows", at(0, 1000), 1},
		{"AWindowAcrossAWholeSecond", at(0, 600, 900, 1100, 1400, 2500), 4},
		{"OutOfOrder", at(1400, 0, 1100, 900, 600), 4},
		{"PacedAtFiftyOneMilliseconds", at(0, 51, 102, 153, 204, 255, 306, 357, 408, 459, 510, 561, 612, 663, 714, 765, 816, 867, 918, 969, 1020), 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, maxInWindow(tt.times, time.Second))
		})
	}
}
