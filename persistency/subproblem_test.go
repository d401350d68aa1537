package persistency_test

import (
	"math"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// TestTheSubproblemOfEveryVariableIsTheModel: where A is every variable and the
// model has no constant, Ê_{A,y} is the model itself — the same labels, factor
// scopes and functions in the same order, hence the same energies and
// certificate edges as the induced builder's copy; with a constant it is the
// model without it (its storage, its offset 0, the model's kept), and an A of
// the right length that is not every variable is still refused.
func TestTheSubproblemOfEveryVariableIsTheModel(t *testing.T) {
	gens := []func(seed uint64) *model.Model{
		func(s uint64) *model.Model { return random.PottsGrid(random.New(s), 5, 4, 3) },
		func(s uint64) *model.Model { return random.ParametricGrid(random.New(s+50), 4, 4, 5) },
		func(s uint64) *model.Model { return random.DensePairwise(random.New(s+100), 9, 4, 0.5) },
		func(s uint64) *model.Model { return random.HigherOrder(random.New(s+150), 7, 3, 3, 9) },
	}
	whole, constants := 0, 0
	for i, gen := range gens {
		for seed := range uint64(8) {
			m := gen(seed)
			all := seq(m.NumVars())
			y := random.Labeling(random.New(seed+7), m)
			for _, v := range []persistency.Variant{persistency.Original, persistency.Invariant} {
				fast, err := persistency.BuildSubproblem(m, all, y, v)
				must(t, err)
				slow, err := persistency.BuildSubproblemByCopy(m, all, y, v)
				must(t, err)
				if m.Offset() != 0 {
					// A constant (detected in a table): the copy, without it.
					constants++
					off := m.Offset()
					if fast.Model == m || fast.Model.Offset() != 0 || m.Offset() != off {
						t.Fatalf("family %d seed %d: with a constant, the model itself or a copy with offset %v (the model's now %v)", i, seed, fast.Model.Offset(), m.Offset())
					}
					if e, f := m.Energy(y), fast.Model.Energy(y); !math.IsInf(e, 1) && math.Abs(e-f-off) > 1e-9*math.Max(1, math.Abs(e)) || math.IsInf(e, 1) != math.IsInf(f, 1) {
						t.Fatalf("family %d seed %d: energy %v of the model, %v without its constant %v", i, seed, e, f, off)
					}
					sameModel(t, fast.Model, slow.Model)
					continue
				}
				if fast.Model != m {
					t.Fatalf("family %d seed %d: the sub-problem of every variable is a copy", i, seed)
				}
				whole++
				if !slices.Equal(fast.Vars, slow.Vars) || !slices.Equal(fast.Boundary, slow.Boundary) || len(slow.Hopeless) != 0 {
					t.Fatalf("family %d seed %d: vars %v/%v boundary %v/%v hopeless %v", i, seed, fast.Vars, slow.Vars, fast.Boundary, slow.Boundary, slow.Hopeless)
				}
				sameModel(t, m, slow.Model)
			}
		}
	}

	if whole == 0 || constants == 0 {
		t.Fatalf("%d models without a constant, %d with: want both", whole, constants)
	}

	// A constant: the copy, without it.
	b := model.NewBuilder([]int{2, 3})
	must(t, b.AddTable([]int{0, 1}, []float64{0, 1, 2, 3, 4, 6}))
	must(t, b.AddConstant(2.5))
	m, err := b.Build()
	must(t, err)
	sp, err := persistency.BuildSubproblem(m, []int{0, 1}, []int{0, 0}, persistency.Original)
	must(t, err)
	if sp.Model == m || sp.Model.Offset() != 0 || sp.Model.Energy([]int{1, 2}) != m.Energy([]int{1, 2})-2.5 {
		t.Fatalf("with a constant: the model itself or a wrong copy (offset %v)", sp.Model.Offset())
	}
	if _, err := persistency.BuildSubproblem(m, []int{1, 1}, []int{0, 0}, persistency.Original); err == nil {
		t.Fatal("A = {1, 1} was accepted")
	}
}

// sameModel fails unless a and b have the same labels and the same factors
// (scopes and tables) in the same order, and the same constant.
func sameModel(t *testing.T, a, b *model.Model) {
	t.Helper()
	if a.NumVars() != b.NumVars() || a.NumFactors() != b.NumFactors() || a.Offset() != b.Offset() {
		t.Fatalf("%d/%d variables, %d/%d factors, offset %v/%v", a.NumVars(), b.NumVars(), a.NumFactors(), b.NumFactors(), a.Offset(), b.Offset())
	}
	for v := range a.NumVars() {
		if a.NumLabels(v) != b.NumLabels(v) {
			t.Fatalf("variable %d: %d/%d labels", v, a.NumLabels(v), b.NumLabels(v))
		}
	}
	for f := range a.NumFactors() {
		fa, fb := a.FactorFunction(f), b.FactorFunction(f)
		if !slices.Equal(a.FactorVars(f), b.FactorVars(f)) || fa.Kind != fb.Kind || !slices.Equal(fa.Table, fb.Table) || !slices.Equal(fa.Shape, fb.Shape) {
			t.Fatalf("factor %d differs: %v %+v / %v %+v", f, a.FactorVars(f), fa, b.FactorVars(f), fb)
		}
	}
}
