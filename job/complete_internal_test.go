package job

import (
	"slices"
	"testing"

	"github.com/partopt/partopt/model/random"
)

// TestToulbar2SearchesNarrowComponentsByTreeDecomposition: a component of
// width at most btdWidth (a 60×8 grid) goes to toulbar2 with a tree
// decomposition search, a wider one (40×40) with its default search.
func TestToulbar2SearchesNarrowComponentsByTreeDecomposition(t *testing.T) {
	if got := toulbar2Args(random.PottsGrid(random.New(1), 60, 8, 2)); !slices.Equal(got, []string{"-B=1", "-O=-3"}) {
		t.Errorf("a 60×8 grid: %q, want a tree decomposition search", got)
	}
	if got := toulbar2Args(random.PottsGrid(random.New(1), 40, 40, 2)); got != nil {
		t.Errorf("a 40×40 grid: %q, want the default search", got)
	}
}
