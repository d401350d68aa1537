// Package random generates small random models for tests. Every generator is a pure
// function of the *rand.Rand it is given, so a seed names a model:
//
//	rng := random.New(7)
//	m := random.DensePairwise(rng, 6, 3, 0.5)
//	x := random.Labeling(rng, m)
//	e := m.Energy(x)
//
// The models exercise what solvers and the model package must handle: mixed label
// counts including 1-label variables, +Inf (forbidden) entries, parametric Potts and
// truncated functions, tables that AddTable turns into parametric functions, order-0
// constants and higher-order factors. Every table value is finite or +Inf, never NaN
// or −Inf, and the all-zero labeling always has finite energy, so no model is
// infeasible. Generators panic on invalid parameters: they are for tests.
package random

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/partopt/partopt/model"
)

// probInf is the probability that a table entry that may be forbidden is +Inf.
const probInf = 0.08

// New returns a generator seeded with seed (PCG, the second word derived from seed).
func New(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Labeling returns a uniformly random labeling of m.
func Labeling(rng *rand.Rand, m *model.Model) []int {
	x := make([]int, m.NumVars())
	for v := range x {
		x[v] = rng.IntN(m.NumLabels(v))
	}
	return x
}

// PottsGrid returns a w×h 4-connected grid (variable y·w+x) with k labels per variable,
// unary tables with values in [0,1) and a Potts function on every edge. Edge weights
// are positive; about half the edges share one of three common weights, so the model
// has fewer functions than edges.
func PottsGrid(rng *rand.Rand, w, h, k int) *model.Model {
	if w < 0 || h < 0 || k < 1 {
		panic(fmt.Sprintf("random: PottsGrid(%d, %d, %d): want w, h ≥ 0 and k ≥ 1", w, h, k))
	}
	labels := make([]int, w*h)
	for v := range labels {
		labels[v] = k
	}
	b := model.NewBuilder(labels)
	t := make([]float64, k)
	for v := range labels {
		for i := range t {
			t[i] = rng.Float64()
		}
		must(b.AddTable([]int{v}, t))
	}
	shared := [3]float64{0.25, 0.5, 1}
	edge := func(u, v int) {
		wt := shared[rng.IntN(len(shared))]
		if rng.IntN(2) == 0 {
			wt = 0.05 + rng.Float64()
		}
		fn, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{k, k}, W: wt})
		must(err)
		must(b.AddFactor(fn, u, v))
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := y*w + x
			if x+1 < w {
				edge(v, v+1)
			}
			if y+1 < h {
				edge(v, v+w)
			}
		}
	}
	return build(b)
}

// ParametricGrid returns a w×h 4-connected grid (variable y·w+x) with label counts in
// [1, k], unary tables with values in [0, 2) and a few forbidden labels (never label
// 0), and on every edge a random Potts, truncated linear or truncated quadratic term
// (truncations 1, 2, 2.5, 4 or none): the kinds of stereo and segmentation models.
func ParametricGrid(rng *rand.Rand, w, h, k int) *model.Model {
	if w < 0 || h < 0 || k < 1 {
		panic(fmt.Sprintf("random: ParametricGrid(%d, %d, %d): want w, h ≥ 0 and k ≥ 1", w, h, k))
	}
	labels := randomLabels(rng, w*h, k)
	b := model.NewBuilder(labels)
	for v, kv := range labels {
		t := make([]float64, kv)
		for l := range t {
			t[l] = 2 * rng.Float64()
			if l > 0 && rng.IntN(12) == 0 {
				t[l] = math.Inf(1)
			}
		}
		must(b.AddTable([]int{v}, t))
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for _, u := range [][2]int{{x + 1, y}, {x, y + 1}} {
				if u[0] >= w || u[1] >= h {
					continue
				}
				a, c := y*w+x, u[1]*w+u[0]
				f := parametric(rng, []int{labels[a], labels[c]})
				if f.Kind != model.Potts {
					f.T = []float64{1, 2, 2.5, 4, math.Inf(1)}[rng.IntN(5)]
				}
				fn, err := b.AddFunction(f)
				must(err)
				must(b.AddFactor(fn, a, c))
			}
		}
	}
	return build(b)
}

// DensePairwise returns n variables with label counts in [1, maxLabels] (about one in
// eight has a single label), a unary table on every variable and a pairwise table on
// each pair of variables with probability density. Values lie in [−1, 1); unary
// entries other than label 0 and pairwise entries other than (0, 0) are +Inf with a
// small probability. About one pairwise table in five is a constant plus a Potts term,
// which AddTable stores as a Potts function.
func DensePairwise(rng *rand.Rand, n, maxLabels int, density float64) *model.Model {
	if n < 0 || maxLabels < 1 || !(density >= 0 && density <= 1) {
		panic(fmt.Sprintf("random: DensePairwise(%d, %d, %v): want n ≥ 0, maxLabels ≥ 1, density in [0,1]", n, maxLabels, density))
	}
	labels := randomLabels(rng, n, maxLabels)
	b := model.NewBuilder(labels)
	for v := range labels {
		must(b.AddTable([]int{v}, randomTable(rng, labels[v])))
	}
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if rng.Float64() >= density {
				continue
			}
			a, c := u, v
			if rng.IntN(2) == 0 {
				a, c = v, u
			}
			ka, kc := labels[a], labels[c]
			var t []float64
			if rng.IntN(5) == 0 {
				t = pottsTable(rng, ka, kc)
			} else {
				t = randomTable(rng, ka*kc)
			}
			must(b.AddTable([]int{a, c}, t))
		}
	}
	return build(b)
}

// HigherOrder returns n variables with label counts in [1, maxLabels] and nFactors
// random factors of orders 0..maxOrder (at most n) on distinct random variables.
// Most are explicit tables with values in [−1, 1) whose entries other than the
// all-zero one are +Inf with a small probability; some pairwise factors are Potts,
// truncated linear or truncated quadratic functions (truncation sometimes +Inf, weight
// sometimes 0), and order 0 gives a constant, added either with AddConstant or as an
// order-0 function.
func HigherOrder(rng *rand.Rand, n, maxLabels, maxOrder, nFactors int) *model.Model {
	if n < 0 || maxLabels < 1 || maxOrder < 0 || nFactors < 0 {
		panic(fmt.Sprintf("random: HigherOrder(%d, %d, %d, %d): want n, maxOrder, nFactors ≥ 0 and maxLabels ≥ 1", n, maxLabels, maxOrder, nFactors))
	}
	labels := randomLabels(rng, n, maxLabels)
	b := model.NewBuilder(labels)
	maxOrder = min(maxOrder, n)
	for range nFactors {
		r := rng.IntN(maxOrder + 1)
		vars := rng.Perm(n)[:r]
		shape := make([]int, r)
		size := 1
		for d, v := range vars {
			shape[d] = labels[v]
			size *= labels[v]
		}
		switch {
		case r == 0 && rng.IntN(2) == 0:
			must(b.AddConstant(2*rng.Float64() - 1))
		case r == 0:
			fn, err := b.AddFunction(model.Function{Kind: model.Explicit, Table: []float64{2*rng.Float64() - 1}})
			must(err)
			must(b.AddFactor(fn))
		case r == 2 && rng.IntN(4) == 0:
			fn, err := b.AddFunction(parametric(rng, shape))
			must(err)
			must(b.AddFactor(fn, vars...))
		default:
			must(b.AddTable(vars, randomTable(rng, size)))
		}
	}
	return build(b)
}

// randomLabels draws n label counts in [1, maxLabels], one in eight forced to 1.
func randomLabels(rng *rand.Rand, n, maxLabels int) []int {
	labels := make([]int, n)
	for v := range labels {
		labels[v] = 1 + rng.IntN(maxLabels)
		if rng.IntN(8) == 0 {
			labels[v] = 1
		}
	}
	return labels
}

// randomTable returns size values in [−1, 1), entries after the first +Inf with
// probability probInf.
func randomTable(rng *rand.Rand, size int) []float64 {
	t := make([]float64, size)
	for i := range t {
		t[i] = 2*rng.Float64() - 1
		if i > 0 && rng.Float64() < probInf {
			t[i] = math.Inf(1)
		}
	}
	return t
}

// pottsTable returns the ka×kb table c + W·[a≠b].
func pottsTable(rng *rand.Rand, ka, kb int) []float64 {
	c, w := 2*rng.Float64()-1, 0.05+rng.Float64()
	t := make([]float64, ka*kb)
	for a := range ka {
		for b := range kb {
			t[a*kb+b] = c
			if a != b {
				t[a*kb+b] += w
			}
		}
	}
	return t
}

// parametric returns a random Potts, truncated linear or truncated quadratic function.
func parametric(rng *rand.Rand, shape []int) model.Function {
	kinds := [...]model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}
	f := model.Function{Kind: kinds[rng.IntN(len(kinds))], Shape: shape, W: rng.Float64()}
	if rng.IntN(8) == 0 {
		f.W = 0
	}
	if f.Kind != model.Potts {
		f.T = 0.5 + 4*rng.Float64()
		if rng.IntN(4) == 0 {
			f.T = math.Inf(1)
		}
	}
	return f
}

func build(b *model.Builder) *model.Model {
	m, err := b.Build()
	must(err)
	return m
}

// must panics on err: the generators only build valid models, so an error is a bug.
func must(err error) {
	if err != nil {
		panic("random: " + err.Error())
	}
}

// FrustratedGrid builds a w×h 4-connected binary grid with random unaries and random
// ±couplings (a spin glass): its relaxation is loose, so persistency methods prune.
func FrustratedGrid(rng *rand.Rand, w, h int) *model.Model {
	labels := make([]int, w*h)
	for v := range labels {
		labels[v] = 2
	}
	b := model.NewBuilder(labels)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	for v := range labels {
		must(b.AddTable([]int{v}, []float64{0, rng.NormFloat64() * 0.5}))
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x+1 < w {
				c := rng.NormFloat64()
				must(b.AddTable([]int{y*w + x, y*w + x + 1}, []float64{0, c, c, 0}))
			}
			if y+1 < h {
				c := rng.NormFloat64()
				must(b.AddTable([]int{y*w + x, (y+1)*w + x}, []float64{0, c, c, 0}))
			}
		}
	}
	m, err := b.Build()
	must(err)
	return m
}
