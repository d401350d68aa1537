package model_test

import (
	"slices"
	"testing"
)

// TestInducedFactorsAndBoundary compares Induced with a brute scan over all factors:
// Factors are those with every variable inside, Boundary those with variables on both
// sides; the sub-model's factors are the inside factors renumbered, and its energy is
// the sum of the parent's inside factor values.
func TestInducedFactorsAndBoundary(t *testing.T) {
	for _, nm := range randomModels() {
		m := nm.m
		rng := newRand(nm.seed)
		for trial := range 8 {
			perm := rng.Perm(m.NumVars())
			nodes := perm[:rng.IntN(m.NumVars()+1)] // random size, random order
			s, err := m.Induced(nodes)
			if err != nil {
				t.Fatalf("%s seed %d: Induced(%v): %v", nm.gen, nm.seed, nodes, err)
			}
			if err := s.Model.Validate(); err != nil {
				t.Fatalf("%s seed %d: sub-model invalid: %v", nm.gen, nm.seed, err)
			}
			in := make([]bool, m.NumVars())
			for _, v := range nodes {
				in[v] = true
			}
			var inside, boundary []int
			for f := range m.NumFactors() {
				k := 0
				for _, v := range m.FactorVars(f) {
					if in[v] {
						k++
					}
				}
				switch {
				case k == len(m.FactorVars(f)):
					inside = append(inside, f)
				case k > 0:
					boundary = append(boundary, f)
				}
			}
			if !slices.Equal(s.Factors, inside) || !slices.Equal(s.Boundary, boundary) {
				t.Fatalf("%s seed %d trial %d: nodes %v: Factors %v Boundary %v, want %v and %v",
					nm.gen, nm.seed, trial, nodes, s.Factors, s.Boundary, inside, boundary)
			}
			if !slices.Equal(s.Vars, nodes) {
				t.Fatalf("%s seed %d: Vars %v, want %v", nm.gen, nm.seed, s.Vars, nodes)
			}
			sm := s.Model
			if sm.NumVars() != len(nodes) || sm.NumFactors() != len(inside) || sm.Offset() != 0 {
				t.Fatalf("%s seed %d: sub-model has %d vars, %d factors, offset %v; want %d, %d, 0",
					nm.gen, nm.seed, sm.NumVars(), sm.NumFactors(), sm.Offset(), len(nodes), len(inside))
			}
			for i, v := range nodes {
				if sm.NumLabels(i) != m.NumLabels(v) {
					t.Fatalf("%s seed %d: sub variable %d has %d labels, parent %d has %d", nm.gen, nm.seed, i, sm.NumLabels(i), v, m.NumLabels(v))
				}
			}
			for j, f := range s.Factors {
				if sm.FactorFunc(j) != m.FactorFunc(f) {
					t.Fatalf("%s seed %d: sub factor %d uses function %d, parent factor %d uses %d", nm.gen, nm.seed, j, sm.FactorFunc(j), f, m.FactorFunc(f))
				}
				for d, u := range sm.FactorVars(j) {
					if nodes[u] != int(m.FactorVars(f)[d]) {
						t.Fatalf("%s seed %d: sub factor %d variables %v do not map to parent factor %d variables %v",
							nm.gen, nm.seed, j, sm.FactorVars(j), f, m.FactorVars(f))
					}
				}
			}
			for range 10 {
				x := testLabeling(rng, m)
				y := make([]int, len(nodes))
				want := 0.0
				for i, v := range nodes {
					y[i] = x[v]
				}
				for _, f := range inside {
					want += m.FactorValue(f, x)
				}
				if got := sm.Energy(y); !sameEnergy(got, want) {
					t.Fatalf("%s seed %d: sub-model Energy(%v) = %v, sum of inside factors %v", nm.gen, nm.seed, y, got, want)
				}
			}
		}
	}
}

func TestInducedAllNodesIsWholeModel(t *testing.T) {
	for _, nm := range randomModels() {
		m := nm.m
		all := make([]int, m.NumVars())
		for v := range all {
			all[v] = v
		}
		s, err := m.Induced(all)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Boundary) != 0 || len(s.Factors) != m.NumFactors() {
			t.Fatalf("%s seed %d: whole model: %d factors, %d boundary; want %d, 0", nm.gen, nm.seed, len(s.Factors), len(s.Boundary), m.NumFactors())
		}
		rng := newRand(nm.seed)
		for range 10 {
			x := testLabeling(rng, m)
			if a, b := m.Energy(x), s.Model.Energy(x)+m.Offset(); !sameEnergy(a, b) {
				t.Fatalf("%s seed %d: Energy(%v) = %v, induced + offset %v", nm.gen, nm.seed, x, a, b)
			}
		}
	}
}

func TestInducedRejects(t *testing.T) {
	m := handModel(t) // 4 variables
	for _, tc := range []struct {
		nodes []int
		want  string
	}{
		{[]int{0, 1, 0}, "node 0 listed twice"},
		{[]int{4}, "node 4 out of range [0,4)"},
		{[]int{1, -1}, "node -1 out of range [0,4)"},
	} {
		if _, err := m.Induced(tc.nodes); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("Induced(%v) = %v, want error containing %q", tc.nodes, err, tc.want)
		}
	}
}
