package persistency_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// aliveMin is min E over the labelings that take alive labels only.
func aliveMin(m *model.Model, alive [][]int) float64 {
	best := math.Inf(1)
	k := make([]int, len(alive))
	for v, ls := range alive {
		k[v] = len(ls)
	}
	x := make([]int, len(alive))
	forEachLabeling(k, func(i []int) {
		for v, j := range i {
			x[v] = alive[v][j]
		}
		best = math.Min(best, m.Energy(x))
	})
	return best
}

// checkElimination checks an Elimination on m (min E = minE) as a user would: it is
// self-consistent, VerifyElimination accepts it, and the minimum over the alive
// labels is the global minimum (by enumeration). It returns the first violation,
// or "".
func checkElimination(m *model.Model, e *persistency.Elimination, minE float64) string {
	if chk, err := persistency.VerifyElimination(m, e); err != nil {
		return fmt.Sprintf("VerifyElimination: %v (%+v)", err, chk)
	}
	for v, ls := range e.Alive {
		if len(ls) == 0 || !slices.Contains(ls, e.Test[v]) {
			return fmt.Sprintf("variable %d: alive %v without the test label %d", v, ls, e.Test[v])
		}
		if e.Prior != nil {
			for _, l := range ls {
				if !slices.Contains(e.Prior[v], l) {
					return fmt.Sprintf("variable %d: label %d alive, but dead before", v, l)
				}
			}
		}
	}
	if got := aliveMin(m, e.Alive); !testutil.CloseTo(got, minE, energyRel) {
		return fmt.Sprintf("min E over the alive labels is %v, min E is %v", got, minE)
	}
	return ""
}

// eliminationCounts tally how much a solver eliminated over many models.
type eliminationCounts struct{ runs, none, some, chained, persistent, labels, eliminated int }

func (c *eliminationCounts) add(m *model.Model, e *persistency.Elimination) {
	c.runs++
	switch {
	case e.Eliminated == 0:
		c.none++
	default:
		c.some++
	}
	for v := range m.NumVars() {
		c.labels += m.NumLabels(v) - 1
		if e.Persistent[v] >= 0 {
			c.persistent++
		}
	}
	c.eliminated += e.Eliminated
	if len(e.Earlier) > 0 {
		c.chained++
	}
}

func (c eliminationCounts) String() string {
	return fmt.Sprintf("%d runs: %d eliminated nothing, %d something, %d in more than one stage; %d persistent variables, %d of %d labels eliminated",
		c.runs, c.none, c.some, c.chained, c.persistent, c.eliminated, c.labels)
}

// TestIRIEliminationIsSound runs the IRI search (Eliminate) on the random small
// models of TestAlgorithm1IsSound — spin glasses, frustrated graphs, cores with
// peripheries, dense tables with forbidden states and one-label variables, Potts
// grids, forests, higher order — with TRW-S (pairwise), SRMP (all) and Exhaustive
// (all), as a whole, as a window (Candidates) and after an earlier elimination
// (Domains). Every run must succeed and pass VerifyElimination, and the minimum
// energy over the alive labels must be the global minimum: no violation allowed.
// The solvers must eliminate labels on a good share of the models.
func TestIRIEliminationIsSound(t *testing.T) {
	fewerGCs(t)
	scale := soundnessScale(t)
	perFamily := map[string]int{
		"IsingSpinGlassGrid": 120, "FrustratedRandomGraph": 120, "CoreAndPeriphery": 200,
		"DensePairwise": 160, "PottsGrid": 80, "Forest": 80, "HigherOrder": 200, "ParametricGrid": 160,
	}
	solvers := []solverCase{
		{"TRWS", func(uint64) persistency.Relaxation { return persistency.TRWS{} }, true},
		{"SRMP", func(uint64) persistency.Relaxation { return persistency.SRMP{} }, false},
		{"Exhaustive", func(uint64) persistency.Relaxation { return persistency.Exhaustive{} }, false},
	}
	total := map[string]*eliminationCounts{}
	models := 0
	for fi, fam := range soundnessFamilies {
		t.Run(fam.name, func(t *testing.T) {
			t.Cleanup(func() { persistency.ForceStructured(false) })
			for c := range perFamily[fam.name] * scale {
				seed := uint64(70000*(fi+1) + c)
				rng := random.New(seed)
				m := fam.gen(rng)
				models++
				// Half the parametric grids with Difference verification terms
				// (small models get tables by the cost rule).
				persistency.ForceStructured(fam.name == "ParametricGrid" && c%2 == 0)
				_, minE := minEnergy(t, m)
				n := m.NumVars()
				window := make([]bool, n)
				for v := range window {
					window[v] = rng.IntN(3) > 0
				}
				for _, s := range solvers {
					if s.pairwise && !fam.pairwise {
						continue
					}
					whole, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{Solver: s.make(seed)})
					if err != nil {
						t.Fatalf("seed %d %s: Eliminate failed: %v", seed, s.name, err)
					}
					key := s.name
					if total[key] == nil {
						total[key] = &eliminationCounts{}
					}
					total[key].add(m, whole)
					if msg := checkElimination(m, whole, minE); msg != "" {
						t.Errorf("seed %d %s (%s, %d variables): %s", seed, key, fam.name, n, msg)
					}
					win, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{Solver: s.make(seed), Candidates: window})
					if err != nil {
						t.Fatalf("seed %d %s window: %v", seed, s.name, err)
					}
					for v, ls := range win.Alive {
						if !window[v] && len(ls) != m.NumLabels(v) {
							t.Errorf("seed %d %s window: variable %d outside the window lost labels: %v", seed, s.name, v, ls)
						}
					}
					if msg := checkElimination(m, win, minE); msg != "" {
						t.Errorf("seed %d %s window (%s): %s", seed, key, fam.name, msg)
					}
					// An elimination after the window's, on what it left: composition.
					again, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{Solver: s.make(seed), Domains: win.Alive})
					if err != nil {
						t.Fatalf("seed %d %s after the window: %v", seed, s.name, err)
					}
					if msg := checkElimination(m, again, minE); msg != "" {
						t.Errorf("seed %d %s after the window (%s): %s", seed, key, fam.name, msg)
					}
				}
			}
		})
	}
	for _, key := range slices.Sorted(maps.Keys(total)) {
		c := total[key]
		t.Logf("%s: %v", key, c)
		if c.some < c.runs/4 {
			t.Errorf("%s eliminated labels on only %d of %d models: the test checks too little", key, c.some, c.runs)
		}
		if key != "Exhaustive" && c.chained == 0 {
			t.Errorf("%s: no elimination ran a second stage: the chains go unchecked", key)
		}
	}
	t.Logf("%d models", models)
}

// TestIRIEarlyStoppedSolverStaysSound: TRW-S stopped after 1 to 3 iterations
// decides nothing well, and the search must still be sound (it eliminates less).
func TestIRIEarlyStoppedSolverStaysSound(t *testing.T) {
	for fi, fam := range soundnessFamilies {
		if !fam.pairwise {
			continue
		}
		for c := range 40 {
			seed := uint64(90000*(fi+1) + c)
			m := fam.gen(random.New(seed))
			_, minE := minEnergy(t, m)
			for it := 1; it <= 3; it++ {
				weak := persistency.TRWS{Options: trws.Options{MaxIterations: it, GapTolerance: 0}}
				e, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{Solver: weak})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if msg := checkElimination(m, e, minE); msg != "" {
					t.Errorf("seed %d %s, %d iterations: %s", seed, fam.name, it, msg)
				}
			}
		}
	}
}

// TestComparisonTheorem_IRIContainsAlgorithm1: where the relaxation is solved
// exactly (trees, TRW-S), IRI eliminates every label Algorithm 1 does: each
// variable Algorithm 1 proves persistent is left by IRI with that label alone.
// On the loopy families (TRW-S not exact) containment is logged and must hold on
// nearly all models.
func TestComparisonTheorem_IRIContainsAlgorithm1(t *testing.T) {
	for fi, fam := range soundnessFamilies {
		if !fam.pairwise {
			continue
		}
		contained, runs, alg1, iri := 0, 0, 0, 0
		for c := range 150 {
			seed := uint64(110000*(fi+1) + c)
			m := fam.gen(random.New(seed))
			a, err := persistency.Run(testCtx, m, persistency.Options{Solver: persistency.TRWS{}})
			if err != nil {
				t.Fatal(err)
			}
			e, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{Solver: persistency.TRWS{}})
			if err != nil {
				t.Fatal(err)
			}
			runs++
			ok := true
			for v, l := range a.Persistent {
				if l >= 0 {
					alg1++
					ok = ok && e.Persistent[v] == l
				}
				if e.Persistent[v] >= 0 {
					iri++
				}
			}
			if ok {
				contained++
			} else if fam.name == "Forest" {
				t.Errorf("seed %d (tree): Algorithm 1 proves %v, IRI leaves %v", seed, a.Persistent, e.Alive)
			}
		}
		t.Logf("%s: IRI ⊇ Algorithm 1 on %d of %d models; persistent variables: Algorithm 1 %d, IRI %d", fam.name, contained, runs, alg1, iri)
		if contained < runs*9/10 || iri < alg1 {
			t.Errorf("%s: IRI contains Algorithm 1's result on only %d of %d models (%d against %d persistent)", fam.name, contained, runs, iri, alg1)
		}
	}
}

type chained struct {
	m *model.Model
	e *persistency.Elimination
}

// chainedElimination is an elimination in two stages, the first eliminating
// labels: on a frustrated grid, the relaxation's labeling is improved on what the
// first stage left, and the second stage runs with the better one.
func chainedElimination(t testing.TB) chained {
	t.Helper()
	for seed := uint64(1); seed < 500; seed++ {
		m := random.FrustratedGrid(random.New(seed), 4, 4)
		e, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Earlier) > 0 && e.Earlier[0].Certificate != nil {
			return chained{m, e}
		}
	}
	t.Fatal("no frustrated grid eliminates labels in two stages")
	return chained{}
}

// TestEliminationStagesAreEachProven: an elimination in stages is the composition
// of improving maps, each proven on the domains the previous one left. Verify
// accepts the chain and refuses it when a stage is dropped, its domains edited,
// its certificate removed or its test labeling replaced; the test labeling of the later stage is better, and
// the optimum survives (enumeration).
func TestEliminationStagesAreEachProven(t *testing.T) {
	c := chainedElimination(t)
	_, minE := minEnergy(t, c.m)
	if msg := checkElimination(c.m, c.e, minE); msg != "" {
		t.Fatal(msg)
	}
	first := c.e.Earlier[0]
	if !(c.m.Energy(c.e.Test) < c.m.Energy(first.Test)) {
		t.Errorf("the second stage's test labeling (E %v) is not better than the first's (E %v)", c.m.Energy(c.e.Test), c.m.Energy(first.Test))
	}
	edits := map[string]func(e *persistency.Elimination){
		"first stage dropped": func(e *persistency.Elimination) { e.Earlier = nil },
		"first certificate removed": func(e *persistency.Elimination) {
			e.Earlier = []persistency.Stage{{Test: first.Test, Alive: first.Alive}}
		},
		"first test labeling replaced": func(e *persistency.Elimination) {
			e.Earlier = []persistency.Stage{{Test: e.Test, Alive: first.Alive, Certificate: first.Certificate}}
		},
		"first stage claims more": func(e *persistency.Elimination) {
			alive := slices.Clone(first.Alive)
			for v, ls := range alive {
				if len(ls) > 1 && !slices.Contains(c.e.Alive[v], ls[0]) {
					continue
				}
				if len(ls) > 1 {
					alive[v] = ls[1:]
					if !slices.Contains(alive[v], first.Test[v]) {
						alive[v] = ls[:len(ls)-1]
					}
					break
				}
			}
			e.Earlier = []persistency.Stage{{Test: first.Test, Alive: alive, Certificate: first.Certificate}}
		},
	}
	for name, edit := range edits {
		e := *c.e
		edit(&e)
		if _, err := persistency.VerifyElimination(c.m, &e); err == nil {
			t.Errorf("%s: VerifyElimination accepted it", name)
		}
	}
}
