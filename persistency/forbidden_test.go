package persistency_test

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// Forbidden states at the boundary. With the original boundary potential, θ̂_e(y_I) =
// max_{x_O} θ_e(y_I, x_O) is +Inf as soon as one outside labeling is forbidden together
// with y_I: every labeling of Ê_{A,y} that keeps y_I then costs +Inf, so y can never
// satisfy the criterion with a finite value — the analogue, for Original, of the −Inf
// entry that makes a node Hopeless with Invariant. When the inside variables cannot
// leave y_I (one label each), all of Ê_{A,y} is +Inf. Run must then prune those
// variables, like Hopeless ones, and neither fail nor give up the rest of A.

// forbiddingOneLabelNeighbour is the model of the tests below: variable 0 has one
// label, which is forbidden together with label 2 of variable 1; variables 1, 2, 3
// form a triangle with repulsive couplings [a = b] on labels 0 and 1 (label 2 of
// variable 1 is free of them), so the LP relaxation is fractional on the triangle,
// while variable 0 is always consistent.
func forbiddingOneLabelNeighbour(t *testing.T) *model.Model {
	inf := math.Inf(1)
	b := model.NewBuilder([]int{1, 3, 2, 2})
	must(t, b.AddTable([]int{0, 1}, []float64{0, 0, inf}))
	must(t, b.AddTable([]int{1, 2}, []float64{1, 0, 0, 1, 0, 0}))
	must(t, b.AddTable([]int{1, 3}, []float64{1, 0, 0, 1, 0, 0}))
	must(t, b.AddTable([]int{2, 3}, []float64{1, 0, 0, 1}))
	m, err := b.Build()
	must(t, err)
	return m
}

// TestAlgorithm1_OriginalBoundaryForbiddingTheTestLabelIsNotAnError: TRW-S labels
// only variable 0 (A⁰ = {0}); Ê_{{0},y} with the original boundary is the constant
// max(0, 0, +Inf) = +Inf, every labeling infeasible; TRW-S still reports it consistent,
// the certificate rightly fails (energy +Inf) — and Run returns that as an error
// instead of pruning variable 0. Random models with 1-label variables next to
// forbidden states hit this (TestAlgorithm1IsSound, TestProposition2_...).
func TestAlgorithm1_OriginalBoundaryForbiddingTheTestLabelIsNotAnError(t *testing.T) {
	m := forbiddingOneLabelNeighbour(t)
	_, minE := minEnergy(t, m)
	for _, v := range variants {
		res, err := persistency.Run(testCtx, m, persistency.Options{Variant: v})
		if err != nil {
			t.Errorf("%v: Run: %v", v, err)
			continue
		}
		if msg := checkSound(t, m, res, minE); msg != "" {
			t.Errorf("%v: %s", v, msg)
		}
	}
}

// forgetFirst is Exhaustive whose first solve forgets the labels of the variables in
// Forget: an integrally correct solver (Proposition 2) that makes A⁰ a chosen set.
type forgetFirst struct {
	persistency.Exhaustive
	Forget []int
	calls  *int
}

func (f forgetFirst) Solve(c context.Context, p *model.Model, from *persistency.Warm) (*persistency.Outcome, error) {
	out, err := f.Exhaustive.Solve(c, p, from)
	if err != nil || *f.calls > 0 {
		return out, err
	}
	*f.calls++
	weak := *out
	weak.Consistent = slices.Clone(out.Consistent)
	for _, v := range f.Forget {
		weak.Consistent[v] = -1
	}
	return &weak, nil
}

// TestTheorem2_OriginalBoundaryForbiddingTheTestLabelDropsOnlyItsNodes: variable 1
// (two labels, a strong preference for label 0) is strongly persistent on its own —
// y_1 = 0 is the unique minimiser of Ê_{{1},y} — and lies in A⁰ = {0, 1}. But variable 0
// (one label) shares a factor with variable 2, outside A⁰, that forbids its only label
// with x_2 = 1: with the original boundary, Ê_{A⁰,y} is +Inf everywhere, Exhaustive
// labels nothing, and Run ends with A* = ∅. Theorem 2 wants {1} ⊆ A*: only variable 0
// should go (its Ê can never be finite, as with a Hopeless node).
func TestTheorem2_OriginalBoundaryForbiddingTheTestLabelDropsOnlyItsNodes(t *testing.T) {
	inf := math.Inf(1)
	b := model.NewBuilder([]int{1, 2, 2})
	must(t, b.AddTable([]int{0, 2}, []float64{0, inf}))
	must(t, b.AddTable([]int{1}, []float64{0, 5}))
	must(t, b.AddTable([]int{1, 2}, []float64{0, 1, 1, 0}))
	m, err := b.Build()
	must(t, err)

	y := []int{0, 0, 0}
	energy, hopeless := augmented(m, []int{1}, y, persistency.Original)
	if hopeless || !isUniqueMinimiserOf(energy, []int{2}, []int{0}) {
		t.Fatal("the test model is wrong: y_1 = 0 should be strongly persistent on {1}")
	}
	res, err := persistency.Run(testCtx, m, persistency.Options{Variant: persistency.Original,
		Solver: forgetFirst{Forget: []int{2}, calls: new(int)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Persistent[1] != 0 {
		t.Errorf("A* = %v, persistent labels %v: the strongly persistent variable 1 was pruned together with variable 0", res.Set, res.Persistent)
	}
}

// TestTheorem2_HigherOrderInvariantHopelessDropIsExact documents a known limitation
// (run it with PARTOPT_LIMITATIONS=1): with the invariant boundary, a factor (a, b, o)
// with a, b inside A and o outside whose potential has a −Inf entry makes Run drop
// both a and b (Subproblem.Hopeless), though {a} alone may be strongly persistent:
// here θ(a, b, o) = +Inf when b = 0 and o = 1 (whatever a), else 0, and a unary
// strongly prefers a = 0. Ê_{{a,b},0} has θ̂(x_a, 1) = −Inf, but Ê_{{a},0} is finite with
// the unique minimiser 0. Sound either way; the paper proves Theorem 2 for pairwise
// models only, where the drop is exact.
func TestTheorem2_HigherOrderInvariantHopelessDropIsExact(t *testing.T) {
	if os.Getenv("PARTOPT_LIMITATIONS") == "" {
		t.Skip("known limitation of the higher-order invariant boundary; set PARTOPT_LIMITATIONS=1 to run")
	}
	inf := math.Inf(1)
	b := model.NewBuilder([]int{2, 2, 2}) // a, b, o
	must(t, b.AddTable([]int{0, 1, 2}, []float64{0, inf, 0, 0, 0, inf, 0, 0}))
	must(t, b.AddTable([]int{0}, []float64{0, 5}))
	must(t, b.AddTable([]int{1}, []float64{0, 1}))
	m, err := b.Build()
	must(t, err)
	energy, hopeless := augmented(m, []int{0}, []int{0, 0, 0}, persistency.Invariant)
	if hopeless || !isUniqueMinimiserOf(energy, []int{2}, []int{0}) {
		t.Fatal("the test model is wrong: a = 0 should be strongly persistent on {a}")
	}
	res, err := persistency.Run(testCtx, m, persistency.Options{Variant: persistency.Invariant,
		Solver: forgetFirst{Forget: []int{2}, calls: new(int)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Persistent[0] != 0 {
		t.Errorf("A* = %v: the strongly persistent variable a was dropped with b", res.Set)
	}
}
