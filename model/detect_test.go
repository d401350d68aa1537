package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/partopt/partopt/model"
)

// table returns the ka×kb table c + f(a,b), last argument fastest.
func table(f model.Function, c float64) []float64 {
	ka, kb := f.Shape[0], f.Shape[1]
	t := make([]float64, ka*kb)
	for a := range ka {
		for b := range kb {
			t[a*kb+b] = c + f.Pairwise(a, b)
		}
	}
	return t
}

// reproduces reports whether c + f reproduces every entry of t within the detection
// tolerance (with a little slack for rounding).
func reproduces(f model.Function, c float64, t []float64) bool {
	kb := f.Shape[1]
	scale := 1.0
	for _, v := range t {
		scale = max(scale, math.Abs(v-t[0]))
	}
	for i, v := range t {
		if math.Abs(v-c-f.Pairwise(i/kb, i%kb)) > 2*model.DetectTolerance*scale {
			return false
		}
	}
	return true
}

func TestDetectPairwiseRecognises(t *testing.T) {
	inf := math.Inf(1)
	fn := func(k model.Kind, ka, kb int, w, tr float64) model.Function {
		return model.Function{Kind: k, Shape: []int{ka, kb}, W: w, T: tr}
	}
	for _, tc := range []struct {
		name     string
		f        model.Function
		c        float64
		wantKind model.Kind
	}{
		{"potts", fn(model.Potts, 4, 4, 2, 0), 0, model.Potts},
		{"potts with constant", fn(model.Potts, 3, 3, 0.7, 0), -1.25, model.Potts},
		{"potts 2x2", fn(model.Potts, 2, 2, 3, 0), 10, model.Potts},
		{"potts non-square 2x5", fn(model.Potts, 2, 5, 1, 0), 0.5, model.Potts},
		{"potts non-square 5x3", fn(model.Potts, 5, 3, 1, 0), 0.5, model.Potts},
		{"linear T=2", fn(model.TruncatedLinear, 5, 5, 1.5, 2), 0, model.TruncatedLinear},
		{"linear T=2.5", fn(model.TruncatedLinear, 6, 6, 1, 2.5), 3, model.TruncatedLinear},
		{"linear T=3", fn(model.TruncatedLinear, 5, 5, 0.1, 3), 0.2, model.TruncatedLinear},
		{"linear untruncated", fn(model.TruncatedLinear, 5, 5, 1, inf), 0, model.TruncatedLinear},
		{"linear T beyond range", fn(model.TruncatedLinear, 4, 4, 1, 100), -2, model.TruncatedLinear},
		{"linear T=1 is Potts", fn(model.TruncatedLinear, 4, 4, 1, 1), 0, model.Potts},
		{"linear T<1 is Potts", fn(model.TruncatedLinear, 4, 4, 2, 0.5), 0, model.Potts},
		{"linear non-square 3x6", fn(model.TruncatedLinear, 3, 6, 1, 4), 1, model.TruncatedLinear},
		{"linear non-square 6x3", fn(model.TruncatedLinear, 6, 3, 1, 3.5), 1, model.TruncatedLinear},
		{"quadratic T=5", fn(model.TruncatedQuadratic, 5, 5, 1, 5), 0, model.TruncatedQuadratic},
		{"quadratic T=10", fn(model.TruncatedQuadratic, 6, 6, 0.5, 10), -3, model.TruncatedQuadratic},
		{"quadratic untruncated", fn(model.TruncatedQuadratic, 4, 4, 2, inf), 1e3, model.TruncatedQuadratic},
		{"quadratic non-square 2x6", fn(model.TruncatedQuadratic, 2, 6, 1, 7), 0, model.TruncatedQuadratic},
		{"quadratic non-square 6x4", fn(model.TruncatedQuadratic, 6, 4, 1, 12), 0, model.TruncatedQuadratic},
		{"decimal weights", fn(model.Potts, 3, 3, 0.1, 0), 0.2, model.Potts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := table(tc.f, tc.c)
			got, c, ok := model.DetectPairwise(tc.f.Shape[0], tc.f.Shape[1], tab)
			if !ok {
				t.Fatalf("not recognised: %v", tab)
			}
			if got.Kind != tc.wantKind {
				t.Errorf("kind %v, want %v", got.Kind, tc.wantKind)
			}
			if !sameEnergy(c, tc.c) {
				t.Errorf("constant %v, want %v", c, tc.c)
			}
			if got.Shape[0] != tc.f.Shape[0] || got.Shape[1] != tc.f.Shape[1] {
				t.Errorf("shape %v, want %v", got.Shape, tc.f.Shape)
			}
			if !(got.W > 0) {
				t.Errorf("weight %v, want > 0", got.W)
			}
			if !reproduces(got, c, tab) {
				t.Errorf("%v W=%v T=%v + %v does not reproduce %v", got.Kind, got.W, got.T, c, tab)
			}
		})
	}
}

func TestDetectPairwiseRejects(t *testing.T) {
	inf := math.Inf(1)
	potts := table(model.Function{Kind: model.Potts, Shape: []int{3, 3}, W: 1}, 0)
	withInf := append([]float64(nil), potts...)
	withInf[4] = inf // a diagonal entry
	allInf := []float64{0, inf, inf, 0}
	withNaN := append([]float64(nil), potts...)
	withNaN[1] = math.NaN()
	cubic := make([]float64, 16) // |a−b|³
	for a := range 4 {
		for b := range 4 {
			d := math.Abs(float64(a - b))
			cubic[a*4+b] = d * d * d
		}
	}
	for _, tc := range []struct {
		name   string
		ka, kb int
		t      []float64
	}{
		{"forbidden entry", 3, 3, withInf},
		{"forbidden off-diagonal", 2, 2, allInf},
		{"NaN entry", 3, 3, withNaN},
		{"asymmetric", 2, 2, []float64{0, 1, 2, 0}},
		{"asymmetric 3x3", 3, 3, []float64{0, 1, 1, 1, 0, 1, 1, 2, 0}},
		{"W < 0", 2, 2, []float64{1, 0, 0, 1}},
		{"W < 0 with constant", 3, 3, []float64{2, 1, 1, 1, 2, 1, 1, 1, 2}},
		{"W = 0 (constant)", 2, 2, []float64{4, 4, 4, 4}},
		{"W zero", 2, 2, []float64{5, 5, 5, 5.0000000001}},
		{"one row", 1, 3, []float64{0, 1, 1}},
		{"one column", 3, 1, []float64{0, 1, 1}},
		{"wrong length", 2, 2, []float64{0, 1, 1}},
		{"superlinear, not quadratic", 4, 4, cubic},
		{"nonzero diagonal", 3, 3, []float64{0, 1, 1, 1, 0.5, 1, 1, 1, 0}},
		{"increasing then decreasing", 4, 4, []float64{0, 1, 2, 1, 1, 0, 1, 2, 2, 1, 0, 1, 1, 2, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f, c, ok := model.DetectPairwise(tc.ka, tc.kb, tc.t); ok {
				t.Errorf("recognised %v as %v W=%v T=%v + %v", tc.t, f.Kind, f.W, f.T, c)
			}
		})
	}
}

// randomParametric returns a random Potts, truncated linear or truncated quadratic
// function with W in [0.1, 5) and shape in [2,6]², T sometimes +Inf.
func randomParametric(rng *rand.Rand, ka, kb int) model.Function {
	kinds := []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}
	f := model.Function{Kind: kinds[rng.IntN(3)], Shape: []int{ka, kb}, W: 0.1 + 4.9*rng.Float64()}
	if f.Kind != model.Potts {
		f.T = 0.1 + 30*rng.Float64()
		switch rng.IntN(4) {
		case 0:
			f.T = math.Inf(1)
		case 1:
			f.T = float64(1 + rng.IntN(8)) // integer truncations, the common case in files
		}
	}
	return f
}

// TestDetectPairwiseReproducesRandomParametric is the property: for a random
// parametric function plus a random constant, detection succeeds and the detected
// function plus constant reproduces every entry.
func TestDetectPairwiseReproducesRandomParametric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		f := randomParametric(rng, 2+rng.IntN(5), 2+rng.IntN(5))
		c := 20*rng.Float64() - 10
		if rng.IntN(4) == 0 {
			c = 0
		}
		tab := table(f, c)
		got, gc, ok := model.DetectPairwise(f.Shape[0], f.Shape[1], tab)
		if !ok {
			t.Fatalf("case %d: %v %v W=%v T=%v + %v not recognised: %v", i, f.Shape, f.Kind, f.W, f.T, c, tab)
		}
		if !reproduces(got, gc, tab) {
			t.Fatalf("case %d: %v W=%v T=%v + %v detected as %v W=%v T=%v + %v, which differs", i, f.Kind, f.W, f.T, c, got.Kind, got.W, got.T, gc)
		}
	}
}

// TestAddTableMatchesParametricModel builds the same random pairwise model twice:
// once with parametric functions, once with their explicit tables plus a constant per
// table. AddTable must turn every table back into a parametric function, and the two
// models must have the same energies up to the moved constants.
func TestAddTableMatchesParametricModel(t *testing.T) {
	for seed := uint64(0); seed < 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 8
		labels := make([]int, n)
		for v := range labels {
			labels[v] = 2 + rng.IntN(5)
		}
		par, exp := model.NewBuilder(labels), model.NewBuilder(labels)
		sumC := 0.0
		for u := range n {
			for v := u + 1; v < n; v++ {
				if rng.IntN(2) == 0 {
					continue
				}
				f := randomParametric(rng, labels[u], labels[v])
				id, err := par.AddFunction(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := par.AddFactor(id, u, v); err != nil {
					t.Fatal(err)
				}
				c := 2*rng.Float64() - 1
				sumC += c
				if err := exp.AddTable([]int{u, v}, table(f, c)); err != nil {
					t.Fatal(err)
				}
			}
		}
		mp, err := par.Build()
		if err != nil {
			t.Fatal(err)
		}
		me, err := exp.Build()
		if err != nil {
			t.Fatal(err)
		}
		if mp.NumFactors() != me.NumFactors() {
			t.Fatalf("seed %d: %d parametric factors, %d from tables", seed, mp.NumFactors(), me.NumFactors())
		}
		for f := range me.NumFactors() {
			if k := me.FactorFunction(f).Kind; k == model.Explicit {
				t.Errorf("seed %d: factor %d stayed explicit", seed, f)
			}
		}
		if !sameEnergy(me.Offset(), sumC) {
			t.Errorf("seed %d: offset %v, want the sum of constants %v", seed, me.Offset(), sumC)
		}
		for range 50 {
			x := make([]int, n)
			for v := range x {
				x[v] = rng.IntN(labels[v])
			}
			if a, b := mp.Energy(x)+sumC, me.Energy(x); !sameEnergy(a, b) {
				t.Fatalf("seed %d: Energy(%v): parametric %v + %v = %v, from tables %v", seed, x, mp.Energy(x), sumC, a, b)
			}
		}
	}
}

// Tiny tables are held to their own scale: an asymmetric table of nanoscale entries is
// not Potts, however small its entries are.
func TestDetectPairwiseToleranceIsRelativeToTheTable(t *testing.T) {
	if _, _, ok := model.DetectPairwise(2, 2, []float64{0, 2e-9, 2.9e-9, 0}); ok {
		t.Error("asymmetric nanoscale table recognised as Potts")
	}
	if f, _, ok := model.DetectPairwise(2, 2, []float64{0, 1e-12, 1e-12, 0}); !ok || f.Kind != model.Potts {
		t.Error("exact nanoscale Potts table not recognised")
	}
}

// A large additive constant leaves rounding in every entry; detection still finds the
// truncated form (W is measured on one rounded entry and multiplied by distances).
func TestDetectPairwiseWithLargeConstant(t *testing.T) {
	f := model.Function{Kind: model.TruncatedQuadratic, Shape: []int{20, 13}, W: 0.0018858534099060438, T: 871.9867011510381}
	table := make([]float64, 20*13)
	for a := 0; a < 20; a++ {
		for b := 0; b < 13; b++ {
			table[a*13+b] = 249248.25490825708 + f.Pairwise(a, b)
		}
	}
	got, c, ok := model.DetectPairwise(20, 13, table)
	if !ok || got.Kind != model.TruncatedQuadratic {
		t.Fatalf("not recognised: %v %v", got.Kind, ok)
	}
	for i, v := range table {
		if d := math.Abs(c + got.Pairwise(i/13, i%13) - v); d > 1e-6 {
			t.Fatalf("entry %d off by %g", i, d)
		}
	}
}
