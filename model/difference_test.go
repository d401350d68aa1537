package model_test

import (
	"math"
	"testing"

	"github.com/partopt/partopt/model"
)

// TestDifferenceIsTheMappedDifferenceOfItsBase: a Difference function's value is
// base(L(a), L(b)) − base(P(a), P(b)) for every base kind; Range bounds |value|.
func TestDifferenceIsTheMappedDifferenceOfItsBase(t *testing.T) {
	x := &model.LabelMap{Labels: []int{0, 2, 5}, Images: []int{2, 2, 5}}
	y := &model.LabelMap{Labels: []int{1, 3}, Images: []int{1, 1}}
	for _, base := range []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic} {
		f := model.Function{Kind: model.Difference, Base: base, Shape: []int{3, 2}, W: 1.5, T: 4, Args: [2]*model.LabelMap{x, y}}
		b := model.Function{Kind: base, Shape: []int{6, 6}, W: 1.5, T: 4}
		for a := range 3 {
			for c := range 2 {
				want := b.Pairwise(x.Labels[a], y.Labels[c]) - b.Pairwise(x.Images[a], y.Images[c])
				if got := f.Value([]int{a, c}); got != want {
					t.Errorf("%v: g(%d,%d) = %v, want %v", base, a, c, got, want)
				}
				if math.Abs(want) > f.Range() {
					t.Errorf("%v: |g(%d,%d)| = %v above Range %v", base, a, c, want, f.Range())
				}
			}
		}
	}
}

// TestBuilderKeepsDifferencesOfOtherMapsApart: two Difference functions with equal
// parameters and different label maps stay two functions.
func TestBuilderKeepsDifferencesOfOtherMapsApart(t *testing.T) {
	x := &model.LabelMap{Labels: []int{0, 1}, Images: []int{0, 0}}
	y := &model.LabelMap{Labels: []int{0, 1}, Images: []int{0, 1}}
	b := model.NewBuilder([]int{2, 2, 2})
	f1, err := b.AddFunction(model.Function{Kind: model.Difference, Base: model.Potts, Shape: []int{2, 2}, W: 1, Args: [2]*model.LabelMap{x, y}})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := b.AddFunction(model.Function{Kind: model.Difference, Base: model.Potts, Shape: []int{2, 2}, W: 1, Args: [2]*model.LabelMap{y, y}})
	if err != nil {
		t.Fatal(err)
	}
	if f1 == f2 {
		t.Fatal("differences of other label maps were merged into one function")
	}
	if err := b.AddFactor(f1, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.AddFactor(f2, 1, 2); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	// g(1,0) on (0,1): [1≠0] − [0≠0] = 1; on (1,2) the identity map gives 0.
	if e := m.Energy([]int{1, 0, 0}); e != 1 {
		t.Fatalf("energy %v, want 1", e)
	}
}

// TestDifferenceValidation: bad bases, shapes, maps and labels are refused.
func TestDifferenceValidation(t *testing.T) {
	ok := &model.LabelMap{Labels: []int{0, 1}, Images: []int{0, 0}}
	for name, f := range map[string]model.Function{
		"explicit base":  {Kind: model.Difference, Base: model.Explicit, Shape: []int{2, 2}, W: 1, Args: [2]*model.LabelMap{ok, ok}},
		"missing map":    {Kind: model.Difference, Base: model.Potts, Shape: []int{2, 2}, W: 1, Args: [2]*model.LabelMap{ok, nil}},
		"short map":      {Kind: model.Difference, Base: model.Potts, Shape: []int{3, 2}, W: 1, Args: [2]*model.LabelMap{ok, ok}},
		"negative label": {Kind: model.Difference, Base: model.Potts, Shape: []int{2, 2}, W: 1, Args: [2]*model.LabelMap{ok, {Labels: []int{-1, 0}, Images: []int{0, 0}}}},
		"huge label":     {Kind: model.Difference, Base: model.Potts, Shape: []int{2, 2}, W: 1, Args: [2]*model.LabelMap{ok, {Labels: []int{0, model.MaxMappedLabel + 1}, Images: []int{0, 0}}}},
		"order 3":        {Kind: model.Difference, Base: model.Potts, Shape: []int{2, 2, 2}, W: 1, Args: [2]*model.LabelMap{ok, ok}},
		"NaN weight":     {Kind: model.Difference, Base: model.Potts, Shape: []int{2, 2}, W: math.NaN(), Args: [2]*model.LabelMap{ok, ok}},
		"zero T":         {Kind: model.Difference, Base: model.TruncatedLinear, Shape: []int{2, 2}, W: 1, Args: [2]*model.LabelMap{ok, ok}},
	} {
		if f.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRowIsPairwise: Row(a) is θ(a, ·) for every kind, and the scratch it fills
// for parametric kinds never writes into an explicit table it returned before.
func TestRowIsPairwise(t *testing.T) {
	x := &model.LabelMap{Labels: []int{0, 2}, Images: []int{0, 0}}
	y := &model.LabelMap{Labels: []int{1, 3, 4}, Images: []int{1, 1, 4}}
	table := []float64{1, 2, 3, 4, 5, 6}
	fns := []model.Function{
		{Kind: model.Explicit, Shape: []int{2, 3}, Table: table},
		{Kind: model.Potts, Shape: []int{2, 3}, W: 2},
		{Kind: model.TruncatedLinear, Shape: []int{2, 3}, W: 1.5, T: 2},
		{Kind: model.TruncatedQuadratic, Shape: []int{2, 3}, W: 0.5, T: 3},
		{Kind: model.Difference, Base: model.TruncatedLinear, Shape: []int{2, 3}, W: 1, T: 4, Args: [2]*model.LabelMap{x, y}},
		{Kind: model.Difference, Base: model.Potts, Shape: []int{2, 3}, W: 1.25, Args: [2]*model.LabelMap{x, y}},
		{Kind: model.Potts, Shape: []int{3, 2}, W: 0.75}, // a row longer than the other side
	}
	var buf []float64
	for range 2 {
		for _, f := range fns {
			for a := range f.Shape[0] {
				row := f.Row(a, &buf)
				for b, v := range row {
					if want := f.Pairwise(a, b); v != want {
						t.Fatalf("%v: Row(%d)[%d] = %v, want %v", f.Kind, a, b, v, want)
					}
				}
			}
		}
	}
	for i, v := range table {
		if v != float64(i+1) {
			t.Fatalf("the explicit table was overwritten: %v", table)
		}
	}
}
