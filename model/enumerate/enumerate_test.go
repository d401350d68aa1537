package enumerate_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/enumerate"
	"github.com/partopt/partopt/model/random"
)

// build runs add on a builder for labels and returns the model.
func build(t *testing.T, labels []int, add func(b *model.Builder) error) *model.Model {
	t.Helper()
	b := model.NewBuilder(labels)
	if err := add(b); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func potts(b *model.Builder, w float64, ka, kb, u, v int) error {
	fn, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{ka, kb}, W: w})
	if err != nil {
		return err
	}
	return b.AddFactor(fn, u, v)
}

func TestMinimizeHandMade(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		labels []int
		add    func(b *model.Builder) error
		want   []int
		energy float64
	}{
		{
			// u0 = [1 0], u1 = [0 .5 +Inf], u2 = [.2 0], Potts 2 on (0,1), Potts .1 on (1,2).
			// x1 = 0 gives at best 1 + 0 + .1; x1 = 1 gives .5 at (1,1,1).
			"chain", []int{2, 3, 2}, func(b *model.Builder) error {
				return joinErr(
					b.AddTable([]int{0}, []float64{1, 0}),
					b.AddTable([]int{1}, []float64{0, 0.5, inf}),
					b.AddTable([]int{2}, []float64{0.2, 0}),
					potts(b, 2, 2, 3, 0, 1),
					potts(b, 0.1, 3, 2, 1, 2),
				)
			}, []int{1, 1, 1}, 0.5,
		},
		{
			"ties: first labeling in lexicographic order", []int{2, 2}, func(b *model.Builder) error {
				return b.AddTable([]int{0, 1}, []float64{1, 0, 0, 1})
			}, []int{0, 1}, 0,
		},
		{
			"only one feasible labeling", []int{2, 2, 1}, func(b *model.Builder) error {
				return joinErr(
					b.AddTable([]int{1, 0}, []float64{inf, inf, inf, 5}),
					b.AddConstant(-1),
					b.AddTable([]int{2, 0}, []float64{0.5, 0.25}),
				)
			}, []int{1, 1, 0}, 4.25,
		},
		{
			"higher order", []int{2, 2, 2}, func(b *model.Builder) error {
				// Energy −1 at (1,0,1) only, 0 elsewhere, one forbidden state.
				t := make([]float64, 8)
				t[5], t[7] = -1, inf
				return b.AddTable([]int{0, 1, 2}, t)
			}, []int{1, 0, 1}, -1,
		},
		{
			"every labeling forbidden", []int{2, 2}, func(b *model.Builder) error {
				return joinErr(
					b.AddTable([]int{0}, []float64{inf, 1}),
					b.AddTable([]int{0, 1}, []float64{0, 0, inf, inf}),
				)
			}, []int{0, 0}, inf,
		},
		{
			"infinite offset", []int{3}, func(b *model.Builder) error {
				return joinErr(b.AddTable([]int{0}, []float64{1, 0, 2}), b.AddConstant(inf))
			}, []int{0}, inf,
		},
		{
			"no variables", nil, func(b *model.Builder) error { return b.AddConstant(2.5) }, []int{}, 2.5,
		},
		{
			"1-label variables only", []int{1, 1}, func(b *model.Builder) error {
				return b.AddTable([]int{0, 1}, []float64{3})
			}, []int{0, 0}, 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := build(t, tc.labels, tc.add)
			x, e, err := enumerate.Minimize(m, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(x, tc.want) || !closeTo(e, tc.energy) {
				t.Errorf("Minimize = %v, %v; want %v, %v", x, e, tc.want, tc.energy)
			}
		})
	}
}

func joinErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func closeTo(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}

func TestMinimizeLimit(t *testing.T) {
	m := build(t, []int{2, 3, 2}, func(b *model.Builder) error { return nil })
	if _, _, err := enumerate.Minimize(m, 12); err != nil {
		t.Errorf("12 labelings with limit 12: %v", err)
	}
	if _, _, err := enumerate.Minimize(m, 11); err == nil || !strings.Contains(err.Error(), "more than 11 labelings") {
		t.Errorf("12 labelings with limit 11: %v, want a limit error", err)
	}
	// 2^30 labels on 40 variables overflows any integer: refused, not wrapped around.
	labels := make([]int, 40)
	for v := range labels {
		labels[v] = 1 << 30
	}
	huge := build(t, labels, func(b *model.Builder) error { return nil })
	if _, _, err := enumerate.Minimize(huge, math.MaxInt); err == nil {
		t.Error("2^1200 labelings: no error")
	}
	if n, err := enumerate.Count(m, 100); n != 12 || err != nil {
		t.Errorf("Count = %d, %v; want 12", n, err)
	}
}

// minByRecursion is the independent reference: every labeling, scored with m.Energy.
func minByRecursion(m *model.Model) float64 {
	x := make([]int, m.NumVars())
	best := math.Inf(1)
	var rec func(v int)
	rec = func(v int) {
		if v == len(x) {
			best = min(best, m.Energy(x))
			return
		}
		for l := range m.NumLabels(v) {
			x[v] = l
			rec(v + 1)
		}
	}
	rec(0)
	return best
}

func TestMinimizeMatchesRecursiveEnumeration(t *testing.T) {
	gens := []struct {
		name string
		gen  func(rng *rand.Rand) *model.Model
	}{
		{"PottsGrid", func(rng *rand.Rand) *model.Model { return random.PottsGrid(rng, 3, 2, 3) }},
		{"DensePairwise", func(rng *rand.Rand) *model.Model { return random.DensePairwise(rng, 6, 4, 0.6) }},
		{"HigherOrder", func(rng *rand.Rand) *model.Model { return random.HigherOrder(rng, 6, 3, 4, 14) }},
		{"HigherOrder forbidden", func(rng *rand.Rand) *model.Model {
			// Many dense factors: most labelings are forbidden, which exercises pruning.
			return random.HigherOrder(rng, 7, 3, 3, 40)
		}},
	}
	for _, g := range gens {
		t.Run(g.name, func(t *testing.T) {
			for seed := uint64(0); seed < 25; seed++ {
				m := g.gen(random.New(seed))
				x, e, err := enumerate.Minimize(m, 1<<16)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.CheckLabeling(x); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if got := m.Energy(x); got != e {
					t.Fatalf("seed %d: returned energy %v, Energy(%v) = %v", seed, e, x, got)
				}
				if want := minByRecursion(m); !closeTo(e, want) {
					t.Fatalf("seed %d: Minimize energy %v at %v, minimum by recursion %v", seed, e, x, want)
				}
				rng := random.New(seed + 77)
				for range 50 {
					y := random.Labeling(rng, m)
					if ey := m.Energy(y); ey < e && !closeTo(ey, e) {
						t.Fatalf("seed %d: Energy(%v) = %v below the optimum %v", seed, y, ey, e)
					}
				}
			}
		})
	}
}

// BenchmarkMinimize solves a 4×3 Potts grid with 3 labels (531441 labelings).
func BenchmarkMinimize(b *testing.B) {
	m := random.PottsGrid(random.New(1), 4, 3, 3)
	for b.Loop() {
		if _, _, err := enumerate.Minimize(m, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
