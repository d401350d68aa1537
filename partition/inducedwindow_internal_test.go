package partition

import (
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// TestAWindowWithNothingFixedIsInducedFromTheWholeModel: where nothing is
// fixed, the problem a window induces from the whole model (inducedWindow) is
// the one conditionedProblem makes from its rectangle's model: the same
// variables, labels, factors in the same order and tables, pixels and
// candidates — on grids and on models whose factors of any order reach across
// the rectangle's border, for windows inside the grid and on its edges.
func TestAWindowWithNothingFixedIsInducedFromTheWholeModel(t *testing.T) {
	const w, h = 23, 17
	models := map[string]*model.Model{
		"potts":      random.PottsGrid(random.New(1), w, h, 3),
		"parametric": random.ParametricGrid(random.New(2), w, h, 4),
		"any scopes": random.HigherOrder(random.New(3), w*h, 3, 4, 3*w*h),
	}
	for name, m := range models {
		r, err := RasterOf(m, w, h)
		if err != nil {
			t.Fatal(err)
		}
		windows := 0
		for _, plan := range [][3]int{{8, 2, 0}, {8, 2, 4}, {5, 1, 3}, {30, 3, 0}} {
			for _, win := range RasterWindows(w, h, plan[0], plan[1], plan[2]) {
				e := win.Nodes.grow(2, w, h)
				em, err := r.Window(e.X0, e.Y0, e.W, e.H)
				if err != nil {
					t.Fatal(err)
				}
				labels, nodes := make([]int, e.Pixels()), []int(nil)
				for i := range labels {
					labels[i] = -1
					if win.Nodes.contains(e.X0+i%e.W, e.Y0+i/e.W) {
						nodes = append(nodes, i)
					}
				}
				want, err := conditionedProblem(em, labels, nodes)
				if err != nil {
					t.Fatal(err)
				}
				got, err := inducedWindow(m, w, e, win.Nodes)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.vars, want.vars) || !slices.Equal(got.candidates, want.candidates) {
					t.Fatalf("%s, window %+v: pixels or candidates differ", name, win)
				}
				if msg := modelDifference(got.sub, want.sub); msg != "" {
					t.Fatalf("%s, window %+v: %s", name, win, msg)
				}
				windows++
			}
		}
		if windows < 20 {
			t.Fatalf("%s: %d windows compared", name, windows)
		}
	}
}

// modelDifference says how a and b differ in labels, factors (scopes and
// tables, in order) or constant; "" when they do not.
func modelDifference(a, b *model.Model) string {
	if a.NumVars() != b.NumVars() || a.NumFactors() != b.NumFactors() || a.Offset() != b.Offset() {
		return "sizes or constants differ"
	}
	if !slices.Equal(a.LabelCounts(), b.LabelCounts()) {
		return "labels differ"
	}
	for f := range a.NumFactors() {
		fa, fb := a.FactorFunction(f), b.FactorFunction(f)
		if !slices.Equal(a.FactorVars(f), b.FactorVars(f)) || fa.Kind != fb.Kind || !slices.Equal(fa.Table, fb.Table) ||
			!slices.Equal(fa.Shape, fb.Shape) || fa.W != fb.W || fa.T != fb.T {
			return "factors differ"
		}
	}
	return ""
}
