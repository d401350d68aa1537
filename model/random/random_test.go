package random_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// generators names every generator with small parameters.
var generators = []struct {
	name string
	gen  func(rng *rand.Rand) *model.Model
}{
	{"PottsGrid", func(rng *rand.Rand) *model.Model { return random.PottsGrid(rng, 4, 3, 3) }},
	{"DensePairwise", func(rng *rand.Rand) *model.Model { return random.DensePairwise(rng, 7, 4, 0.6) }},
	{"HigherOrder", func(rng *rand.Rand) *model.Model { return random.HigherOrder(rng, 7, 3, 4, 20) }},
	{"PottsDenoising", func(rng *rand.Rand) *model.Model { return random.PottsDenoising(rng, 5, 4, 4, 1.2, 4, 2) }},
	{"ParametricGrid", func(rng *rand.Rand) *model.Model { return random.ParametricGrid(rng, 4, 3, 5) }},
}

func TestSameSeedSameModel(t *testing.T) {
	for _, g := range generators {
		t.Run(g.name, func(t *testing.T) {
			for seed := uint64(0); seed < 20; seed++ {
				m1, m2 := g.gen(random.New(seed)), g.gen(random.New(seed))
				if m1.NumVars() != m2.NumVars() || m1.NumFactors() != m2.NumFactors() || m1.NumFunctions() != m2.NumFunctions() {
					t.Fatalf("seed %d: sizes differ: (%d,%d,%d) vs (%d,%d,%d)", seed,
						m1.NumVars(), m1.NumFactors(), m1.NumFunctions(), m2.NumVars(), m2.NumFactors(), m2.NumFunctions())
				}
				rng := random.New(seed + 1000)
				for range 50 {
					x := random.Labeling(rng, m1)
					if e1, e2 := m1.Energy(x), m2.Energy(x); math.Float64bits(e1) != math.Float64bits(e2) {
						t.Fatalf("seed %d: labeling %v: energies %v and %v", seed, x, e1, e2)
					}
				}
			}
		})
	}
}

func TestDifferentSeedsDiffer(t *testing.T) {
	for _, g := range generators {
		t.Run(g.name, func(t *testing.T) {
			m1, m2 := g.gen(random.New(1)), g.gen(random.New(2))
			if m1.NumVars() != m2.NumVars() || m1.NumFactors() != m2.NumFactors() {
				return // different structure: they differ
			}
			// Compare on labelings valid for both.
			rng := random.New(99)
			for range 50 {
				x := make([]int, m1.NumVars())
				for v := range x {
					x[v] = rng.IntN(min(m1.NumLabels(v), m2.NumLabels(v)))
				}
				if m1.Energy(x) != m2.Energy(x) {
					return
				}
			}
			t.Errorf("seeds 1 and 2 give models with equal energies on 50 labelings")
		})
	}
}

// TestGeneratedModelsAreValid checks Validate, the value invariants (finite or +Inf)
// and that the all-zero labeling is feasible.
func TestGeneratedModelsAreValid(t *testing.T) {
	for _, g := range generators {
		t.Run(g.name, func(t *testing.T) {
			for seed := uint64(0); seed < 50; seed++ {
				m := g.gen(random.New(seed))
				if err := m.Validate(); err != nil {
					t.Fatalf("seed %d: Validate: %v", seed, err)
				}
				for i := range m.NumFunctions() {
					f := m.Func(i)
					for j, v := range f.Table {
						if math.IsNaN(v) || math.IsInf(v, -1) {
							t.Fatalf("seed %d: function %d entry %d is %v", seed, i, j, v)
						}
					}
				}
				zero := make([]int, m.NumVars())
				if e := m.Energy(zero); math.IsInf(e, 0) || math.IsNaN(e) {
					t.Fatalf("seed %d: all-zero labeling has energy %v", seed, e)
				}
			}
		})
	}
}

// TestGeneratorsCoverFeatures checks that, over a few seeds, the generators produce
// every feature they promise: 1-label variables, forbidden entries, every function kind
// and a nonzero offset.
func TestGeneratorsCoverFeatures(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range generators {
		for seed := uint64(0); seed < 30; seed++ {
			m := g.gen(random.New(seed))
			for v := range m.NumVars() {
				if m.NumLabels(v) == 1 {
					seen["1-label variable"] = true
				}
			}
			if m.Offset() != 0 {
				seen["offset"] = true
			}
			for f := range m.NumFactors() {
				fn := m.FactorFunction(f)
				seen[fn.Kind.String()] = true
				if fn.Order() > 2 {
					seen["order > 2"] = true
				}
				for _, v := range fn.Table {
					if math.IsInf(v, 1) {
						seen["+Inf"] = true
					}
				}
			}
		}
	}
	for _, want := range []string{"1-label variable", "offset", "explicit", "potts", "truncated-linear", "truncated-quadratic", "order > 2", "+Inf"} {
		if !seen[want] {
			t.Errorf("no generated model has %s", want)
		}
	}
}

func TestPottsGridStructure(t *testing.T) {
	m := random.PottsGrid(random.New(3), 5, 4, 3)
	if m.NumVars() != 20 {
		t.Fatalf("NumVars = %d, want 20", m.NumVars())
	}
	edges := 0
	for f := range m.NumFactors() {
		vars := m.FactorVars(f)
		if len(vars) != 2 {
			continue
		}
		edges++
		u, v := int(vars[0]), int(vars[1])
		if !(v == u+1 && u%5 != 4) && v != u+5 {
			t.Errorf("factor %d on (%d,%d) is not a grid edge", f, u, v)
		}
		if k := m.FactorFunction(f).Kind; k != model.Potts {
			t.Errorf("edge factor %d has kind %v, want potts", f, k)
		}
	}
	if want := 4*4 + 5*3; edges != want {
		t.Errorf("%d edges, want %d", edges, want)
	}
	if m.NumFunctions() >= m.NumFactors() {
		t.Errorf("%d functions for %d factors: shared weights were not interned", m.NumFunctions(), m.NumFactors())
	}
}

// TestParametricGridStructure: grid edges only, every kind of parametric term among
// them, label counts within [1, k].
func TestParametricGridStructure(t *testing.T) {
	kinds := map[model.Kind]int{}
	for seed := range uint64(20) {
		m := random.ParametricGrid(random.New(seed), 4, 3, 5)
		for v := range m.NumVars() {
			if k := m.NumLabels(v); k < 1 || k > 5 {
				t.Fatalf("variable %d has %d labels, want 1..5", v, k)
			}
		}
		for f := range m.NumFactors() {
			vars := m.FactorVars(f)
			if len(vars) != 2 {
				continue
			}
			u, v := int(vars[0]), int(vars[1])
			if !(v == u+1 && u%4 != 3) && v != u+4 {
				t.Errorf("factor %d on (%d,%d) is not a grid edge", f, u, v)
			}
			kinds[m.FactorFunction(f).Kind]++
		}
	}
	for _, k := range []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic} {
		if kinds[k] == 0 {
			t.Errorf("no %v edge in 20 grids: %v", k, kinds)
		}
	}
}

func TestGeneratorsRejectBadParameters(t *testing.T) {
	for name, f := range map[string]func(){
		"PottsGrid k=0":       func() { random.PottsGrid(random.New(1), 2, 2, 0) },
		"ParametricGrid k=0":  func() { random.ParametricGrid(random.New(1), 2, 2, 0) },
		"DensePairwise d=2":   func() { random.DensePairwise(random.New(1), 3, 2, 2) },
		"DensePairwise NaN":   func() { random.DensePairwise(random.New(1), 3, 2, math.NaN()) },
		"HigherOrder labels0": func() { random.HigherOrder(random.New(1), 3, 0, 2, 2) },
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
