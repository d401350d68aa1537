package persistency

import (
	"context"
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
	improved, searched := 0, 0
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
		x := refineWith(m, alive, y, nil, entries)
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
	t.Logf("%d of 400 labelings improved, %d with tiny tables", improved, searched)
	if improved < 100 {
		t.Errorf("only %d of 400 random labelings improved: the test checks too little", improved)
	}
}

// TestAStageThatEliminatedNothingEndsTheChain: where the search eliminates
// nothing (frustrated spin glasses) Eliminate stops after that one stage, its
// test labeling the search's own, even where refine would improve it — a
// second stage almost never eliminates more there (see eliminate).
func TestAStageThatEliminatedNothingEndsTheChain(t *testing.T) {
	ctx := context.Background()
	nothing, improvable := 0, 0
	for seed := range uint64(80) {
		m := random.FrustratedGrid(random.New(300+seed), 4+int(seed%4), 5)
		res, err := Eliminate(ctx, m, EliminateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Eliminated > 0 {
			continue
		}
		nothing++
		if len(res.Earlier) != 0 || res.Rounds == 0 {
			t.Fatalf("seed %d: nothing eliminated, yet %d earlier stages (%d rounds)", seed, len(res.Earlier), res.Rounds)
		}
		if refine(m, res.Alive, res.Test, nil) != nil {
			improvable++
		}
	}
	t.Logf("%d of 80 grids eliminate nothing, refine would improve the labeling of %d", nothing, improvable)
	if nothing < 15 || improvable == 0 {
		t.Errorf("%d grids eliminate nothing, %d of them improvable: the test checks too little", nothing, improvable)
	}
}
