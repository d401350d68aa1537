package random

import (
	"fmt"
	"math"
	"testing"

	"github.com/partopt/partopt/model"
)

// TestPottsDenoisingStructure checks the variables, the factor order (unaries in
// variable order, then right and down edges per pixel in raster order) and the edge count.
func TestPottsDenoisingStructure(t *testing.T) {
	for _, c := range []struct{ w, h, k int }{{13, 7, 5}, {1, 4, 3}, {5, 1, 2}, {1, 1, 4}, {0, 3, 2}, {6, 6, 1}} {
		t.Run(fmt.Sprintf("%dx%dx%d", c.w, c.h, c.k), func(t *testing.T) {
			w, h, k := c.w, c.h, c.k
			m := PottsDenoising(New(5), w, h, k, 1.2, 4, 2)
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			n := w * h
			if m.NumVars() != n {
				t.Fatalf("NumVars = %d, want %d", m.NumVars(), n)
			}
			for v := range n {
				if m.NumLabels(v) != k {
					t.Fatalf("variable %d has %d labels, want %d", v, m.NumLabels(v), k)
				}
			}
			edges := max(w-1, 0)*h + w*max(h-1, 0)
			if m.NumFactors() != n+edges {
				t.Fatalf("NumFactors = %d, want %d unaries + %d edges", m.NumFactors(), n, edges)
			}
			if m.Offset() != 0 {
				t.Errorf("Offset = %v, want 0", m.Offset())
			}
			for v := range n {
				if vars := m.FactorVars(v); len(vars) != 1 || int(vars[0]) != v {
					t.Fatalf("factor %d has variables %v, want [%d]", v, vars, v)
				}
			}
			f := n
			for y := range h {
				for x := range w {
					v := y*w + x
					var want [][2]int
					if x+1 < w {
						want = append(want, [2]int{v, v + 1})
					}
					if y+1 < h {
						want = append(want, [2]int{v, v + w})
					}
					for _, e := range want {
						vars := m.FactorVars(f)
						if len(vars) != 2 || int(vars[0]) != e[0] || int(vars[1]) != e[1] {
							t.Fatalf("factor %d has variables %v, want %v", f, vars, e)
						}
						f++
					}
				}
			}
		})
	}
}

// TestPottsDenoisingSharesOnePottsFunction checks that every edge uses one Potts
// function of weight lambda and that the other functions are exactly the distinct
// unary tables, with values min((y−l)², trunc) in [0, trunc].
func TestPottsDenoisingSharesOnePottsFunction(t *testing.T) {
	const w, h, k, trunc, lambda = 64, 48, 8, 4.0, 2.0
	m := PottsDenoising(New(11), w, h, k, 1.2, trunc, lambda)
	n := w * h
	potts := m.FactorFunc(n)
	if fn := m.Func(potts); fn.Kind != model.Potts || fn.W != lambda || fn.Shape[0] != k || fn.Shape[1] != k {
		t.Fatalf("edge function %+v, want Potts %d×%d with W = %v", fn, k, k, lambda)
	}
	for f := n; f < m.NumFactors(); f++ {
		if m.FactorFunc(f) != potts {
			t.Fatalf("edge factor %d uses function %d, want the shared %d", f, m.FactorFunc(f), potts)
		}
	}
	distinct := map[string]bool{}
	flat := 0
	for v := range n {
		fn := m.FactorFunction(v)
		if fn.Kind != model.Explicit || len(fn.Table) != k {
			t.Fatalf("unary of %d: kind %v with %d entries, want explicit with %d", v, fn.Kind, len(fn.Table), k)
		}
		key := ""
		all := true
		for _, x := range fn.Table {
			if !(x >= 0 && x <= trunc) {
				t.Fatalf("unary of %d has entry %v outside [0, %v]", v, x, trunc)
			}
			all = all && x == trunc
			key += fmt.Sprintf("%x,", math.Float64bits(x))
		}
		if all {
			flat++
		}
		distinct[key] = true
	}
	if got, want := m.NumFunctions(), 1+len(distinct); got != want {
		t.Errorf("NumFunctions = %d, want 1 Potts + %d distinct unary tables", got, len(distinct))
	}
	t.Logf("%d all-trunc unary tables share one function", flat)
}

// TestPottsDenoisingGroundTruthIsGood checks, at the reference parameters, that the
// ground truth uses labels 0 and k−1, is smooth (few grid edges cut) and has a finite
// energy far below that of random labelings.
func TestPottsDenoisingGroundTruthIsGood(t *testing.T) {
	const w, h, k = 256, 256, 8
	for seed := uint64(1); seed <= 3; seed++ {
		m, truth := pottsDenoising(New(seed), w, h, k, 1.2, 4, 2)
		seen := make([]bool, k)
		for _, l := range truth {
			seen[l] = true
		}
		if !seen[0] || !seen[k-1] {
			t.Errorf("seed %d: labels used %v, want 0 and %d among them", seed, seen, k-1)
		}
		cut := 0
		for f := w * h; f < m.NumFactors(); f++ {
			vars := m.FactorVars(f)
			if truth[vars[0]] != truth[vars[1]] {
				cut++
			}
		}
		if edges := m.NumFactors() - w*h; cut*10 > edges {
			t.Errorf("seed %d: ground truth cuts %d of %d edges, want under 10%%", seed, cut, edges)
		}
		et := m.Energy(truth)
		if math.IsInf(et, 0) || math.IsNaN(et) {
			t.Fatalf("seed %d: ground-truth energy %v", seed, et)
		}
		rng := New(seed + 100)
		for range 5 {
			if er := m.Energy(Labeling(rng, m)); !(et < er) {
				t.Errorf("seed %d: ground-truth energy %v not below random labeling's %v", seed, et, er)
			}
		}
		t.Logf("seed %d: ground-truth energy %.4f, %d of %d edges cut", seed, et, cut, m.NumFactors()-w*h)
	}
}

// TestPottsDenoisingIsDeterministic checks that a seed names the model (bit-identical
// functions and factors) and that different seeds give different models.
func TestPottsDenoisingIsDeterministic(t *testing.T) {
	gen := func(seed uint64) *model.Model { return PottsDenoising(New(seed), 20, 15, 6, 1.2, 4, 2) }
	same := func(a, b *model.Model) bool {
		if a.NumFactors() != b.NumFactors() || a.NumFunctions() != b.NumFunctions() || a.Offset() != b.Offset() {
			return false
		}
		for f := range a.NumFactors() {
			if a.FactorFunc(f) != b.FactorFunc(f) {
				return false
			}
		}
		for i := range a.NumFunctions() {
			fa, fb := a.Func(i), b.Func(i)
			if fa.Kind != fb.Kind || fa.W != fb.W || len(fa.Table) != len(fb.Table) {
				return false
			}
			for j := range fa.Table {
				if math.Float64bits(fa.Table[j]) != math.Float64bits(fb.Table[j]) {
					return false
				}
			}
		}
		return true
	}
	for seed := uint64(0); seed < 10; seed++ {
		if !same(gen(seed), gen(seed)) {
			t.Fatalf("seed %d: two models differ", seed)
		}
		_, t1 := pottsDenoising(New(seed), 20, 15, 6, 1.2, 4, 2)
		_, t2 := pottsDenoising(New(seed), 20, 15, 6, 1.2, 4, 2)
		for v := range t1 {
			if t1[v] != t2[v] {
				t.Fatalf("seed %d: ground truths differ at %d", seed, v)
			}
		}
	}
	if same(gen(1), gen(2)) {
		t.Errorf("seeds 1 and 2 give the same model")
	}
}

func TestPottsDenoisingRejectsBadParameters(t *testing.T) {
	for name, f := range map[string]func(){
		"w<0":        func() { PottsDenoising(New(1), -1, 2, 2, 1, 4, 2) },
		"k=0":        func() { PottsDenoising(New(1), 2, 2, 0, 1, 4, 2) },
		"sigma<0":    func() { PottsDenoising(New(1), 2, 2, 2, -1, 4, 2) },
		"sigma NaN":  func() { PottsDenoising(New(1), 2, 2, 2, math.NaN(), 4, 2) },
		"trunc=0":    func() { PottsDenoising(New(1), 2, 2, 2, 1, 0, 2) },
		"lambda Inf": func() { PottsDenoising(New(1), 2, 2, 2, 1, 4, math.Inf(1)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
