package trws

import (
	"math"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// TestChecksInsideThePassesEqualTheCheck: on Potts models (8 labels and
// others, with per-edge weights and with ties) and on models of every other
// kind (truncated linear and quadratic, explicit tables, mixed label counts),
// the consistency labels, argmins and rounded labeling computed inside the
// backward pass (consistNode, then the check's rounding alone) are exactly
// those of the separate check, at every iteration.
func TestChecksInsideThePassesEqualTheCheck(t *testing.T) {
	for name, m := range map[string]*model.Model{
		"K=8 denoising":          random.PottsDenoising(random.New(1), 30, 20, 8, 1.2, 4, 2),
		"K=8 strong smoothing":   random.PottsDenoising(random.New(2), 25, 25, 8, 0.3, 4, 6),
		"K=3 grid, ties":         random.PottsGrid(random.New(3), 17, 13, 3),
		"K=5 denoising":          random.PottsDenoising(random.New(4), 21, 19, 5, 1.0, 4, 1.5),
		"K=8 grid, per-edge":     random.PottsGrid(random.New(5), 24, 16, 8),
		"K=2 strong, agreements": random.PottsDenoising(random.New(6), 40, 30, 2, 0.5, 4, 3),
		"K=2 denoising":          random.PottsDenoising(random.New(10), 30, 20, 2, 1.2, 4, 1),
		"K=2 grid, per-edge":     random.PottsGrid(random.New(12), 24, 16, 2),
		"K=4 denoising":          random.PottsDenoising(random.New(11), 30, 20, 4, 1.2, 4, 2),
		"K=4 grid, per-edge":     random.PottsGrid(random.New(13), 24, 16, 4),
		"K=2 ties":               tiedPottsGrid(14, 20, 15, 2),
		"K=3 ties":               tiedPottsGrid(17, 20, 15, 3),
		"K=3 denoising":          random.PottsDenoising(random.New(18), 30, 20, 3, 1.2, 4, 2),
		"K=6 ties":               tiedPottsGrid(19, 20, 15, 6),
		"K=7 denoising":          random.PottsDenoising(random.New(20), 30, 20, 7, 1.2, 4, 2),
		"K=12 grid (general)":    random.PottsGrid(random.New(21), 20, 15, 12),
		"K=4 ties":               tiedPottsGrid(15, 20, 15, 4),
		"K=8 ties":               tiedPottsGrid(16, 20, 15, 8),
		"parametric grid":        random.ParametricGrid(random.New(7), 20, 15, 6),
		"dense, mixed labels":    random.DensePairwise(random.New(8), 60, 5, 0.1),
		"frustrated":             random.FrustratedGrid(random.New(9), 12, 12),
	} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		agreed := false
		for it := 0; it < 40; it++ {
			s.forward()
			s.backward(true)
			if !s.fused {
				// Not a Potts model: the check is the separate pass; test
				// consistNode and primalLabels on it directly.
				s.fused = true
				s.consistAll()
			}
			c, p := engine{s}.Check()
			if s.fused {
				t.Fatalf("%s: the check did not use what the pass computed", name)
			}
			cons, arg, primal := slices.Clone(c), slices.Clone(s.argmin), slices.Clone(p)
			s.check()
			if !slices.Equal(cons, s.consLabel) || !slices.Equal(arg, s.argmin) || !slices.Equal(primal, s.primal) {
				t.Fatalf("%s, iteration %d: inside the passes %d consistent, the check %d; labelings equal %v",
					name, it, count(cons), count(s.consLabel), slices.Equal(primal, s.primal))
			}
			agreed = agreed || count(cons) > 0
		}
		if !agreed {
			t.Errorf("%s: no consistency label in 40 iterations: the comparison shows little", name)
		}
	}
}

func count(labels []int32) int {
	n := 0
	for _, l := range labels {
		if l >= 0 {
			n++
		}
	}
	return n
}

// consistAll runs consistNode over the nodes in the backward order, as the
// backward pass of a Potts model does, from the stored messages.
func (s *Solver) consistAll() {
	if s.chkD == nil {
		s.chkD = make([]float32, len(s.u32))
	}
	d := make([]float32, s.mk)
	for i := int32(s.n) - 1; i >= 0; i-- {
		s.sumInto(i, d[:s.labels[i]])
		s.consistNode(i, d[:s.labels[i]])
	}
}

// testModel builds a model of n nodes with k labels each: unary fills each
// node's unary table in turn, then each pair gets the function edge returns.
func testModel(n, k int, unary func(t []float64), pairs [][2]int, edge func() model.Function) *model.Model {
	b := model.NewBuilder(slices.Repeat([]int{k}, n))
	t := make([]float64, k)
	for v := range n {
		unary(t)
		if err := b.AddTable([]int{v}, t); err != nil {
			panic(err)
		}
	}
	for _, p := range pairs {
		fn, err := b.AddFunction(edge())
		if err == nil {
			err = b.AddFactor(fn, p[0], p[1])
		}
		if err != nil {
			panic(err)
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// gridPairs are the 4-neighbour edges of a w×h grid, row by row.
func gridPairs(w, h int) [][2]int {
	var pairs [][2]int
	for y := range h {
		for x := range w {
			for _, d := range [][2]int{{1, 0}, {0, 1}} {
				if x+d[0] < w && y+d[1] < h {
					pairs = append(pairs, [2]int{y*w + x, (y+d[1])*w + x + d[0]})
				}
			}
		}
	}
	return pairs
}

// tiedPottsGrid is a w×h Potts grid whose unary terms are 0, 1 or 2 and
// whose weights are 0.5 or 1: ties and near-ties everywhere, for the unique
// argmins and the rounding's first minimisers.
func tiedPottsGrid(seed uint64, w, h, k int) *model.Model {
	rng := random.New(seed)
	unary := func(t []float64) {
		for i := range t {
			t[i] = float64(rng.IntN(3))
			if rng.IntN(4) == 0 {
				t[i] += 1e-7 * rng.Float64() // within the consistency margin
			}
		}
	}
	return testModel(w*h, k, unary, gridPairs(w, h), func() model.Function {
		return model.Function{Kind: model.Potts, Shape: []int{k, k}, W: 0.5 * float64(1+rng.IntN(2))}
	})
}

// TestUnrolledPottsPassesEqualTheGeneralOnes: the passes written out for K = 2
// to 8 leave exactly the messages, bounds and consistency labels of the
// general Potts passes, bit for bit, iteration after iteration.
func TestUnrolledPottsPassesEqualTheGeneralOnes(t *testing.T) {
	for _, k := range []int{2, 3, 4, 5, 6, 7, 8} {
		for seed := range uint64(4) {
			m := random.PottsDenoising(random.New(20+seed), 23, 17, k, 0.8, 4, 1.5)
			switch seed {
			case 2:
				m = random.PottsGrid(random.New(30+seed), 19, 14, k) // a weight per edge
			case 3:
				m = tiedPottsGrid(40+seed, 19, 14, k)
			}
			a, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(m)
			if !a.allPotts || a.mk != k {
				t.Fatalf("K=%d: not a Potts model of the unrolled passes", k)
			}
			for it := range 25 {
				check := it%3 == 2
				a.forward() // the unrolled passes
				la := a.backward(check)
				if p := a.unrolled(); check && p.edges != nil {
					p.edges(a)
				}
				b.forwardPotts()
				b.fused = check
				if b.chkD == nil {
					b.chkD = make([]float32, len(b.u32))
				}
				lb := b.backwardPotts(check)
				if la != lb || !slices.Equal(a.msg, b.msg) {
					t.Fatalf("K=%d seed %d iteration %d: bounds %v and %v, messages equal %v", k, seed, it, la, lb, slices.Equal(a.msg, b.msg))
				}
				if check && (!slices.Equal(a.consLabel, b.consLabel) || !slices.Equal(a.argmin, b.argmin)) {
					t.Fatalf("K=%d seed %d iteration %d: consistency labels differ", k, seed, it)
				}
			}
		}
	}
}

// TestCheckRoundsTheStateTheIterationStartsFrom: on Potts models a check
// iteration rounds, in its forward pass, the labeling Kolmogorov's rounding
// gives for the messages the iteration starts from — assembly or Go passes,
// any label count; on other models the check rounds after the backward pass,
// as the separate check does. The consistency labels are the check's either
// way, and Solver.energy, which keeps the unaries of the labels it last saw,
// is the model's energy of each labeling.
func TestCheckRoundsTheStateTheIterationStartsFrom(t *testing.T) {
	for name, m := range map[string]*model.Model{
		"K=2 denoising":       random.PottsDenoising(random.New(31), 30, 20, 2, 1.2, 4, 1),
		"K=3 ties":            tiedPottsGrid(32, 20, 15, 3),
		"K=4 grid, per-edge":  random.PottsGrid(random.New(33), 24, 16, 4),
		"K=5 denoising":       random.PottsDenoising(random.New(34), 21, 19, 5, 1.0, 4, 1.5),
		"K=8 denoising":       random.PottsDenoising(random.New(35), 30, 20, 8, 1.2, 4, 2),
		"K=8 ties":            tiedPottsGrid(36, 20, 15, 8),
		"K=12 grid (general)": random.PottsGrid(random.New(37), 20, 15, 12),
		"parametric grid":     random.ParametricGrid(random.New(38), 20, 15, 6),
		"dense, mixed labels": random.DensePairwise(random.New(39), 60, 5, 0.1),
	} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := New(m)
		e := engine{s}
		for it := range 30 {
			check := it%3 == 2
			e.Iterate(check)
			if !check {
				ref.forward()
				ref.backward(false)
				continue
			}
			c, p := e.Check()
			if s.allPotts {
				ref.primalLabels() // the state the iteration started from
				want := slices.Clone(ref.primal)
				ref.forward()
				ref.backward(false)
				ref.check()
				copy(ref.primal, want)
			} else {
				ref.forward()
				ref.backward(false)
				ref.check()
			}
			if !slices.Equal(c, ref.consLabel) || !slices.Equal(p, ref.primal) {
				t.Fatalf("%s, iteration %d: consistency labels equal %v, labelings equal %v", name, it, slices.Equal(c, ref.consLabel), slices.Equal(p, ref.primal))
			}
			x := make([]int, len(p))
			for v, l := range p {
				x[v] = int(l)
			}
			if a, b := e.Energy(p), m.Energy(x); a != b && math.Abs(a-b) > 1e-12*math.Max(1, math.Abs(b)) {
				t.Fatalf("%s, iteration %d: energy %v, the model's %v", name, it, a, b)
			}
		}
	}
}

// TestPottsEnergyIsTheModelsEnergy: the solver's energy of Potts models (the
// unaries from its cache of the labels it last saw, the weights as float64s)
// is the model's energy to rounding, labelings changing at random between
// calls, and follows AddUnary.
func TestPottsEnergyIsTheModelsEnergy(t *testing.T) {
	rng := random.New(40)
	for _, m := range []*model.Model{
		random.PottsDenoising(random.New(41), 13, 9, 4, 1.2, 4, 1),
		random.PottsGrid(random.New(42), 11, 8, 8),
		tiedPottsGrid(43, 9, 7, 3),
	} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		if !s.allPotts {
			t.Fatal("not on the Potts passes")
		}
		x, xi := make([]int32, m.NumVars()), make([]int, m.NumVars())
		added := make([]float64, m.NumVars()) // the AddUnary deltas at each variable's label 0
		for it := range 40 {
			for v := range x {
				if it%2 == 0 || rng.IntN(10) == 0 { // every label new, or a few
					x[v] = int32(rng.IntN(m.NumLabels(v)))
				}
				xi[v] = int(x[v])
			}
			if it == 20 {
				for v := range added {
					delta := make([]float64, m.NumLabels(v))
					delta[0], added[v] = float64(v%3), float64(v%3)
					if err := s.AddUnary(v, delta); err != nil {
						t.Fatal(err)
					}
				}
			}
			b := m.Energy(xi)
			for v, l := range xi {
				if l == 0 {
					b += added[v]
				}
			}
			if a := s.energy(x); a != b && math.Abs(a-b) > 1e-12*math.Max(1, math.Abs(b)) {
				t.Fatalf("iteration %d: solver %v, model %v", it, a, b)
			}
		}
	}
}

// A check's rounding whose energy cannot beat the best labeling's is skipped
// (record): notBetter may say so only when energy, rounding included, says it
// too, and says it wherever the difference is clear.
func TestRecordSkipsOnlyLabelingsThatAreNotBetter(t *testing.T) {
	rng := random.New(50)
	for mi, m := range []*model.Model{
		random.PottsDenoising(random.New(51), 13, 9, 4, 1.2, 4, 1),
		random.PottsGrid(random.New(52), 11, 8, 8),
		tiedPottsGrid(53, 9, 7, 3),
	} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		n := m.NumVars()
		x, ref := make([]int32, n), make([]int32, n)
		skipped, clear := 0, 0
		for it := range 400 {
			if it == 200 {
				// Terms of 1e16 make every sum round by units: the margin must
				// follow the unaries (AddUnary), or rounded sums reverse below it.
				for v := range n {
					delta := make([]float64, m.NumLabels(v))
					delta[rng.IntN(len(delta))] = 1e16
					if err := s.AddUnary(v, delta); err != nil {
						t.Fatal(err)
					}
				}
			}
			for v := range ref {
				ref[v] = int32(rng.IntN(m.NumLabels(v)))
			}
			copy(x, ref)
			for range 1 + rng.IntN(n/4) {
				v := rng.IntN(n)
				x[v] = int32(rng.IntN(m.NumLabels(v)))
			}
			ex, er := s.energy(x), s.energy(ref)
			nb := s.notBetter(x, ref)
			if nb {
				skipped++
				if ex < er {
					t.Fatalf("model %d, draw %d: notBetter, but energy %v < the reference's %v", mi, it, ex, er)
				}
			}
			if it < 200 && ex-er > 1e-9*math.Max(1, math.Abs(er)) {
				clear++
				if !nb {
					t.Fatalf("model %d, draw %d: energy %v clearly above the reference's %v, notBetter says no", mi, it, ex, er)
				}
			}
		}
		if skipped == 0 || clear == 0 {
			t.Fatalf("model %d: %d skipped, %d clearly worse: the draws test nothing", mi, skipped, clear)
		}
	}
}
