package model_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// handModel has variables with 2, 3, 1 and 2 labels and
//
//	E(x) = 0.5 (AddConstant) + 0.25 (order-0 function) + 0.125 (order-0 table)
//	     + u1[x1]                 u1 = [0, 1, +Inf]
//	     + p01[x0][x1]            p01 = [[.1 .2 .3] [.4 .5 .6]]
//	     + 2·[x3 ≠ x0]            Potts function on (3, 0)
//	     + t21[x2][x1]            t21 = [[1 2 3]], variable 2 has one label
//	     + tern[x1][x3][x0]       tern[i] = i (flat index), except tern[1][1][1] = +Inf
func handModel(t *testing.T) *model.Model {
	t.Helper()
	inf := math.Inf(1)
	b := model.NewBuilder([]int{2, 3, 1, 2})
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(b.AddConstant(0.5))
	c, err := b.AddFunction(model.Function{Kind: model.Explicit, Table: []float64{0.25}})
	check(err)
	check(b.AddFactor(c))
	check(b.AddTable(nil, []float64{0.125}))
	check(b.AddTable([]int{1}, []float64{0, 1, inf}))
	check(b.AddTable([]int{0, 1}, []float64{.1, .2, .3, .4, .5, .6}))
	p, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{2, 2}, W: 2})
	check(err)
	check(b.AddFactor(p, 3, 0))
	check(b.AddTable([]int{2, 1}, []float64{1, 2, 3}))
	tern := make([]float64, 12)
	for i := range tern {
		tern[i] = float64(i)
	}
	tern[1*4+1*2+1] = inf
	check(b.AddTable([]int{1, 3, 0}, tern))
	m, err := b.Build()
	check(err)
	return m
}

func TestEnergyOfHandMadeModel(t *testing.T) {
	m := handModel(t)
	if got := m.Offset(); got != 0.875 {
		t.Errorf("Offset = %v, want 0.875 (three order-0 terms)", got)
	}
	if got := m.NumFactors(); got != 5 {
		t.Errorf("NumFactors = %d, want 5 (order-0 terms are folded into the offset)", got)
	}
	for _, tc := range []struct {
		x    []int
		want float64
	}{
		{[]int{0, 0, 0, 0}, 0.875 + 0 + .1 + 0 + 1 + 0},
		{[]int{1, 1, 0, 0}, 0.875 + 1 + .5 + 2 + 2 + 5},
		{[]int{0, 1, 0, 1}, 0.875 + 1 + .2 + 2 + 2 + 6},
		{[]int{1, 0, 0, 1}, 0.875 + 0 + .4 + 0 + 1 + 3},
		{[]int{0, 2, 0, 0}, math.Inf(1)}, // forbidden unary label
		{[]int{1, 1, 0, 1}, math.Inf(1)}, // forbidden ternary state
	} {
		if got := m.Energy(tc.x); !sameEnergy(got, tc.want) {
			t.Errorf("Energy(%v) = %v, want %v", tc.x, got, tc.want)
		}
		if err := m.CheckLabeling(tc.x); err != nil {
			t.Errorf("CheckLabeling(%v): %v", tc.x, err)
		}
	}
	if err := m.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestEnergyIsSumOfFactorValues(t *testing.T) {
	for _, nm := range randomModels() {
		m := nm.m
		rng := newRand(nm.seed)
		for range 20 {
			x := testLabeling(rng, m)
			sum := m.Offset()
			for f := range m.NumFactors() {
				fn := m.FactorFunction(f)
				args := make([]int, fn.Order())
				for d, v := range m.FactorVars(f) {
					args[d] = x[v]
				}
				if a, b := fn.Value(args), m.FactorValue(f, x); a != b {
					t.Fatalf("%s seed %d: factor %d: Function.Value %v, FactorValue %v", nm.gen, nm.seed, f, a, b)
				}
				sum += m.FactorValue(f, x)
			}
			if e := m.Energy(x); e != sum {
				t.Fatalf("%s seed %d: Energy(%v) = %v, sum of factors %v", nm.gen, nm.seed, x, e, sum)
			}
		}
	}
}

func TestInfiniteConstantForbidsEverything(t *testing.T) {
	b := model.NewBuilder([]int{2})
	if err := b.AddConstant(math.Inf(1)); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range [][]int{{0}, {1}} {
		if e := m.Energy(x); !math.IsInf(e, 1) {
			t.Errorf("Energy(%v) = %v, want +Inf", x, e)
		}
	}
}

func TestEmptyModel(t *testing.T) {
	b := model.NewBuilder(nil)
	if err := b.AddConstant(3); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if m.NumVars() != 0 || m.NumFactors() != 0 || m.Energy(nil) != 3 {
		t.Errorf("empty model: %d vars, %d factors, energy %v; want 0, 0, 3", m.NumVars(), m.NumFactors(), m.Energy(nil))
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
}

func TestCheckLabelingRejects(t *testing.T) {
	m := handModel(t)
	for _, tc := range []struct {
		x    []int
		want string
	}{
		{[]int{0, 0, 0}, "3 labels, model has 4 variables"},
		{[]int{0, 3, 0, 0}, "variable 1: label 3 out of range [0,3)"},
		{[]int{-1, 0, 0, 0}, "variable 0: label -1 out of range"},
		{[]int{0, 0, 1, 0}, "variable 2: label 1 out of range [0,1)"},
	} {
		err := m.CheckLabeling(tc.x)
		if err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("CheckLabeling(%v) = %v, want error containing %q", tc.x, err, tc.want)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[model.Kind]string{
		model.Explicit: "explicit", model.Potts: "potts", model.TruncatedLinear: "truncated-linear",
		model.TruncatedQuadratic: "truncated-quadratic", model.Kind(9): "kind(9)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestValidateAcceptsGeneratedModels(t *testing.T) {
	for _, nm := range randomModels() {
		if err := nm.m.Validate(); err != nil {
			t.Errorf("%s seed %d: %v", nm.gen, nm.seed, err)
		}
	}
}

// TestEnergyIsTheSumInFactorOrderOnAnyNumberOfCores: a large model's energy,
// whose factors' values are looked up on every core a block at a time, is
// the sum of the factors' values in factor order, bit for bit, on 1, 2, 3
// and 8 cores — with a constant, and +Inf where a labeling takes a forbidden
// state.
func TestEnergyIsTheSumInFactorOrderOnAnyNumberOfCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := random.New(5)
	m := random.PottsGrid(rng, 300, 250, 3)
	_, b, err := m.InducedBuilder(seqInts(m.NumVars()))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddConstant(0.1); err != nil {
		t.Fatal(err)
	}
	if err := b.AddTable([]int{7}, []float64{0, math.Inf(1), 1}); err != nil {
		t.Fatal(err)
	}
	if m, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	if m.NumFactors() < 3<<16 {
		t.Fatalf("%d factors: the blocks are not tested", m.NumFactors())
	}
	for trial := range 4 {
		x := random.Labeling(rng, m)
		x[7] = trial % 2 // label 1 of variable 7 is forbidden
		want := m.Offset()
		for f := range m.NumFactors() {
			want += m.FactorValue(f, x)
		}
		if math.IsInf(want, 1) != (trial%2 == 1) {
			t.Fatalf("trial %d: energy %v", trial, want)
		}
		for _, procs := range []int{1, 2, 3, 8} {
			runtime.GOMAXPROCS(procs)
			if e := m.Energy(x); e != want && !(math.IsInf(e, 1) && math.IsInf(want, 1)) {
				t.Errorf("trial %d, %d cores: energy %v, summed in factor order %v", trial, procs, e, want)
			}
		}
	}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
