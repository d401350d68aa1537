package partition

import (
	"testing"

	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// TestSpareGivesIdleWorkersCoresToTheWindows: with fewer windows than
// workers each window's passes get the idle workers' share of the cores;
// with as many windows or more, the solver is left as it is.
func TestSpareGivesIdleWorkersCoresToTheWindows(t *testing.T) {
	base := persistency.Auto{Options: trws.Options{MaxIterations: 50}}
	for _, c := range []struct{ windows, workers, threads int }{
		{1, 1, 0}, {1, 2, 2}, {1, 8, 8}, {2, 8, 4}, {3, 8, 2}, {8, 8, 0}, {9, 2, 0}, {0, 4, 0},
	} {
		got := spare(base, c.windows, c.workers).(persistency.Auto)
		if got.Options.Threads != c.threads || got.Options.MaxIterations != 50 {
			t.Errorf("%d windows, %d workers: options %+v, want %d threads", c.windows, c.workers, got.Options, c.threads)
		}
	}
	if s, ok := spare(nil, 1, 2).(persistency.Auto); !ok || s.Options.Threads != 2 {
		t.Errorf("the default solver, one window, two workers: %#v", spare(nil, 1, 2))
	}
}
