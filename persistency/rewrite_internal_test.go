package persistency

import (
	"context"
	"math"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/trws"
)

// TestTakenOverSolverHoldsTheVerificationProblem: after takeOver, the relaxed
// solve's solver — f on every factor, the shifts f_F(y_F) in its offset — has
// the energies of the verification problem g of p mapping everything to y,
// and after each later round's rewrite (random labels made immovable, the
// factors around them rewritten, their shifts taken out of the offset) those
// of that round's g, on Potts, truncated and dense explicit models.
func TestTakenOverSolverHoldsTheVerificationProblem(t *testing.T) {
	ctx := context.Background()
	gens := []func(seed uint64) *model.Model{
		func(s uint64) *model.Model { return random.PottsGrid(random.New(s), 5, 4, 4) },
		func(s uint64) *model.Model { return random.ParametricGrid(random.New(s+50), 5, 4, 5) },
		func(s uint64) *model.Model { return random.DensePairwise(random.New(s+100), 9, 4, 0.5) },
	}
	rounds := 0
	for i, gen := range gens {
		for seed := range uint64(12) {
			m := gen(seed)
			prev, err := TRWS{}.Solve(ctx, m, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, err := newDomains(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			y := prev.Labeling
			if math.IsInf(m.Energy(y), 1) {
				continue
			}
			if err := d.setTest(y, nil); err != nil {
				t.Fatal(err)
			}
			tables := newRewriter(m, d, newTableCache(m))
			tables.offer(d)
			tables.takeOver(prev, y)
			s := prev.state.(*trws.Solver)
			check := func(what string) {
				t.Helper()
				g, err := build(m, d, solving)
				if err != nil {
					t.Fatal(err)
				}
				held, err := s.Model()
				if err != nil {
					t.Fatal(err)
				}
				rng := random.New(seed + 7)
				for range 30 {
					x := random.Labeling(rng, g)
					a, b := held.Energy(x), g.Energy(x)
					if !(math.IsInf(a, 1) && math.IsInf(b, 1)) && math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(b)) {
						t.Fatalf("family %d seed %d, %s: the solver's energy %v, g's %v", i, seed, what, a, b)
					}
				}
			}
			check("taken over")
			rng := random.New(seed + 11)
			for round := 1; round <= 3; round++ {
				for v := range d.fixed {
					for c := range d.fixed[v] {
						if rng.IntN(6) == 0 {
							d.fixed[v][c] = true
						}
					}
				}
				closeForbidden(m, d)
				ok, err := tables.rewrite(prev, TRWS{})
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					t.Fatalf("family %d seed %d: round %d not rewritten in place", i, seed, round)
				}
				check("rewritten")
				rounds++
			}
		}
	}
	if rounds < 60 {
		t.Fatalf("%d rounds checked", rounds)
	}
}
