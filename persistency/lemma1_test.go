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

// randomFunction returns a factor function of order 2..4 with label counts 1..3 per
// argument (rectangular shapes): explicit tables (values in [−1, 1) or small integers,
// which tie, some +Inf), Potts, truncated linear and truncated quadratic functions.
func randomFunction(rng *rand.Rand) model.Function {
	order := 2 + rng.IntN(3)
	shape := make([]int, order)
	size := 1
	for d := range shape {
		shape[d] = 1 + rng.IntN(3)
		size *= shape[d]
	}
	if order == 2 && rng.IntN(3) == 0 {
		kinds := [...]model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}
		f := model.Function{Kind: kinds[rng.IntN(3)], Shape: shape, W: 2 * rng.Float64(), T: 0.5 + 3*rng.Float64()}
		if rng.IntN(6) == 0 {
			f.W = 0
		}
		if rng.IntN(4) == 0 {
			f.T = math.Inf(1)
		}
		return f
	}
	t := make([]float64, size)
	integers := rng.IntN(3) == 0
	pInf := []float64{0, 0.1, 0.3}[rng.IntN(3)]
	for i := range t {
		t[i] = 2*rng.Float64() - 1
		if integers {
			t[i] = float64(rng.IntN(3))
		}
		if rng.Float64() < pInf {
			t[i] = math.Inf(1)
		}
	}
	return model.Function{Kind: model.Explicit, Shape: shape, Table: t}
}

// randomSplit returns a random non-empty proper subset of 0..order−1, ascending: the
// argument positions inside A.
func randomSplit(rng *rand.Rand, order int) []int {
	for {
		var in []int
		for p := range order {
			if rng.IntN(2) == 0 {
				in = append(in, p)
			}
		}
		if len(in) > 0 && len(in) < order {
			return in
		}
	}
}

// insideIndex is the index of x's inside arguments in a boundary table (last fastest).
func insideIndex(fn *model.Function, in []int, x []int) int {
	i := 0
	for _, p := range in {
		i = i*fn.Shape[p] + x[p]
	}
	return i
}

// sameInside reports whether x and z agree on the positions in.
func sameInside(in []int, x, z []int) bool {
	for _, p := range in {
		if x[p] != z[p] {
			return false
		}
	}
	return true
}

// withInside returns x with its inside arguments replaced by y (one per position in).
func withInside(in []int, x, y []int) []int {
	z := slices.Clone(x)
	for j, p := range in {
		z[p] = y[j]
	}
	return z
}

// definitionBoundary is the boundary potential straight from the definitions of
// ../shared/PAPER.md, by enumeration, independently of BoundaryPotential.
func definitionBoundary(fn *model.Function, in []int, y []int, v persistency.Variant) []float64 {
	inShape := make([]int, len(in))
	for j, p := range in {
		inShape[j] = fn.Shape[p]
	}
	var tab []float64
	forEachLabeling(inShape, func(xi []int) {
		isY := slices.Equal(xi, y)
		best := math.Inf(1)
		if v == persistency.Original && isY {
			best = math.Inf(-1)
		}
		forEachLabeling(fn.Shape, func(x []int) {
			if !sameInside(in, x, withInside(in, x, xi)) {
				return // only the labelings of e with x_I = xi
			}
			val := fn.Value(x)
			switch {
			case v == persistency.Original && isY:
				best = math.Max(best, val)
			case v == persistency.Original:
				best = math.Min(best, val)
			case isY:
				best = 0
			default:
				atY := fn.Value(withInside(in, x, y))
				d := val - atY
				switch {
				case math.IsInf(val, 1):
					d = math.Inf(1)
				case math.IsInf(atY, 1):
					d = math.Inf(-1)
				}
				best = math.Min(best, d)
			}
		})
		tab = append(tab, best)
	})
	return tab
}

// sameValue compares entries that may be infinite.
func sameValue(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(a))
}

// TestLemma1_BoundaryPotentialBoundsTheFactorChange checks Lemma 1 (and its
// higher-order form, §8) for both boundary variants: for a boundary factor e with
// inside positions I, a test labeling y_I and any labeling x' of e,
//
//	θ_e(y_I, x'_O) + θ̂(x'_I) − θ̂(y_I) ≤ θ_e(x'_I, x'_O),
//
// the inequality that makes the all-to-y map improving in Theorem 1's proof. With
// forbidden states it reads in extended arithmetic: +Inf ≤ +Inf holds, and a −Inf term
// on the left (θ̂(x'_I) = −Inf, or θ̂(y_I) = +Inf) makes it hold trivially. It also
// checks every table against the definition, enumerated independently.
func TestLemma1_BoundaryPotentialBoundsTheFactorChange(t *testing.T) {
	rng := random.New(1)
	checks, trivial := 0, 0
	for c := range 3000 {
		fn := randomFunction(rng)
		in := randomSplit(rng, fn.Order())
		inShape := make([]int, len(in))
		for j, p := range in {
			inShape[j] = fn.Shape[p]
		}
		forEachLabeling(inShape, func(yv []int) {
			y := slices.Clone(yv)
			for _, v := range variants {
				tab := persistency.BoundaryPotential(&fn, in, y, v)
				want := definitionBoundary(&fn, in, y, v)
				if len(tab) != len(want) {
					t.Fatalf("case %d %v: %v function %v, inside %v, y %v: table has %d entries, want %d", c, v, fn.Kind, fn.Shape, in, y, len(tab), len(want))
				}
				for i := range tab {
					if !sameValue(tab[i], want[i]) {
						t.Fatalf("case %d %v: %v function %v table %v, inside %v, y %v: entry %d is %v, the definition gives %v",
							c, v, fn.Kind, fn.Shape, fn.Table, in, y, i, tab[i], want[i])
					}
				}
				atY := tab[insideIndex(&fn, in, withInside(in, make([]int, fn.Order()), y))]
				forEachLabeling(fn.Shape, func(x []int) {
					checks++
					hatX := tab[insideIndex(&fn, in, x)]
					if math.IsInf(hatX, -1) || math.IsInf(atY, 1) {
						trivial++
						return
					}
					lhs := fn.Value(withInside(in, x, y)) + hatX - atY
					rhs := fn.Value(x)
					if math.IsNaN(lhs) || lhs > rhs+1e-12*math.Max(1, math.Abs(rhs)) && !(math.IsInf(lhs, 1) && math.IsInf(rhs, 1)) {
						t.Errorf("case %d %v: %v function %v table %v, inside %v, y %v, x' %v: θ(y_I,x'_O) + θ̂(x'_I) − θ̂(y_I) = %v > θ(x') = %v",
							c, v, fn.Kind, fn.Shape, fn.Table, in, y, x, lhs, rhs)
					}
				})
			}
		})
	}
	t.Logf("%d inequalities checked (%d trivial by a −Inf term)", checks, trivial)
	if trivial > checks/2 {
		t.Errorf("%d of %d checks were trivial", trivial, checks)
	}
}

// TestLemma1_PottsClosedFormEqualsEnumeration: the O(K) Potts boundary potential
// equals the generic one on the same function written as an explicit table, for
// square and rectangular shapes, either argument inside, every test label and weight 0.
func TestLemma1_PottsClosedFormEqualsEnumeration(t *testing.T) {
	rng := random.New(2)
	for c := range 400 {
		ka, kb := 1+rng.IntN(5), 1+rng.IntN(5)
		w := 3 * rng.Float64()
		if c%10 == 0 {
			w = 0
		}
		potts := model.Function{Kind: model.Potts, Shape: []int{ka, kb}, W: w}
		table := make([]float64, ka*kb)
		for a := range ka {
			for b := range kb {
				table[a*kb+b] = potts.Pairwise(a, b)
			}
		}
		explicit := model.Function{Kind: model.Explicit, Shape: []int{ka, kb}, Table: table}
		for pos := range 2 {
			for y := range potts.Shape[pos] {
				for _, v := range variants {
					got := persistency.BoundaryPotential(&potts, []int{pos}, []int{y}, v)
					want := persistency.BoundaryPotential(&explicit, []int{pos}, []int{y}, v)
					if !slices.EqualFunc(got, want, sameValue) {
						t.Errorf("Potts %dx%d w=%v, inside position %d, y=%d, %v: closed form %v, enumeration %v", ka, kb, w, pos, y, v, got, want)
					}
				}
			}
		}
	}
}

// TestSection6_InvariantIsNeverWeakerThanOriginal: the reparametrisation-invariant
// boundary potential dominates the original one relative to the test labeling (§6,
// eq. best-repa-relation): for every x_I ≠ y_I,
//
//	θ̂_inv(x_I) ≥ θ̂_orig(x_I) − θ̂_orig(y_I)   (θ̂_inv(y_I) = 0),
//
// for factors of any order (trivial when θ̂_orig(y_I) = +Inf). For Potts terms the two
// coincide up to that shift (the remark after Theorem 4).
func TestSection6_InvariantIsNeverWeakerThanOriginal(t *testing.T) {
	rng := random.New(3)
	for c := range 3000 {
		fn := randomFunction(rng)
		in := randomSplit(rng, fn.Order())
		inShape := make([]int, len(in))
		for j, p := range in {
			inShape[j] = fn.Shape[p]
		}
		forEachLabeling(inShape, func(yv []int) {
			y := slices.Clone(yv)
			inv := persistency.BoundaryPotential(&fn, in, y, persistency.Invariant)
			orig := persistency.BoundaryPotential(&fn, in, y, persistency.Original)
			yi := 0
			for j, p := range in {
				yi = yi*fn.Shape[p] + y[j]
			}
			if inv[yi] != 0 {
				t.Fatalf("case %d: invariant potential at y is %v, want 0", c, inv[yi])
			}
			if math.IsInf(orig[yi], 1) {
				return
			}
			for i := range inv {
				if i == yi {
					continue
				}
				want := orig[i] - orig[yi]
				if inv[i] < want-1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("case %d: %v function %v table %v, inside %v, y %v: invariant entry %d = %v < original %v − %v",
						c, fn.Kind, fn.Shape, fn.Table, in, y, i, inv[i], orig[i], orig[yi])
				}
				if fn.Kind == model.Potts && !sameValue(inv[i], want) {
					t.Errorf("case %d: Potts %v w=%v, inside %v, y %v: invariant entry %d = %v, original shifted %v",
						c, fn.Shape, fn.W, in, y, i, inv[i], want)
				}
			}
		})
	}
}

func ExampleBoundaryPotential() {
	// A Potts term 1.5·[a≠b] on two 3-label variables; the first lies inside A with
	// test label 0.
	potts := model.Function{Kind: model.Potts, Shape: []int{3, 3}, W: 1.5}
	fmt.Println(persistency.BoundaryPotential(&potts, []int{0}, []int{0}, persistency.Original))
	fmt.Println(persistency.BoundaryPotential(&potts, []int{0}, []int{0}, persistency.Invariant))
	// Output:
	// [1.5 0 0]
	// [0 -1.5 -1.5]
}
