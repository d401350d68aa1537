package trws

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// TestASolverIsBuiltTheSameOnAnyNumberOfCores: New lays out the edges, the
// unary terms, the penalty and the messages by ranges on every core; the
// solver it builds — every field, the tables' order and the differences' among
// them — is the one a single core builds, on grids of every edge kind in
// either argument order, with shared and own explicit tables, difference
// functions, several unary factors on a variable, forbidden states and a
// constant, and on grids in strips, whose width it finds alike; a model of
// higher order is refused alike.
func TestASolverIsBuiltTheSameOnAnyNumberOfCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer SmallRanges(1 << 10)() // these grids in several ranges
	// A stereo grid and a Potts grid in strips, the Potts grid with one more
	// edge across it not.
	stereo, potts := truncLinearGridAny(3, 96, 96, 16), random.PottsGrid(random.New(4), 100, 90, 2)
	pairs := append(gridPairs(100, 90), [2]int{0, 101})
	across := testModel(100*90, 2, func(t []float64) { t[1] = 1 }, pairs, func() model.Function {
		return model.Function{Kind: model.Potts, Shape: []int{2, 2}, W: 1}
	})
	for _, m := range []*model.Model{stereo, potts, across} {
		if s := builtAlike(t, m, fmt.Sprintf("%d variables", m.NumVars())); (s.rowWidth > 0) != (m != across) {
			t.Fatalf("%d variables: grid width %d", m.NumVars(), s.rowWidth)
		}
	}
	for seed := range uint64(3) {
		m := mixedKindsGrid(rand.New(rand.NewPCG(seed, 77)), 90, 80, seed == 1)
		s := builtAlike(t, m, fmt.Sprintf("seed %d", seed))
		if len(s.difs) == 0 || len(s.tables) == 0 {
			t.Fatalf("seed %d: %d differences and %d table entries: want both", seed, len(s.difs), len(s.tables))
		}
		// The unary terms and the penalty are one loop's over the factors in
		// order, bit for bit.
		u := make([]float64, len(s.u64))
		term, sum := map[int]float64{}, 0.0
		for f := range m.NumFactors() {
			fn := m.FactorFunction(f)
			if vars := m.FactorVars(f); len(vars) == 1 {
				for l := range m.NumLabels(int(vars[0])) {
					u[int(s.uoff[vars[0]])+l] += fn.Table[l]
				}
			}
			if _, ok := term[m.FactorFunc(f)]; !ok {
				if lo, hi := finiteExtent(fn); lo <= hi {
					term[m.FactorFunc(f)] = hi - lo + math.Max(math.Abs(lo), math.Abs(hi))
				} else {
					term[m.FactorFunc(f)] = 0
				}
			}
			sum += term[m.FactorFunc(f)]
		}
		if !slices.Equal(u, s.u64) {
			t.Errorf("seed %d: the unary terms are not summed in factor order", seed)
		}
		if p := Penalty(m); p != 2*sum+1 {
			t.Errorf("seed %d: penalty %v, summed in factor order %v", seed, p, 2*sum+1)
		}
	}
	two := make([]int, 3*4096)
	for v := range two {
		two[v] = 2
	}
	b := model.NewBuilder(two)
	for v := 0; v+2 < 3*4096; v += 3 {
		if err := b.AddTable([]int{v, v + 1}, []float64{0, 1, 1, 0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddTable([]int{5000, 5001, 5002}, []float64{0, 1, 2, 3, 4, 5, 6, 8}); err != nil {
		t.Fatal(err)
	}
	high, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		if _, err := New(high); err != ErrNotPairwise {
			t.Errorf("%d cores: a factor of order 3 gave %v", procs, err)
		}
	}
}

// builtAlike builds m's solver on 1, 2, 3 and 8 cores, laid out for 1, 2 and
// 3 strips, reports (as what) each that differs from one core's of the same
// layout in any field, and returns one core's in the nodes' order.
func builtAlike(t *testing.T, m *model.Model, what string) *Solver {
	t.Helper()
	var first *Solver
	for _, strips := range []int{3, 2, 1} {
		undo := byStrips(strips)
		var want *Solver
		for _, procs := range []int{1, 2, 3, 8} {
			runtime.GOMAXPROCS(procs)
			s, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = s
			} else if !reflect.DeepEqual(s, want) {
				t.Errorf("%s: the solver built on %d cores for %d strips differs from one core's", what, procs, strips)
			}
		}
		first = want
		undo()
	}
	return first
}

// mixedKindsGrid is a w×h grid of 1–6 labels (label maps of up to 8 for the
// difference functions) with every kind of edge term in random argument order:
// Potts, truncated linear and quadratic, explicit tables (some shared by many
// edges), differences; one to three unary factors a variable, a constant, and
// with forbidden set +Inf entries in some tables.
func mixedKindsGrid(rng *rand.Rand, w, h int, forbidden bool) *model.Model {
	n := w * h
	maps := make([]*model.LabelMap, n)
	labels := make([]int, n)
	for v := range maps {
		maps[v] = randomLabelMap(rng, 1+rng.IntN(6), 8)
		labels[v] = len(maps[v].Labels)
	}
	b := model.NewBuilder(labels)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	table := func(size int) []float64 {
		t := make([]float64, size)
		for i := range t {
			t[i] = rng.NormFloat64()
			if forbidden && i > 0 && rng.IntN(7) == 0 {
				t[i] = math.Inf(1)
			}
		}
		return t
	}
	shared := map[[2]int]int{} // an explicit function shared by the edges of one shape
	for v := range n {
		for range 1 + rng.IntN(3) {
			must(b.AddTable([]int{v}, table(labels[v])))
		}
		for _, nb := range []int{v + 1, v + w} {
			if (nb == v+1 && nb%w == 0) || nb >= n {
				continue
			}
			a, c := v, nb
			if rng.IntN(2) == 0 {
				a, c = c, a
			}
			ka, kc := labels[a], labels[c]
			var id int
			var err error
			switch rng.IntN(6) {
			case 0, 1, 2:
				kind := []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}[rng.IntN(3)]
				id, err = b.AddFunction(model.Function{Kind: kind, Shape: []int{ka, kc}, W: rng.Float64() * 2, T: 0.5 + rng.Float64()*4})
			case 3:
				id, err = b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{ka, kc}, Table: table(ka * kc)})
			case 4:
				var ok bool
				if id, ok = shared[[2]int{ka, kc}]; !ok {
					id, err = b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{ka, kc}, Table: table(ka * kc)})
					shared[[2]int{ka, kc}] = id
				}
			default:
				id, err = b.AddFunction(*randomDifference(rng, maps[a], maps[c]))
			}
			must(err)
			must(b.AddFactor(id, a, c))
		}
	}
	must(b.AddConstant(3.25))
	m, err := b.Build()
	must(err)
	return m
}
