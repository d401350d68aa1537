package persistency_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// criterionFamilies are the tiny models of the criterion tests: pairwise and higher
// order, mixed label counts with 1-label variables, forbidden states.
var criterionFamilies = []family{
	{"DensePairwise", true, func(rng *rand.Rand) *model.Model { return random.DensePairwise(rng, 3+rng.IntN(5), 3, 0.6) }},
	{"FrustratedRandomGraph", true, func(rng *rand.Rand) *model.Model {
		n := 4 + rng.IntN(4)
		return spinGlass(rng, n, 3, randomGraph(rng, n, 0.35, true), true, true, 1)
	}},
	{"IsingSpinGlassGrid", true, func(rng *rand.Rand) *model.Model { return spinGlass(rng, 9, 2, gridEdges(3, 3), false, false, 2) }},
	{"HigherOrder", false, func(rng *rand.Rand) *model.Model {
		n := 3 + rng.IntN(5)
		return random.HigherOrder(rng, n, 3, 4, n+rng.IntN(n+1))
	}},
}

// testLabeling picks a test labeling for A: the global optimum, a fixed point of
// y ← argmin Ê_{A,y} (what Algorithm 1 converges to with an exact solver), or random.
func testLabeling(t *testing.T, rng *rand.Rand, m *model.Model, A []int, v persistency.Variant, opt []int) []int {
	switch rng.IntN(3) {
	case 0:
		return slices.Clone(opt)
	case 1:
		y := random.Labeling(rng, m)
		for range 6 {
			sp, err := persistency.BuildSubproblem(m, A, y, v)
			must(t, err)
			x, e := minEnergy(t, sp.Model)
			if math.IsInf(e, 1) {
				break
			}
			for i, u := range A {
				y[u] = x[i]
			}
		}
		return y
	}
	return random.Labeling(rng, m)
}

// TestTheorem1_CriterionImpliesPersistency checks Theorem 1 by enumeration: on random
// tiny models, node sets A and test labelings y, whenever y|_A minimises Ê_{A,y} (the
// integer criterion, decided by brute force on BuildSubproblem's model; cases with a
// −Inf boundary entry or an infinite minimum are skipped), some optimal labeling of the
// model agrees with y on A: min E conditioned on y|_A equals min E. Both variants.
func TestTheorem1_CriterionImpliesPersistency(t *testing.T) {
	fewerGCs(t)
	const perFamily = 200
	total := map[persistency.Variant]int{}
	for fi, fam := range criterionFamilies {
		t.Run(fam.name, func(t *testing.T) {
			rng := random.New(100 + uint64(fi))
			hits := map[persistency.Variant]int{}
			partial, skipped := 0, 0
			for c := range perFamily {
				m := fam.gen(rng)
				opt, minE := minEnergy(t, m)
				for _, v := range variants {
					for range 2 {
						A := randomSubset(rng, m.NumVars())
						y := testLabeling(t, rng, m, A, v, opt)
						sp, err := persistency.BuildSubproblem(m, A, y, v)
						must(t, err)
						if !slices.Equal(sp.Vars, A) {
							t.Fatalf("case %d: sub-problem variables %v, want %v", c, sp.Vars, A)
						}
						yA := restrict(y, A)
						_, spMin := minEnergy(t, sp.Model)
						if len(sp.Hopeless) > 0 || math.IsInf(spMin, 1) {
							skipped++
							continue
						}
						if !testutil.CloseTo(sp.Model.Energy(yA), spMin, 1e-9) {
							continue // the criterion does not hold
						}
						hits[v]++
						if len(A) < m.NumVars() {
							partial++
						}
						if ok, e := isPersistent(t, m, fixedOn(m.NumVars(), A, y), minE); !ok {
							t.Errorf("case %d %v: A=%v y=%v satisfies the criterion (Ê(y)=%v=min), but min E with y fixed is %v > min E %v",
								c, v, A, yA, spMin, e, minE)
						}
					}
				}
			}
			t.Logf("criterion held %d (invariant) and %d (original) times, %d on proper subsets; %d skipped (−Inf boundary or infeasible Ê)",
				hits[persistency.Invariant], hits[persistency.Original], partial, skipped)
			for _, v := range variants {
				total[v] += hits[v]
				if hits[v] < 20 {
					t.Errorf("%v: the criterion held only %d times: the test checks too little", v, hits[v])
				}
			}
		})
	}
	for _, v := range variants {
		if total[v] < 400 {
			t.Errorf("%v: the criterion held only %d times in all: the test checks too little", v, total[v])
		}
	}
}

// TestCorollary1_RelaxedCriterionImpliesPersistency: on pairwise models, when the
// LP relaxation of Ê_{A,y} is solved by TRW-S with y|_A as its integral, certified
// optimum (δ(y) ∈ argmin over the local polytope), then y|_A also minimises Ê_{A,y}
// (Corollary 1's reduction to Theorem 1) and is persistent.
func TestCorollary1_RelaxedCriterionImpliesPersistency(t *testing.T) {
	fewerGCs(t)
	hits := 0
	for fi, fam := range criterionFamilies {
		if !fam.pairwise {
			continue
		}
		rng := random.New(200 + uint64(fi))
		for c := range 150 {
			m := fam.gen(rng)
			opt, minE := minEnergy(t, m)
			for _, v := range variants {
				A := randomSubset(rng, m.NumVars())
				y := testLabeling(t, rng, m, A, v, opt)
				sp, err := persistency.BuildSubproblem(m, A, y, v)
				must(t, err)
				_, spMin := minEnergy(t, sp.Model)
				if len(sp.Hopeless) > 0 || math.IsInf(spMin, 1) {
					continue // Ê is infeasible: no labeling can be certified
				}
				out, err := persistency.TRWS{}.Solve(testCtx, sp.Model, nil)
				must(t, err)
				yA := restrict(y, A)
				if !slices.Equal(out.Consistent, yA) {
					continue
				}
				cert, err := out.Certify(yA)
				must(t, err)
				chk, err := cert.Check(sp.Model)
				must(t, err)
				if !chk.Certified {
					t.Errorf("%s case %d %v: TRW-S agrees on y everywhere, but its certificate does not check: %+v", fam.name, c, v, chk)
					continue
				}
				hits++
				if !testutil.CloseTo(sp.Model.Energy(yA), spMin, 1e-9) {
					t.Errorf("%s case %d %v: δ(y) is certified LP-optimal, but Ê(y)=%v > min Ê=%v", fam.name, c, v, sp.Model.Energy(yA), spMin)
				}
				if ok, e := isPersistent(t, m, fixedOn(m.NumVars(), A, y), minE); !ok {
					t.Errorf("%s case %d %v: A=%v y=%v satisfies the relaxed criterion, but min E with y fixed is %v > %v", fam.name, c, v, A, yA, e, minE)
				}
			}
		}
	}
	t.Logf("the relaxed criterion held %d times", hits)
	if hits < 150 {
		t.Errorf("the relaxed criterion held only %d times: the test checks too little", hits)
	}
}

// TestBuildSubproblemIsTheAugmentedEnergy: BuildSubproblem's model is Ê_{A,y} of
// ../shared/PAPER.md — the factors inside A plus one boundary potential per factor
// leaving A — up to a constant, compared with an assembly written here from the
// definitions (augmented) on every labeling of A; Vars is A, Boundary marks exactly
// the nodes of A in a factor leaving A, and Hopeless is non-empty exactly when a
// boundary potential has a −Inf entry or is +Inf at y.
func TestBuildSubproblemIsTheAugmentedEnergy(t *testing.T) {
	fewerGCs(t)
	rng := random.New(300)
	for c := range 400 {
		fam := criterionFamilies[c%len(criterionFamilies)]
		m := fam.gen(rng)
		A := randomSubset(rng, m.NumVars())
		y := random.Labeling(rng, m)
		v := variants[c%2]
		sp, err := persistency.BuildSubproblem(m, A, y, v)
		must(t, err)
		energy, hopeless := augmented(m, A, y, v)
		if !slices.Equal(sp.Vars, A) {
			t.Fatalf("case %d: Vars %v, want %v", c, sp.Vars, A)
		}
		if hopeless != (len(sp.Hopeless) > 0) {
			t.Errorf("case %d (%s) %v: A=%v y=%v: Hopeless %v, but by definition hopeless: %v", c, fam.name, v, A, restrict(y, A), sp.Hopeless, hopeless)
		}
		in := make([]bool, m.NumVars())
		for _, u := range A {
			in[u] = true
		}
		for i, u := range A {
			leaves := false
			for _, f := range m.VarFactors(u) {
				for _, w := range m.FactorVars(int(f)) {
					leaves = leaves || !in[w]
				}
			}
			if sp.Boundary[i] != leaves {
				t.Errorf("case %d: variable %d: Boundary %v, in a factor leaving A: %v", c, u, sp.Boundary[i], leaves)
			}
		}
		if hopeless {
			continue // hopeless potentials are left out of the model
		}
		shift := math.NaN()
		forEachLabeling(restrict(labelCounts(m), A), func(x []int) {
			got, want := sp.Model.Energy(x), energy(x)
			if math.IsInf(got, 1) || math.IsInf(want, 1) {
				if got != want {
					t.Errorf("case %d (%s) %v: A=%v y=%v x=%v: Ê = %v, the definition gives %v", c, fam.name, v, A, restrict(y, A), x, got, want)
				}
				return
			}
			if math.IsNaN(shift) {
				shift = got - want
			}
			if math.Abs(got-want-shift) > 1e-9*math.Max(1, math.Abs(got)) {
				t.Errorf("case %d (%s) %v: A=%v y=%v x=%v: Ê = %v, the definition gives %v (+ constant %v)", c, fam.name, v, A, restrict(y, A), x, got, want, shift)
			}
		})
	}
}
