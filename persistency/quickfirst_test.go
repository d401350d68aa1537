package persistency_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// TestQuickFirstEndsACreepingFirstSolveOnly: Options.QuickFirst ends
// Algorithm 1's first relaxed solve by the elimination's loose stall rule where
// the relaxation creeps far from its labeling (a 20×20 spin glass: the default
// rule waits 100 stalled iterations: fewer iterations in all, as many persistent
// variables), and lets one about to prove its labeling
// converge (Potts denoising grids, nearly tight): the same persistent labels
// there. Every result passes Verify.
func TestQuickFirstEndsACreepingFirstSolveOnly(t *testing.T) {
	run := func(m *model.Model, quick bool) *persistency.Result {
		t.Helper()
		res, err := persistency.Run(testCtx, m, persistency.Options{QuickFirst: quick})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := persistency.Verify(m, res); err != nil {
			t.Fatalf("quick %v: %v", quick, err)
		}
		return res
	}
	for seed := range uint64(3) {
		m := random.FrustratedGrid(random.New(seed), 20, 20)
		slow, quick := run(m, false), run(m, true)
		if quick.SolverIterations >= slow.SolverIterations || persistency.Count(quick.Persistent) < persistency.Count(slow.Persistent) {
			t.Errorf("spin glass %d: %d iterations and %d persistent with QuickFirst, %d and %d without: want fewer iterations, as many persistent",
				seed, quick.SolverIterations, persistency.Count(quick.Persistent), slow.SolverIterations, persistency.Count(slow.Persistent))
		}
	}
	for seed := range uint64(3) {
		m := random.PottsDenoising(random.New(seed), 48, 48, 6, 0.8, 4, 1.5)
		slow, quick := run(m, false), run(m, true)
		if persistency.Count(slow.Persistent) == 0 || !slices.Equal(quick.Persistent, slow.Persistent) {
			t.Errorf("Potts grid %d: %d persistent with QuickFirst, %d without: want the same labels", seed, persistency.Count(quick.Persistent), persistency.Count(slow.Persistent))
		}
	}
}

// TestPruneFirstProvesAtLeastAlgorithm1: the whole-model default on rasters
// and binary models — Algorithm 1 with QuickFirst, then label elimination on
// what it leaves — proves every label Algorithm 1 alone proves with its
// default rule, and Verify accepts it; on the tiny grids the persistent
// labels keep the optimum (enumeration).
func TestPruneFirstProvesAtLeastAlgorithm1(t *testing.T) {
	fewerGCs(t)
	families := []struct {
		name string
		gen  func(seed uint64) *model.Model
		tiny bool
	}{
		{"spin glass 16×16", func(s uint64) *model.Model { return random.FrustratedGrid(random.New(s), 16, 16) }, false},
		{"spin glass 3×4", func(s uint64) *model.Model { return random.FrustratedGrid(random.New(s+50), 3, 4) }, true},
		{"potts grid 10×10", func(s uint64) *model.Model { return random.PottsGrid(random.New(s), 10, 10, 4) }, false},
		{"binary denoising 24×24", func(s uint64) *model.Model { return random.PottsDenoising(random.New(s), 24, 24, 2, 0.9, 4, 1.2) }, false},
		{"denoising 16×16", func(s uint64) *model.Model { return random.PottsDenoising(random.New(s), 16, 16, 5, 0.8, 4, 1.3) }, false},
		{"parametric 3×3", func(s uint64) *model.Model { return random.ParametricGrid(random.New(s), 3, 3, 3) }, true},
	}
	more := 0
	for _, f := range families {
		for s := range uint64(40) {
			m := f.gen(s)
			what := fmt.Sprintf("%s %d", f.name, s)
			pbp, err := persistency.Run(testCtx, m, persistency.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := persistency.PruneFirst(testCtx, m, persistency.EliminateOptions{}, persistency.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := persistency.Verify(m, res); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got := res.Elimination.Persistent
			for v, l := range pbp.Persistent {
				if l >= 0 && got[v] != l {
					t.Errorf("%s: variable %d: Algorithm 1 proves label %d, PruneFirst %d", what, v, l, got[v])
				}
			}
			more += persistency.Count(got) - persistency.Count(pbp.Persistent)
			if f.tiny {
				_, minE := minEnergy(t, m)
				if ok, e := isPersistent(t, m, got, minE); !ok {
					t.Errorf("%s: min E with the persistent labels fixed is %v > %v", what, e, minE)
				}
			}
		}
	}
	t.Logf("PruneFirst proves %d variables more than Algorithm 1 alone", more)
}

// TestPruneFirstStartsTheEliminationFromAlgorithm1sSolve: where Algorithm 1
// proves nothing — without a pruning iteration (nothing consistent: spin
// glasses without fields, symmetric under flipping every spin) or after
// pruning iterations that went on in its solver (spin glasses with fields:
// Grids_26's case; a copy of the solve made before them) — the elimination
// after it starts from Algorithm 1's relaxed solve of the same model instead
// of solving it again: fewer iterations, the same labels eliminated as an
// elimination that solves for itself.
func TestPruneFirstStartsTheEliminationFromAlgorithm1sSolve(t *testing.T) {
	var reused, after int
	for seed := range uint64(36) {
		m := spinGlassWithoutFields(t, random.New(400+seed), 24, 24)
		if seed >= 12 {
			m = random.FrustratedGrid(random.New(400+seed), 8, 8)
		}
		res, err := persistency.PruneFirst(testCtx, m, persistency.EliminateOptions{}, persistency.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if persistency.Count(res.Persistent) > 0 {
			continue
		}
		if res.PruningIterations > 0 {
			after++
		} else {
			reused++
		}
		alone, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		el := res.Elimination
		if !slices.EqualFunc(el.Alive, alone.Alive, slices.Equal) || el.SolverIterations >= alone.SolverIterations {
			t.Errorf("seed %d: %d labels eliminated in %d iterations after Algorithm 1, %d in %d alone: want the same labels in fewer",
				seed, el.Eliminated, el.SolverIterations, alone.Eliminated, alone.SolverIterations)
		}
	}
	if reused == 0 || after == 0 {
		t.Fatalf("%d models without a pruning iteration, %d after some, that proved nothing: want both", reused, after)
	}
	t.Logf("the elimination started from Algorithm 1's solve on %d models without a pruning iteration, %d after some", reused, after)
}

// TestPruneFirstSolvesNothingAfterAlgorithm1ProvesAll: where Algorithm 1
// proves every variable, one labeling is left and the elimination after it
// runs no relaxed solve (a solve of one labeling finds it again); its result
// is still a checked elimination of every other label.
func TestPruneFirstSolvesNothingAfterAlgorithm1ProvesAll(t *testing.T) {
	all := 0
	for seed := range uint64(20) {
		m := random.PottsDenoising(random.New(700+seed), 20, 20, 2, 0.9, 4, 1.2)
		res, err := persistency.PruneFirst(testCtx, m, persistency.EliminateOptions{}, persistency.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := persistency.Verify(m, res); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if persistency.Count(res.Persistent) < m.NumVars() {
			continue
		}
		all++
		el := res.Elimination
		if el.SolverIterations != 0 || !slices.Equal(el.Persistent, res.Persistent) || el.Energy != m.Energy(res.Persistent) {
			t.Errorf("seed %d: Algorithm 1 proved every variable, then the elimination ran %d solver iterations (energy %v, persistent equal: %v)",
				seed, el.SolverIterations, el.Energy, slices.Equal(el.Persistent, res.Persistent))
		}
		// One round that moves nothing: the bound is the labeling's energy, and
		// nothing is left to eliminate (Algorithm 1's proof did) or to prove.
		if el.Rounds != 1 || el.LowerBound != el.Energy || el.Eliminated != 0 || el.Certificate != nil {
			t.Errorf("seed %d: %d rounds, bound %v of energy %v, %d labels eliminated, certificate %v",
				seed, el.Rounds, el.LowerBound, el.Energy, el.Eliminated, el.Certificate != nil)
		}
		for v, a := range el.Alive {
			if len(a) != 1 || a[0] != res.Persistent[v] {
				t.Fatalf("seed %d: variable %d keeps %v, proven %d", seed, v, a, res.Persistent[v])
			}
		}
	}
	if all == 0 {
		t.Fatal("Algorithm 1 proved every variable of no model: nothing was tested")
	}
	t.Logf("%d of 20 denoising models proven whole by Algorithm 1", all)
}

// spinGlassWithoutFields is a w×h grid of two-label variables with a random
// coupling c·[x ≠ y], c normal, on every edge and no unary term.
func spinGlassWithoutFields(t *testing.T, rng *rand.Rand, w, h int) *model.Model {
	t.Helper()
	b := model.NewBuilder(slices.Repeat([]int{2}, w*h))
	for y := range h {
		for x := range w {
			for _, u := range [][2]int{{x + 1, y}, {x, y + 1}} {
				if u[0] < w && u[1] < h {
					c := rng.NormFloat64()
					if err := b.AddTable([]int{y*w + x, u[1]*w + u[0]}, []float64{0, c, c, 0}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
