package model_test

import (
	"math/rand/v2"
	"testing"

	"github.com/partopt/partopt/model"
)

// randomFixing fixes each variable with probability p to a random label (−1: free).
func randomFixing(rng *rand.Rand, m *model.Model, p float64) []int {
	fixed := make([]int, m.NumVars())
	for v := range fixed {
		fixed[v] = -1
		if rng.Float64() < p {
			fixed[v] = rng.IntN(m.NumLabels(v))
			if rng.IntN(2) == 0 {
				fixed[v] = 0 // keep some fixings feasible
			}
		}
	}
	return fixed
}

// TestConditionPreservesEnergy is the defining property of Condition: for every
// labeling x that agrees with the fixed labels, parent.Energy(x) equals the
// conditioned model's energy of x restricted to the free variables.
func TestConditionPreservesEnergy(t *testing.T) {
	for _, nm := range randomModels() {
		rng := newRand(nm.seed)
		for _, p := range []float64{0, 0.2, 0.5, 0.8, 1} {
			fixed := randomFixing(rng, nm.m, p)
			c, err := nm.m.Condition(fixed)
			if err != nil {
				t.Fatalf("%s seed %d: Condition(%v): %v", nm.gen, nm.seed, fixed, err)
			}
			if err := c.Model.Validate(); err != nil {
				t.Fatalf("%s seed %d: conditioned model invalid: %v", nm.gen, nm.seed, err)
			}
			free := 0
			for v, l := range fixed {
				if l < 0 {
					if free >= len(c.Vars) || c.Vars[free] != v {
						t.Fatalf("%s seed %d: Vars = %v, want the free variables of %v ascending", nm.gen, nm.seed, c.Vars, fixed)
					}
					if c.Model.NumLabels(free) != nm.m.NumLabels(v) {
						t.Fatalf("%s seed %d: conditioned variable %d has %d labels, parent %d has %d",
							nm.gen, nm.seed, free, c.Model.NumLabels(free), v, nm.m.NumLabels(v))
					}
					free++
				}
			}
			if free != len(c.Vars) || c.Model.NumVars() != free {
				t.Fatalf("%s seed %d: %d free variables, Vars has %d, model has %d", nm.gen, nm.seed, free, len(c.Vars), c.Model.NumVars())
			}
			for range 20 {
				x := testLabeling(rng, nm.m)
				for v, l := range fixed {
					if l >= 0 {
						x[v] = l
					}
				}
				y := make([]int, len(c.Vars))
				for i, v := range c.Vars {
					y[i] = x[v]
				}
				if a, b := nm.m.Energy(x), c.Model.Energy(y); !sameEnergy(a, b) {
					t.Fatalf("%s seed %d: fixed %v: parent Energy(%v) = %v, conditioned Energy(%v) = %v",
						nm.gen, nm.seed, fixed, x, a, y, b)
				}
			}
		}
	}
}

func TestConditionAllFixedLeavesOffset(t *testing.T) {
	for _, nm := range randomModels() {
		rng := newRand(nm.seed)
		x := testLabeling(rng, nm.m)
		c, err := nm.m.Condition(x)
		if err != nil {
			t.Fatal(err)
		}
		if c.Model.NumVars() != 0 || c.Model.NumFactors() != 0 || len(c.Vars) != 0 {
			t.Fatalf("%s seed %d: all fixed left %d variables, %d factors", nm.gen, nm.seed, c.Model.NumVars(), c.Model.NumFactors())
		}
		if a, b := nm.m.Energy(x), c.Model.Offset(); !sameEnergy(a, b) {
			t.Fatalf("%s seed %d: Energy(%v) = %v, conditioned offset %v", nm.gen, nm.seed, x, a, b)
		}
	}
}

func TestConditionNoneFixedKeepsModel(t *testing.T) {
	for _, nm := range randomModels() {
		m := nm.m
		free := make([]int, m.NumVars())
		for v := range free {
			free[v] = -1
		}
		c, err := m.Condition(free)
		if err != nil {
			t.Fatal(err)
		}
		if c.Model.NumFactors() != m.NumFactors() || c.Model.Offset() != m.Offset() {
			t.Fatalf("%s seed %d: %d factors and offset %v, want %d and %v",
				nm.gen, nm.seed, c.Model.NumFactors(), c.Model.Offset(), m.NumFactors(), m.Offset())
		}
		for f := range m.NumFactors() {
			if c.Model.FactorFunc(f) != m.FactorFunc(f) {
				t.Fatalf("%s seed %d: factor %d does not share its function", nm.gen, nm.seed, f)
			}
		}
		rng := newRand(nm.seed)
		for range 20 {
			x := testLabeling(rng, m)
			if a, b := m.Energy(x), c.Model.Energy(x); a != b {
				t.Fatalf("%s seed %d: Energy(%v) = %v, conditioned on nothing %v", nm.gen, nm.seed, x, a, b)
			}
		}
	}
}

// TestConditionKeepsPottsEdges checks that edges with both ends free keep their shared
// Potts function and that each free variable gets at most one new unary factor.
func TestConditionKeepsPottsEdges(t *testing.T) {
	nm := randomModels()[0]
	if nm.gen != "PottsGrid" {
		t.Fatal("randomModels()[0] is not a Potts grid")
	}
	m := nm.m
	fixed := randomFixing(newRand(1), m, 0.5)
	c, err := m.Condition(fixed)
	if err != nil {
		t.Fatal(err)
	}
	wantEdges := 0
	for f := range m.NumFactors() {
		vars := m.FactorVars(f)
		if len(vars) == 2 && fixed[vars[0]] < 0 && fixed[vars[1]] < 0 {
			wantEdges++
		}
	}
	edges := 0
	unaries := make([]int, c.Model.NumVars())
	for f := range c.Model.NumFactors() {
		switch vars := c.Model.FactorVars(f); len(vars) {
		case 2:
			edges++
			if k := c.Model.FactorFunction(f).Kind; k != model.Potts {
				t.Errorf("edge %d has kind %v, want potts", f, k)
			}
		case 1:
			unaries[vars[0]]++
		}
	}
	if edges != wantEdges {
		t.Errorf("%d edges, want %d (both ends free)", edges, wantEdges)
	}
	for v, n := range unaries {
		if n > 2 { // its own unary plus at most one summed from fixed neighbours
			t.Errorf("conditioned variable %d has %d unary factors, want ≤ 2", v, n)
		}
	}
}

func TestConditionRejects(t *testing.T) {
	m := handModel(t) // 2, 3, 1, 2 labels
	for _, tc := range []struct {
		fixed []int
		want  string
	}{
		{[]int{-1, -1, -1}, "3 entries for 4 variables"},
		{[]int{-1, -1, -1, -1, -1}, "5 entries for 4 variables"},
		{[]int{-1, 3, -1, -1}, "variable 1: label 3 out of range [0,3)"},
		{[]int{-1, -1, 1, -1}, "variable 2: label 1 out of range [0,1)"},
		{[]int{-2, -1, -1, -1}, "variable 0: label -2 out of range"},
	} {
		if _, err := m.Condition(tc.fixed); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("Condition(%v) = %v, want error containing %q", tc.fixed, err, tc.want)
		}
	}
}
