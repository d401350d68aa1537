package persistency

import (
	"math"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/enumerate"
	"github.com/partopt/partopt/model/random"
)

// TestRefineMinimisesOverTheAliveLabels: on random small models (dense pairwise
// with forbidden states and Potts terms, higher order up to 4) with random alive
// domains, refine — variable elimination where tables stay small, branch and
// bound on the rest — returns a labeling over the alive labels whose energy is
// the minimum over them (found by enumeration), or nil exactly when the starting
// labeling already is such a minimum. Tables are forced small on some models so
// that the branch and bound runs alone or after a partial elimination.
func TestRefineMinimisesOverTheAliveLabels(t *testing.T) {
	improved, searched, skipped := 0, 0, 0
	for seed := range uint64(400) {
		rng := random.New(9000 + seed)
		var m *model.Model
		if seed%2 == 0 {
			m = random.DensePairwise(rng, 2+rng.IntN(7), 4, 0.3+0.7*rng.Float64())
		} else {
			m = random.HigherOrder(rng, 2+rng.IntN(6), 3, 4, 2+rng.IntN(10))
		}
		n := m.NumVars()
		alive := make([][]int, n)
		y := make([]int, n)
		for v := range n {
			for l := range m.NumLabels(v) {
				if rng.IntN(3) > 0 {
					alive[v] = append(alive[v], l)
				}
			}
			if len(alive[v]) == 0 {
				alive[v] = []int{rng.IntN(m.NumLabels(v))}
			}
			y[v] = alive[v][rng.IntN(len(alive[v]))]
		}
		restricted, err := m.Restrict(alive)
		if err != nil {
			t.Fatal(err)
		}
		_, minE, err := enumerate.Minimize(restricted, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		entries := refineEntries
		if seed%3 == 0 {
			entries = 4 // variable elimination stops at once or early: the search decides
			searched++
		}
		// After a stage that eliminated nothing refine minimises only the
		// components small tables eliminate (idleEntries): exactly, or not at all.
		idle := seed%3 == 1
		x := refine(m, alive, y, nil, idle)
		if entries != refineEntries {
			x = refineWith(m, alive, y, nil, entries, refineWork)
		}
		if idle && !everyComponentEliminable(m, alive, idleEntries) {
			skipped++
			if x != nil && !improves(m.Energy(x), m.Energy(y)) {
				t.Errorf("seed %d: idle refine returned a labeling of energy %v, no better than y's %v", seed, m.Energy(x), m.Energy(y))
			}
			continue
		}
		if x == nil {
			if e := m.Energy(y); !(e <= minE+tolerance(minE)) && !(math.IsInf(e, 1) && math.IsInf(minE, 1)) {
				t.Errorf("seed %d: refine kept y of energy %v, the minimum over the alive labels is %v", seed, e, minE)
			}
			continue
		}
		improved++
		for v, l := range x {
			if !slices.Contains(alive[v], l) {
				t.Fatalf("seed %d: variable %d gets label %d, not alive (%v)", seed, v, l, alive[v])
			}
		}
		if e := m.Energy(x); math.Abs(e-minE) > tolerance(minE) {
			t.Errorf("seed %d: refine gives energy %v, the minimum over the alive labels is %v (y: %v)", seed, e, minE, m.Energy(y))
		}
	}
	t.Logf("%d of 400 labelings improved, %d with tiny tables, %d idle ones left to the next stage", improved, searched, skipped)
	if improved < 100 {
		t.Errorf("only %d of 400 random labelings improved: the test checks too little", improved)
	}
}

// everyComponentEliminable says whether each component of the variables with
// more than one alive label is eliminable within entries.
func everyComponentEliminable(m *model.Model, alive [][]int, entries int) bool {
	open := make([]bool, m.NumVars())
	for v, ls := range alive {
		open[v] = len(ls) > 1
	}
	seen := make([]bool, m.NumVars())
	for v := range open {
		if open[v] && !seen[v] && !eliminable(m, alive, component(m, open, seen, v), entries) {
			return false
		}
	}
	return true
}

// TestIdleRefineSkipsWhatOnlyASearchCouldMinimise: after a stage that
// eliminated nothing, refine leaves alone a component whose variable
// elimination needs more than idleEntries table entries — a 20×20 spin glass,
// treewidth 20 (Grids_26 spent 40 of its 78 ms there for a second stage that
// proved nothing), a 10×10 one (grid10x10: 7 of 16 ms) — and minimises a 5×5
// one exactly, as the full budget does.
func TestIdleRefineSkipsWhatOnlyASearchCouldMinimise(t *testing.T) {
	all := func(m *model.Model) [][]int {
		alive := make([][]int, m.NumVars())
		for v := range alive {
			alive[v] = []int{0, 1}
		}
		return alive
	}
	for _, side := range []int{20, 10} {
		big := random.FrustratedGrid(random.New(7), side, side)
		if everyComponentEliminable(big, all(big), idleEntries) {
			t.Fatalf("a %d×%d grid is eliminable within idleEntries", side, side)
		}
		y := make([]int, big.NumVars())
		if x := refine(big, all(big), y, nil, true); x != nil {
			t.Errorf("idle refine changed the labeling of a %d×%d spin glass (energy %v → %v)", side, side, big.Energy(y), big.Energy(x))
		}
	}
	for seed := range uint64(5) {
		small := random.FrustratedGrid(random.New(seed), 5, 5)
		if !everyComponentEliminable(small, all(small), idleEntries) {
			t.Fatal("a 5×5 grid is not eliminable within idleEntries")
		}
		y := make([]int, small.NumVars())
		idle, full := refine(small, all(small), y, nil, true), refine(small, all(small), y, nil, false)
		if idle == nil || full == nil || math.Abs(small.Energy(idle)-small.Energy(full)) > tolerance(small.Energy(full)) {
			t.Errorf("seed %d: idle refine %v, full %v: want the same minimum", seed, idle != nil, full != nil)
		}
	}
}

// TestEliminableIsVariableEliminationWithinEntries: eliminable (which stops at
// the smallest first scope on dense components before building any) says yes
// exactly when the greedy variable elimination, simulated here on sets, needs
// at most entries table entries — on random dense and sparse models, higher
// order included, with random alive labels and budgets.
func TestEliminableIsVariableEliminationWithinEntries(t *testing.T) {
	checked := [2]int{}
	for seed := range uint64(120) {
		rng := random.New(seed)
		var m *model.Model
		switch seed % 3 {
		case 0:
			m = random.DensePairwise(rng, 6+rng.IntN(20), 4, 0.1+0.8*rng.Float64())
		case 1:
			m = random.HigherOrder(rng, 8+rng.IntN(10), 3, 3, 10+rng.IntN(20))
		default:
			m = random.FrustratedGrid(rng, 2+rng.IntN(6), 2+rng.IntN(6))
		}
		alive := make([][]int, m.NumVars())
		for v := range alive {
			for l := range m.NumLabels(v) {
				if l == 0 || rng.IntN(3) > 0 {
					alive[v] = append(alive[v], l)
				}
			}
		}
		open := make([]bool, m.NumVars())
		for v, ls := range alive {
			open[v] = len(ls) > 1
		}
		seen := make([]bool, m.NumVars())
		for v := range open {
			if !open[v] || seen[v] {
				continue
			}
			comp := component(m, open, seen, v)
			need := eliminationEntries(m, alive, comp)
			for _, entries := range []int{need - 1, need, 1 << 6, 1 << 10, 1 << 14} {
				want := need <= entries
				if got := eliminable(m, alive, comp, entries); got != want {
					t.Fatalf("seed %d: a %d-variable component needs %d entries; eliminable within %d says %v", seed, len(comp), need, entries, got)
				}
				checked[b2i(want)]++
			}
		}
	}
	if checked[0] < 50 || checked[1] < 50 {
		t.Fatalf("%d refused and %d eliminable cases: the test checks too little", checked[0], checked[1])
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// eliminationEntries is the table entries the greedy variable elimination of
// comp needs in all (its factors' tables over comp, then each new one),
// eliminating next the variable of the smallest scope, the first such on ties,
// with scopes kept as sets.
func eliminationEntries(m *model.Model, alive [][]int, comp []int) int {
	in := map[int]bool{}
	for _, v := range comp {
		in[v] = true
	}
	scope := map[int]map[int]bool{}
	for _, v := range comp {
		scope[v] = map[int]bool{v: true}
	}
	size := func(s map[int]bool) int {
		n := 1
		for v := range s {
			n = min(n*len(alive[v]), 1<<40)
		}
		return n
	}
	total := 0
	for _, f := range touching(m, comp) {
		vars := map[int]bool{}
		for _, u := range m.FactorVars(f) {
			if in[int(u)] {
				vars[int(u)] = true
			}
		}
		for v := range vars {
			for u := range vars {
				scope[v][u] = true
			}
		}
		total += size(vars)
	}
	gone := map[int]bool{}
	for range comp {
		best := -1
		for _, v := range comp {
			if !gone[v] && (best < 0 || size(scope[v]) < size(scope[best])) {
				best = v
			}
		}
		total += size(scope[best])
		gone[best] = true
		for q := range scope[best] {
			if q == best {
				continue
			}
			for u := range scope[best] {
				scope[q][u] = true
			}
			delete(scope[q], best)
		}
	}
	return total
}
