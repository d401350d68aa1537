package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/partopt/partopt/model"
)

// bruteMinPlus is min_i h[i] + θ(i, j) by every pair (θ's first argument i
// unless fromSecond).
func bruteMinPlus(f *model.Function, h []float64, j int, fromSecond bool) float64 {
	best := math.Inf(1)
	for i, hi := range h {
		a, b := i, j
		if fromSecond {
			a, b = j, i
		}
		best = min(best, hi+f.Pairwise(a, b))
	}
	return best
}

// randomFunction draws an order-2 function of every kind MinPlus serves, with
// unequal shapes, truncations below one label, none (+Inf) and zero weights.
func randomFunction(r *rand.Rand) *model.Function {
	ka, kb := 1+r.IntN(9), 1+r.IntN(9)
	w := []float64{0, 0.3, 1, 7.25, r.Float64() * 100}[r.IntN(5)]
	T := []float64{0.5, 1, 2.5, 3, math.Inf(1), float64(r.IntN(10))}[r.IntN(6)]
	if T == 0 {
		T = 4
	}
	f := &model.Function{Shape: []int{ka, kb}, W: w, T: T}
	switch r.IntN(5) {
	case 0:
		f.Kind = model.Potts
	case 1, 2:
		f.Kind = model.TruncatedLinear
	case 3:
		f.Kind = model.TruncatedQuadratic
	default:
		f.Kind = model.Explicit
		f.Table = make([]float64, ka*kb)
		for i := range f.Table {
			f.Table[i] = math.Round(r.NormFloat64()*40) / 8
			if r.IntN(10) == 0 {
				f.Table[i] = math.Inf(1)
			}
		}
	}
	return f
}

// randomSide draws costs with ties (integers and halves) and a few +Inf.
func randomSide(r *rand.Rand, k int) []float64 {
	h := make([]float64, k)
	for i := range h {
		h[i] = math.Round(r.NormFloat64()*30) / 2
		if r.IntN(12) == 0 {
			h[i] = math.Inf(1)
		}
	}
	return h
}

// TestMinPlusIsTheMinimumOverEveryLabel: the distance transforms of Potts and
// truncated linear give, for every receiving label, the minimum the O(K²)
// minimisation gives — here exactly, with ties and +Inf costs, in both
// directions, for unequal label counts — and the other kinds by rows as before.
func TestMinPlusIsTheMinimumOverEveryLabel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var buf []float64
	for trial := range 20000 {
		f := randomFunction(r)
		fromSecond := r.IntN(2) == 0
		kh, ko := f.Shape[0], f.Shape[1]
		if fromSecond {
			kh, ko = ko, kh
		}
		h := randomSide(r, kh)
		out := make([]float64, ko)
		f.MinPlus(h, out, fromSecond, &buf)
		for j, got := range out {
			if want := bruteMinPlus(f, h, j, fromSecond); got != want {
				t.Fatalf("trial %d: %v W=%v T=%v shape %v fromSecond %v h=%v: out[%d] = %v, want %v", trial, f.Kind, f.W, f.T, f.Shape, fromSecond, h, j, got, want)
			}
		}
	}
}

// TestMinPlusOfRealCostsIsWithinARounding: on costs with no exact ties (real
// numbers), each value is one label's sum, at most an ulp or two from the true
// minimum and never below it by more.
func TestMinPlusOfRealCostsIsWithinARounding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var buf []float64
	for trial := range 20000 {
		f := randomFunction(r)
		if f.Kind != model.TruncatedLinear {
			continue
		}
		f.W = r.Float64() * 1e3
		h := make([]float64, f.Shape[0])
		for i := range h {
			h[i] = r.NormFloat64() * 1e5
		}
		out := make([]float64, f.Shape[1])
		f.MinPlus(h, out, false, &buf)
		for j, got := range out {
			want := bruteMinPlus(f, h, j, false)
			if math.Abs(got-want) > 4*ulp(want) {
				t.Fatalf("trial %d: out[%d] = %v, want %v", trial, j, got, want)
			}
		}
	}
}

func ulp(x float64) float64 { return math.Nextafter(math.Abs(x), math.Inf(1)) - math.Abs(x) }

// TestMinSumIsTheMinimumOverEveryPair: MinSum is min over all (x, y) of
// a[x] + θ(x, y) + b[y], and NaN on either side poisons it.
func TestMinSumIsTheMinimumOverEveryPair(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var buf []float64
	for trial := range 20000 {
		f := randomFunction(r)
		a, b := randomSide(r, f.Shape[0]), randomSide(r, f.Shape[1])
		want := math.Inf(1)
		for x := range a {
			for y := range b {
				want = min(want, a[x]+f.Pairwise(x, y)+b[y])
			}
		}
		if got := f.MinSum(a, b, &buf); got != want {
			t.Fatalf("trial %d: %v W=%v T=%v a=%v b=%v: MinSum %v, want %v", trial, f.Kind, f.W, f.T, a, b, got, want)
		}
		side := a
		if r.IntN(2) == 0 {
			side = b
		}
		side[r.IntN(len(side))] = math.NaN()
		if got := f.MinSum(a, b, &buf); !math.IsNaN(got) {
			t.Fatalf("trial %d: a NaN cost gave %v", trial, got)
		}
	}
}
