package model_test

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
)

func TestBuilderRejects(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	potts := func(k int) model.Function {
		return model.Function{Kind: model.Potts, Shape: []int{k, k}, W: 1}
	}
	// Each case runs on a fresh builder for variables with 2, 3 and 2 labels.
	for _, tc := range []struct {
		name string
		call func(b *model.Builder) error
		want string
	}{
		{"NaN table entry", func(b *model.Builder) error { return b.AddTable([]int{0}, []float64{0, nan}) },
			"model: factor 0: table entry 1: NaN energy"},
		{"-Inf table entry", func(b *model.Builder) error { return b.AddTable([]int{1}, []float64{0, -inf, 1}) },
			"model: factor 0: table entry 1: -Inf energy"},
		{"NaN constant", func(b *model.Builder) error { return b.AddConstant(nan) }, "model: constant: NaN energy"},
		{"-Inf constant", func(b *model.Builder) error { return b.AddConstant(-inf) }, "model: constant: -Inf energy"},
		{"NaN in explicit function", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{2}, Table: []float64{nan, 0}})
			return err
		}, "model: function: table entry 0: NaN energy"},
		{"-Inf in explicit function", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{2}, Table: []float64{0, -inf}})
			return err
		}, "model: function: table entry 1: -Inf energy"},
		{"table too short", func(b *model.Builder) error { return b.AddTable([]int{0, 1}, make([]float64, 5)) },
			"explicit table has 5 entries, shape [2 3] needs 6"},
		{"table too long", func(b *model.Builder) error { return b.AddTable([]int{0}, make([]float64, 3)) },
			"explicit table has 3 entries, shape [2] needs 2"},
		{"empty table of order 0", func(b *model.Builder) error { return b.AddTable(nil, nil) },
			"explicit table has 0 entries, shape [] needs 1"},
		{"function table size", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{2, 2}, Table: make([]float64, 3)})
			return err
		}, "explicit table has 3 entries, shape [2 2] needs 4"},
		{"variable too large", func(b *model.Builder) error { return b.AddTable([]int{0, 3}, make([]float64, 4)) },
			"variable 3 out of range [0,3)"},
		{"negative variable", func(b *model.Builder) error { return b.AddTable([]int{-1}, make([]float64, 2)) },
			"variable -1 out of range [0,3)"},
		{"factor variable out of range", func(b *model.Builder) error {
			fn, _ := b.AddFunction(potts(2))
			return b.AddFactor(fn, 0, 7)
		}, "variable 7 out of range [0,3)"},
		{"repeated variable in table", func(b *model.Builder) error { return b.AddTable([]int{0, 0}, make([]float64, 4)) },
			"variable 0 appears twice"},
		{"repeated variable in factor", func(b *model.Builder) error {
			fn, _ := b.AddFunction(potts(2))
			return b.AddFactor(fn, 2, 2)
		}, "variable 2 appears twice"},
		{"function out of range", func(b *model.Builder) error { return b.AddFactor(0, 0, 1) },
			"function 0 out of range [0,0)"},
		{"negative function", func(b *model.Builder) error { return b.AddFactor(-1, 0) },
			"function -1 out of range"},
		{"factor order", func(b *model.Builder) error {
			fn, _ := b.AddFunction(potts(2))
			return b.AddFactor(fn, 0)
		}, "1 variables for a function of order 2"},
		{"factor label count", func(b *model.Builder) error {
			fn, _ := b.AddFunction(potts(2))
			return b.AddFactor(fn, 0, 1)
		}, "variable 1 has 3 labels, function argument 1 has 2"},
		{"label count 0 in shape", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{2, 0}})
			return err
		}, "label count 0 < 1"},
		{"table larger than MaxTableSize", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{1 << 15, 1 << 14}})
			return err
		}, "has more than 268435456 entries"},
		{"table size overflows int", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{1 << 40, 1 << 40, 1 << 40}})
			return err
		}, "has more than 268435456 entries"},
		{"parametric order", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{2, 2, 2}, W: 1})
			return err
		}, "potts function has order 3, want 2"},
		{"negative weight", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{2, 2}, W: -1})
			return err
		}, "potts weight -1: want finite and ≥ 0"},
		{"infinite weight", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.TruncatedLinear, Shape: []int{2, 2}, W: inf, T: 1})
			return err
		}, "truncated-linear weight +Inf"},
		{"NaN weight", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.TruncatedQuadratic, Shape: []int{2, 2}, W: nan, T: 1})
			return err
		}, "truncated-quadratic weight NaN"},
		{"zero truncation", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.TruncatedLinear, Shape: []int{2, 2}, W: 1})
			return err
		}, "truncated-linear truncation 0: want > 0"},
		{"NaN truncation", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.TruncatedQuadratic, Shape: []int{2, 2}, W: 1, T: nan})
			return err
		}, "truncated-quadratic truncation NaN"},
		{"unknown kind", func(b *model.Builder) error {
			_, err := b.AddFunction(model.Function{Kind: model.Kind(7), Shape: []int{2}})
			return err
		}, "unknown function kind 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := model.NewBuilder([]int{2, 3, 2})
			err := tc.call(b)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			// A rejected call does not poison the builder.
			m, err := b.Build()
			if err != nil {
				t.Fatalf("Build after a rejected call: %v", err)
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("Validate after a rejected call: %v", err)
			}
		})
	}
}

// TestBuilderRejectsTableOfHugeVariables checks that a factor whose table would exceed
// MaxTableSize is refused before anything is allocated (the product overflows int).
func TestBuilderRejectsTableOfHugeVariables(t *testing.T) {
	b := model.NewBuilder([]int{1 << 30, 1 << 30, 1 << 30})
	err := b.AddTable([]int{0, 1, 2}, nil)
	if err == nil || !contains(err.Error(), "more than 268435456 entries") {
		t.Fatalf("AddTable on 2^90 states: %v, want a size error", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_ = b.AddTable([]int{0, 1, 2}, nil)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing a huge table allocated %d bytes", n)
	}
}

func TestBuilderRejectsBadLabelCounts(t *testing.T) {
	for _, labels := range [][]int{{2, 0, 3}, {2, -3}} {
		b := model.NewBuilder(labels)
		want := "has 0 labels, want 1..2147483647"
		if labels[1] < 0 {
			want = "variable 1 has -3 labels, want 1..2147483647"
		}
		if err := b.AddTable([]int{0}, []float64{0, 1}); err == nil || !contains(err.Error(), want) {
			t.Errorf("NewBuilder(%v).AddTable: %v, want error containing %q", labels, err, want)
		}
		if err := b.AddConstant(1); err == nil || !contains(err.Error(), want) {
			t.Errorf("NewBuilder(%v).AddConstant: %v, want error containing %q", labels, err, want)
		}
		if _, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{2}, Table: []float64{0, 1}}); err == nil {
			t.Errorf("NewBuilder(%v).AddFunction: no error", labels)
		}
		if err := b.AddFactor(0, 0); err == nil {
			t.Errorf("NewBuilder(%v).AddFactor: no error", labels)
		}
		if _, err := b.Build(); err == nil || !contains(err.Error(), want) {
			t.Errorf("NewBuilder(%v).Build: %v, want error containing %q", labels, err, want)
		}
	}
}

func TestBuilderUnusableAfterBuild(t *testing.T) {
	b := model.NewBuilder([]int{2})
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	if err := b.AddTable([]int{0}, []float64{0, 1}); err == nil || !contains(err.Error(), "after Build") {
		t.Errorf("AddTable after Build: %v", err)
	}
	if _, err := b.Build(); err == nil {
		t.Error("second Build: no error")
	}
}

// TestBuilderCopiesInputs checks that callers may reuse every slice they pass.
func TestBuilderCopiesInputs(t *testing.T) {
	labels := []int{2, 2}
	table := []float64{0, 1, 2, 5}
	shape := []int{2, 2}
	ftable := []float64{1, 2, 3, 4}
	vars := []int{0, 1}
	b := model.NewBuilder(labels)
	if err := b.AddTable(vars, table); err != nil {
		t.Fatal(err)
	}
	fn, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: shape, Table: ftable})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddFactor(fn, vars...); err != nil {
		t.Fatal(err)
	}
	labels[0], table[3], shape[0], ftable[3], vars[0], vars[1] = 7, 9, 7, 9, 1, 0
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Energy([]int{1, 1}), 5.0+4; got != want {
		t.Errorf("Energy(1,1) = %v after the caller changed its slices, want %v", got, want)
	}
}

func TestInterning(t *testing.T) {
	b := model.NewBuilder([]int{3, 3, 3, 2})
	add := func(f model.Function) int {
		t.Helper()
		id, err := b.AddFunction(f)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	p1 := add(model.Function{Kind: model.Potts, Shape: []int{3, 3}, W: 1})
	p2 := add(model.Function{Kind: model.Potts, Shape: []int{3, 3}, W: 1, T: 5}) // T means nothing to Potts
	p3 := add(model.Function{Kind: model.Potts, Shape: []int{3, 3}, W: 2})
	tl := add(model.Function{Kind: model.TruncatedLinear, Shape: []int{3, 3}, W: 1, T: 2})
	tl2 := add(model.Function{Kind: model.TruncatedLinear, Shape: []int{3, 3}, W: 1, T: 3})
	e1 := add(model.Function{Kind: model.Explicit, Shape: []int{3}, Table: []float64{1, 2, 3}})
	e2 := add(model.Function{Kind: model.Explicit, Shape: []int{3}, Table: []float64{1, 2, 3}})
	e3 := add(model.Function{Kind: model.Explicit, Shape: []int{3}, Table: []float64{1, 2, 4}})
	if p1 != p2 || e1 != e2 {
		t.Errorf("identical functions got ids %d,%d and %d,%d; want equal pairs", p1, p2, e1, e2)
	}
	if p1 == p3 || tl == tl2 || e1 == e3 || p1 == tl {
		t.Errorf("different functions share an id: potts %d/%d, tl %d/%d, explicit %d/%d", p1, p3, tl, tl2, e1, e3)
	}
	// Tables given to AddTable are interned too, and with functions added directly.
	for v := range 3 {
		if err := b.AddTable([]int{v}, []float64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pair := range [][2]int{{0, 1}, {1, 2}, {2, 0}} {
		if err := b.AddTable(pair[:], []float64{0, 1, 1, 1, 0, 1, 1, 1, 0}); err != nil { // Potts W=1
			t.Fatal(err)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.NumFunctions(); got != 6 {
		t.Errorf("NumFunctions = %d, want 6 (potts 1, potts 2, two truncated linear, two explicit unary)", got)
	}
	for f := range m.NumFactors() {
		want := e1
		if len(m.FactorVars(f)) == 2 {
			want = p1
		}
		if got := m.FactorFunc(f); got != want {
			t.Errorf("factor %d uses function %d, want %d", f, got, want)
		}
	}
}

func TestBuildRejectsOverflowingConstants(t *testing.T) {
	b := model.NewBuilder([]int{2})
	for i := 0; i < 2; i++ {
		if err := b.AddConstant(-math.MaxFloat64); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "constant terms overflow") {
		t.Errorf("Build: %v, want an overflow error", err)
	}
}

// Parametric functions store no table, so their label counts are not bounded by
// MaxTableSize (a 2^15-label Potts term is a normal stereo or flow model).
func TestLargeParametricFunctionsAreAccepted(t *testing.T) {
	b := model.NewBuilder([]int{1 << 15, 1 << 15})
	p, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{1 << 15, 1 << 15}, W: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddFactor(p, 0, 1); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if e := m.Energy([]int{5, 30000}); e != 1 {
		t.Errorf("energy %v, want 1", e)
	}
}

// TestOwnedFunctionsAreKeptApart: AddOwnedFunction validates like AddFunction but
// neither copies nor shares: two equal tables get two functions, each the caller's
// slice.
func TestOwnedFunctionsAreKeptApart(t *testing.T) {
	b := model.NewBuilder([]int{2, 2})
	t1, t2 := []float64{0, 1, 2, 3}, []float64{0, 1, 2, 3}
	id1, err := b.AddOwnedFunction(model.Function{Kind: model.Explicit, Shape: []int{2, 2}, Table: t1})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := b.AddOwnedFunction(model.Function{Kind: model.Explicit, Shape: []int{2, 2}, Table: t2})
	if err != nil {
		t.Fatal(err)
	}
	if id1 == id2 {
		t.Fatalf("equal owned tables share function %d", id1)
	}
	if _, err := b.AddOwnedFunction(model.Function{Kind: model.Explicit, Shape: []int{2, 2}, Table: []float64{0, math.NaN(), 0, 0}}); err == nil {
		t.Fatal("a NaN entry was accepted")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddFactor(id1, 0, 1))
	must(b.AddFactor(id2, 1, 0))
	m, err := b.Build()
	must(err)
	if &m.Func(id1).Table[0] != &t1[0] || &m.Func(id2).Table[0] != &t2[0] {
		t.Error("owned tables were copied")
	}
	if e := m.Energy([]int{1, 0}); e != 2+1 {
		t.Errorf("energy of (1, 0) = %v, want 3", e)
	}
}
