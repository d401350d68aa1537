package persistency_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// tieForest is treeModel with small integer tables, so that optima and the minima of
// sub-problems tie.
func tieForest(rng *rand.Rand, n, maxLabels int) *model.Model {
	labels := make([]int, n)
	for v := range labels {
		labels[v] = 1 + rng.IntN(maxLabels)
	}
	b := model.NewBuilder(labels)
	table := func(size int) []float64 {
		t := make([]float64, size)
		for i := range t {
			t[i] = float64(rng.IntN(3))
		}
		return t
	}
	for v, k := range labels {
		mustOK(b.AddTable([]int{v}, table(k)))
	}
	for _, e := range forestEdges(rng, n) {
		mustOK(b.AddTable([]int{e[0], e[1]}, table(labels[e[0]]*labels[e[1]])))
	}
	m, err := b.Build()
	mustOK(err)
	return m
}

// contains reports whether S ⊆ res.Set with res.Persistent = y on S, and describes
// the first difference otherwise.
func containsStrong(res *persistency.Result, s strongSet) (bool, string) {
	for _, u := range s.S {
		if res.Persistent[u] != s.y[u] {
			return false, fmt.Sprintf("variable %d: strongly persistent label %d, Run gives %d (A* = %v)", u, s.y[u], res.Persistent[u], res.Set)
		}
	}
	return true, ""
}

// TestTheorem2_NoLargerSetSatisfiesTheCriterion checks Theorem 2 (largest persistent
// labeling) on forests, where the local polytope is tight, so the relaxed criterion
// of Corollary 1 is Theorem 1's integer criterion and can be decided by enumeration:
// for every node set S and labeling y of S such that y is the unique minimiser of
// Ê_{S,y} (strong persistency), Run finds S ⊆ A* with x* = y on S — with TRW-S and with
// Exhaustive, both variants. On forests with a unique optimum, A* is then exactly the
// union of the strongly persistent sets (Corollary 2), and every strongly persistent
// labeling agrees with the optimum (Lemma 3). Forests with tied optima (small integer
// tables) are checked for S ⊆ A* too: Theorem 2 does not assume a unique optimum.
func TestTheorem2_NoLargerSetSatisfiesTheCriterion(t *testing.T) {
	fewerGCs(t)
	rng := random.New(7)
	strongCount, uniqueModels, tieModels := 0, 0, 0
	for c := range 160 {
		n := 3 + rng.IntN(4)
		ties := c%4 == 3
		var m *model.Model
		if ties {
			m = tieForest(rng, n, 3)
		} else {
			m = treeModel(rng, n, 3, c%2 == 0)
		}
		opt, _ := minEnergy(t, m)
		_, count := minimisers(m)
		unique := count == 1
		if !ties && !unique {
			continue
		}
		if unique {
			uniqueModels++
		} else {
			tieModels++
		}
		for _, v := range variants {
			strong := strongSets(m, v)
			strongCount += len(strong)
			union := map[int]bool{}
			for _, s := range strong {
				for _, u := range s.S {
					union[u] = true
					if unique && s.y[u] != opt[u] {
						t.Errorf("model %d %v: S=%v y=%v is strongly persistent, but the unique optimum %v differs (Lemma 3)", c, v, s.S, restrict(s.y, s.S), opt)
					}
				}
			}
			for _, s := range []struct {
				name   string
				solver persistency.Relaxation
			}{{"TRWS", persistency.TRWS{}}, {"Exhaustive", persistency.Exhaustive{}}} {
				res, err := persistency.Run(testCtx, m, persistency.Options{Variant: v, Solver: s.solver})
				if err != nil {
					t.Errorf("model %d %v %s: Run: %v", c, v, s.name, err)
					continue
				}
				for _, st := range strong {
					if ok, msg := containsStrong(res, st); !ok {
						t.Errorf("model %d (%d variables, unique optimum %v) %v %s: S=%v y=%v is strongly persistent, but %s",
							c, n, unique, v, s.name, st.S, restrict(st.y, st.S), msg)
					}
				}
				if unique && len(union) != len(res.Set) {
					t.Errorf("model %d %v %s: A* = %v, the union of the strongly persistent sets has %d variables (Corollary 2)", c, v, s.name, res.Set, len(union))
				}
			}
		}
	}
	t.Logf("%d forests with a unique optimum, %d with ties; %d strongly persistent (S, y) checked", uniqueModels, tieModels, strongCount)
	if uniqueModels < 80 || tieModels < 20 {
		t.Errorf("too few models: %d unique, %d with ties", uniqueModels, tieModels)
	}
}

// theorem2Families are small general models (loops, higher order, forbidden states)
// for the exact-criterion form of Theorem 2.
var theorem2Families = []family{
	{"CoreAndPeriphery", true, func(rng *rand.Rand) *model.Model { return coreAndPeriphery(rng, 5, 3, rng.IntN(2) == 0) }},
	{"DensePairwise", true, func(rng *rand.Rand) *model.Model { return random.DensePairwise(rng, 4+rng.IntN(3), 3, 0.5) }},
	{"IsingSpinGlassGrid", true, func(rng *rand.Rand) *model.Model { return spinGlass(rng, 6, 2, gridEdges(3, 2), false, false, 2) }},
	{"HigherOrder", false, func(rng *rand.Rand) *model.Model {
		n := 4 + rng.IntN(3)
		return random.HigherOrder(rng, n, 3, 3, n+rng.IntN(n))
	}},
}

// TestTheorem2_ExactCriterionFromAnyStartingSet checks the induction of Theorem 2's
// proof (Lemma 4) on general models — loops, frustration, higher order — with the
// exact criterion: Algorithm 1 with Exhaustive, whose first solve forgets a random part
// of the optimal labeling (so A⁰ is a random subset of V labelled by an optimum, and
// the pruning has work to do) and whose later solves are exact. Every strongly
// persistent (S, y) with S ⊆ A⁰ must end up in A* with x* = y on S.
// PARTOPT_SOUNDNESS_SCALE=k runs k times as many models (k = 20: about a minute).
//
// Known limitation, logged and not failed: with the invariant boundary on higher-order
// models, Run drops every inside variable of a boundary factor whose potential has a
// −Inf entry (Subproblem.Hopeless), while a smaller S that cuts the factor differently
// may have a finite potential and be strongly persistent. The paper proves Theorem 2
// for pairwise models, where the inside part is one variable and the drop is exact.
func TestTheorem2_ExactCriterionFromAnyStartingSet(t *testing.T) {
	fewerGCs(t)
	checked, pruned, hopelessLimit := 0, 0, 0
	scale := soundnessScale(t)
	for fi, fam := range theorem2Families {
		t.Run(fam.name, func(t *testing.T) {
			for c := range 60 * scale {
				seed := uint64(70000 + 1000*fi + c)
				m := fam.gen(random.New(seed))
				for _, v := range variants {
					strong := strongSets(m, v)
					solver := newLossy(persistency.Exhaustive{}, seed)
					solver.Later = 0
					hopelessDrop := false
					res, err := persistency.Run(testCtx, m, persistency.Options{Variant: v, Solver: solver, Progress: func(p persistency.Progress) {
						hopelessDrop = hopelessDrop || math.IsNaN(p.Bound) // Run dropped Hopeless nodes without a solve
					}})
					if err != nil {
						t.Errorf("seed %d %v: Run: %v", seed, v, err)
						continue
					}
					a0 := *solver.A0
					inA0 := 0
					for _, l := range a0 {
						if l >= 0 {
							inA0++
						}
					}
					if len(res.Set) < inA0 {
						pruned++
					}
				strong:
					for _, s := range strong {
						for _, u := range s.S {
							if a0[u] < 0 {
								continue strong // S ⊄ A⁰
							}
							if a0[u] != s.y[u] {
								t.Errorf("seed %d %v: S=%v y=%v is strongly persistent, but the optimum of the first solve has %d at variable %d (Lemma 3)",
									seed, v, s.S, restrict(s.y, s.S), a0[u], u)
								continue strong
							}
						}
						checked++
						if ok, msg := containsStrong(res, s); !ok {
							if !fam.pairwise && v == persistency.Invariant && hopelessDrop {
								// Known limitation, see the doc comment.
								hopelessLimit++
								t.Logf("seed %d (%s) %v: A⁰ = %v; S=%v y=%v is strongly persistent, but after a Hopeless drop %s",
									seed, fam.name, v, a0, s.S, restrict(s.y, s.S), msg)
								continue
							}
							t.Errorf("seed %d (%s, %d variables) %v: A⁰ = %v; S=%v y=%v is strongly persistent, but %s",
								seed, fam.name, m.NumVars(), v, a0, s.S, restrict(s.y, s.S), msg)
						}
					}
				}
			}
		})
	}
	t.Logf("%d strongly persistent (S, y) with S ⊆ A⁰ checked; %d runs pruned A⁰; %d missed after a higher-order Hopeless drop (logged)", checked, pruned, hopelessLimit)
	if checked < 500 || pruned < 50 {
		t.Errorf("the test checks too little: %d sets, %d pruned runs", checked, pruned)
	}
}

// TestLemma4_CriterionSurvivesTheOptimalReparametrisation checks Lemma 4 (optimal-
// repa-property) with the integer polytope (the remark after it), for models of any
// order: Ê^inv_{A,y}(x) − Ê^inv_{A,y}(y) ≥ Ê^orig_{A,y}(x) − Ê^orig_{A,y}(y) for every x,
// so y satisfying the criterion for the original boundary satisfies it for the
// invariant one, and uniquely so if it did uniquely.
func TestLemma4_CriterionSurvivesTheOptimalReparametrisation(t *testing.T) {
	fewerGCs(t)
	rng := random.New(8)
	held, checked := 0, 0
	for c := range 600 {
		fam := criterionFamilies[c%len(criterionFamilies)]
		m := fam.gen(rng)
		opt, _ := minEnergy(t, m)
		A := randomSubset(rng, m.NumVars())
		y := testLabeling(t, rng, m, A, persistency.Original, opt)
		orig, hopelessOrig := augmented(m, A, y, persistency.Original)
		inv, hopelessInv := augmented(m, A, y, persistency.Invariant)
		yA := restrict(y, A)
		eo, ei := orig(yA), inv(yA)
		if hopelessOrig && !math.IsInf(eo, 1) {
			t.Fatalf("case %d: the original boundary is hopeless, yet Ê^orig(y) = %v is finite", c, eo)
		}
		if math.IsInf(eo, 1) {
			continue // Ê^orig(y) = +Inf: nothing to carry over
		}
		if hopelessInv {
			// A −Inf invariant entry needs θ(y_I, x_O) = +Inf, which makes the
			// original θ̂(y_I) = +Inf, excluded above.
			t.Errorf("case %d (%s): A=%v y=%v: the invariant boundary has a −Inf entry but Ê^orig(y) = %v is finite", c, fam.name, A, yA, eo)
			continue
		}
		minOrig, uniqueOrig, minInv, uniqueInv := math.Inf(1), true, math.Inf(1), true
		forEachLabeling(restrict(labelCounts(m), A), func(x []int) {
			checked++
			do, di := orig(x)-eo, inv(x)-ei
			if math.IsInf(orig(x), 1) {
				do = math.Inf(1)
			}
			if math.IsInf(inv(x), 1) {
				di = math.Inf(1)
			}
			if di < do-1e-9*math.Max(1, math.Abs(do)) && !math.IsInf(do, 1) {
				t.Errorf("case %d (%s): A=%v y=%v x=%v: Ê^inv(x) − Ê^inv(y) = %v < Ê^orig(x) − Ê^orig(y) = %v", c, fam.name, A, yA, x, di, do)
			}
			if !slices.Equal(x, yA) {
				minOrig, minInv = math.Min(minOrig, do), math.Min(minInv, di)
			}
		})
		uniqueOrig, uniqueInv = minOrig > 1e-9*math.Max(1, math.Abs(eo)), minInv > 1e-9*math.Max(1, math.Abs(ei))
		if minOrig >= -1e-9*math.Max(1, math.Abs(eo)) {
			held++
			if minInv < -1e-9*math.Max(1, math.Abs(ei)) {
				t.Errorf("case %d (%s): A=%v y=%v minimises Ê^orig but not Ê^inv", c, fam.name, A, yA)
			}
			if uniqueOrig && !uniqueInv {
				t.Errorf("case %d (%s): A=%v y=%v minimises Ê^orig uniquely but Ê^inv not uniquely", c, fam.name, A, yA)
			}
		}
	}
	t.Logf("%d labelings compared; the original criterion held in %d cases", checked, held)
	if held < 100 {
		t.Errorf("the original criterion held only %d times: the test checks too little", held)
	}
}

// TestTheorem4_InvariantFindsASupersetOfOriginal checks Theorem 4 at the level of
// Algorithm 1: A*(Original) ⊆ A*(Invariant), with the same labels on A*(Original).
//   - Forests with a unique optimum, TRW-S (an exact relaxation there) and Exhaustive.
//   - General models (loops, forbidden states, higher order) with the exact criterion:
//     Exhaustive with the same lossy first solve for both variants. The theorem's
//     uniqueness assumption is checked on the Original run's final sub-problem (x* its
//     unique minimiser, hence strongly persistent for Invariant by Lemma 4, hence in
//     A*(Invariant) by Theorem 2); when it has ties the inclusion is only logged.
//   - Random small loopy pairwise models with TRW-S, which is not an exact LP solver
//     there: violations are logged, not failed (see the test log).
func TestTheorem4_InvariantFindsASupersetOfOriginal(t *testing.T) {
	fewerGCs(t)
	subset := func(res, sup *persistency.Result) (bool, string) {
		for _, u := range res.Set {
			if sup.Persistent[u] != res.Persistent[u] {
				return false, fmt.Sprintf("variable %d: original %d, invariant %d; A*(orig) = %v, A*(inv) = %v", u, res.Persistent[u], sup.Persistent[u], res.Set, sup.Set)
			}
		}
		return true, ""
	}
	run := func(t *testing.T, m *model.Model, v persistency.Variant, solver persistency.Relaxation) *persistency.Result {
		res, err := persistency.Run(testCtx, m, persistency.Options{Variant: v, Solver: solver})
		if err != nil {
			t.Errorf("%v: Run: %v", v, err)
		}
		return res
	}
	t.Run("Forests", func(t *testing.T) {
		rng := random.New(9)
		for c := range 150 {
			m := treeModel(rng, 3+rng.IntN(6), 3, c%2 == 0)
			if _, count := minimisers(m); count != 1 {
				continue
			}
			for _, solver := range []persistency.Relaxation{persistency.TRWS{}, persistency.Exhaustive{}} {
				o, i := run(t, m, persistency.Original, solver), run(t, m, persistency.Invariant, solver)
				if o == nil || i == nil {
					continue
				}
				if ok, msg := subset(o, i); !ok {
					t.Errorf("forest %d, %T: %s", c, solver, msg)
				}
			}
		}
	})
	t.Run("ExactCriterion", func(t *testing.T) {
		strict, tied, tiedViolations, proper := 0, 0, 0, 0
		for fi, fam := range soundnessFamilies {
			for c := range 80 {
				seed := uint64(90000 + 1000*fi + c)
				m := fam.gen(random.New(seed))
				so, si := newLossy(persistency.Exhaustive{}, seed), newLossy(persistency.Exhaustive{}, seed)
				so.Later, si.Later = 0, 0
				o, i := run(t, m, persistency.Original, so), run(t, m, persistency.Invariant, si)
				if o == nil || i == nil {
					continue
				}
				if !slices.Equal(*so.A0, *si.A0) {
					t.Fatalf("seed %d: the two runs started from different sets", seed)
				}
				if len(i.Set) > len(o.Set) {
					proper++
				}
				energy, _ := augmented(m, o.Set, o.Persistent, persistency.Original)
				ok, msg := subset(o, i)
				if len(o.Set) == 0 || isUniqueMinimiserOf(energy, restrict(labelCounts(m), o.Set), restrict(o.Persistent, o.Set)) {
					strict++
					if !ok {
						t.Errorf("seed %d (%s, %d variables): x*(orig) is the unique minimiser of its Ê, yet %s", seed, fam.name, m.NumVars(), msg)
					}
					continue
				}
				tied++
				if !ok {
					tiedViolations++
					t.Logf("seed %d (%s): ties in the original's final sub-problem (Theorem 4 assumes uniqueness): %s", seed, fam.name, msg)
				}
			}
		}
		t.Logf("%d runs where the assumptions hold (%d with a strictly larger A*(inv)), %d with ties (%d of them not a superset)", strict, proper, tied, tiedViolations)
		if strict < 300 || proper < 20 {
			t.Errorf("the test checks too little: %d runs under the assumptions, %d with a larger invariant set", strict, proper)
		}
	})
	t.Run("LoopyTRWS", func(t *testing.T) {
		var runs, violations, larger int
		for fi, fam := range soundnessFamilies {
			if !fam.pairwise || fam.name == "Forest" {
				continue
			}
			for c := range 60 {
				seed := uint64(95000 + 1000*fi + c)
				m := fam.gen(random.New(seed))
				o, i := run(t, m, persistency.Original, persistency.TRWS{}), run(t, m, persistency.Invariant, persistency.TRWS{})
				if o == nil || i == nil {
					continue
				}
				runs++
				if len(i.Set) > len(o.Set) {
					larger++
				}
				if ok, msg := subset(o, i); !ok {
					violations++
					t.Logf("seed %d (%s): TRW-S, not a superset: %s", seed, fam.name, msg)
				}
			}
		}
		t.Logf("TRW-S on loopy models: %d model pairs, A*(inv) larger in %d, not a superset in %d (logged, not failed: TRW-S is not an exact LP solver there)", runs, larger, violations)
	})
}

// isUniqueMinimiserOf reports whether y is the only minimiser of energy over the
// labelings with label counts k (finite minimum, relative margin 1e-9).
func isUniqueMinimiserOf(energy func([]int) float64, k []int, y []int) bool {
	ey := energy(y)
	if math.IsInf(ey, 1) {
		return false
	}
	tol := 1e-9 * math.Max(1, math.Abs(ey))
	unique := true
	forEachLabeling(k, func(x []int) {
		if unique && !slices.Equal(x, y) && energy(x) <= ey+tol {
			unique = false
		}
	})
	return unique
}
