package persistency_test

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/persistency"
)

// bruteLimit bounds the labelings that the tests enumerate.
const bruteLimit = 1 << 20

// energyRel is the relative tolerance of energy comparisons.
const energyRel = 1e-6

var variants = []persistency.Variant{persistency.Invariant, persistency.Original}

var testCtx = context.Background()

// minEnergy is min E by enumeration.
func minEnergy(t testing.TB, m *model.Model) ([]int, float64) {
	t.Helper()
	x, e, err := oracle.BruteForce(m, bruteLimit)
	if err != nil {
		t.Fatal(err)
	}
	return x, e
}

// conditionedMin is min E over the labelings that agree with fixed (−1: free).
func conditionedMin(t testing.TB, m *model.Model, fixed []int) float64 {
	t.Helper()
	c, err := m.Condition(fixed)
	if err != nil {
		t.Fatal(err)
	}
	_, e := minEnergy(t, c.Model)
	return e
}

// isPersistent reports whether some minimiser of m agrees with the labels of fixed.
func isPersistent(t testing.TB, m *model.Model, fixed []int, minE float64) (bool, float64) {
	t.Helper()
	e := conditionedMin(t, m, fixed)
	return testutil.CloseTo(e, minE, energyRel), e
}

// forEachLabeling calls f with every labeling of the label counts k (last fastest);
// f must not keep x.
func forEachLabeling(k []int, f func(x []int)) {
	x := make([]int, len(k))
	for {
		f(x)
		i := len(k) - 1
		for ; i >= 0; i-- {
			if x[i]++; x[i] < k[i] {
				break
			}
			x[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

func labelCounts(m *model.Model) []int {
	k := make([]int, m.NumVars())
	for v := range k {
		k[v] = m.NumLabels(v)
	}
	return k
}

// minimisers returns min E and the number of labelings within tol (relative) of it.
func minimisers(m *model.Model) (minE float64, count int) {
	minE = math.Inf(1)
	var es []float64
	forEachLabeling(labelCounts(m), func(x []int) {
		e := m.Energy(x)
		es = append(es, e)
		minE = math.Min(minE, e)
	})
	for _, e := range es {
		if testutil.CloseTo(e, minE, 1e-9) {
			count++
		}
	}
	return minE, count
}

// restrict returns y on the variables A.
func restrict(y []int, A []int) []int {
	r := make([]int, len(A))
	for i, v := range A {
		r[i] = y[v]
	}
	return r
}

// fixedOn returns the Condition argument that fixes A to y.
func fixedOn(n int, A []int, y []int) []int {
	f := make([]int, n)
	for v := range f {
		f[v] = -1
	}
	for _, v := range A {
		f[v] = y[v]
	}
	return f
}

// randomSubset returns a random non-empty subset of 0..n−1, ascending (all of it
// with small probability).
func randomSubset(rng *rand.Rand, n int) []int {
	if rng.IntN(10) == 0 {
		return seq(n)
	}
	for {
		var A []int
		p := 0.2 + 0.6*rng.Float64()
		for v := range n {
			if rng.Float64() < p {
				A = append(A, v)
			}
		}
		if len(A) > 0 {
			return A
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// isPairwise reports whether every factor of m has order ≤ 2.
func isPairwise(m *model.Model) bool {
	for f := range m.NumFactors() {
		if len(m.FactorVars(f)) > 2 {
			return false
		}
	}
	return true
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ----- model families -----

// gridEdges is the 4-connected w×h grid.
func gridEdges(w, h int) [][2]int {
	var e [][2]int
	for y := range h {
		for x := range w {
			v := y*w + x
			if x+1 < w {
				e = append(e, [2]int{v, v + 1})
			}
			if y+1 < h {
				e = append(e, [2]int{v, v + w})
			}
		}
	}
	return e
}

// randomGraph has every edge with probability density, plus a cycle through all
// nodes when cycle is set (so it is never a forest).
func randomGraph(rng *rand.Rand, n int, density float64, cycle bool) [][2]int {
	var e [][2]int
	for u := range n {
		for v := u + 1; v < n; v++ {
			if cycle && (v == u+1 || (u == 0 && v == n-1)) || rng.Float64() < density {
				e = append(e, [2]int{u, v})
			}
		}
	}
	return e
}

// forestEdges is a random forest: node v > 0 hangs under a random earlier node with
// probability 0.85, and the endpoints of an edge come in random order.
func forestEdges(rng *rand.Rand, n int) [][2]int {
	var e [][2]int
	for v := 1; v < n; v++ {
		if rng.Float64() < 0.85 {
			u := rng.IntN(v)
			if rng.IntN(2) == 0 {
				e = append(e, [2]int{u, v})
			} else {
				e = append(e, [2]int{v, u})
			}
		}
	}
	return e
}

// spinGlass is a frustrated pairwise model on edges: k labels per variable (label
// counts in 1..k when mixed), a random field of strength up to fieldScale (none with
// probability 1/4, so some models have symmetric optima), and couplings that mix attractive and repulsive
// terms: the Ising J·s_a·s_b with J = ±w for k = 2, otherwise ±w·[a≠b] or a random
// table. With forbid, some entries other than those of label 0 are +Inf.
func spinGlass(rng *rand.Rand, n, k int, edges [][2]int, mixed, forbid bool, fieldScale float64) *model.Model {
	labels := make([]int, n)
	for v := range labels {
		labels[v] = k
		if mixed {
			labels[v] = 1 + rng.IntN(k)
		}
	}
	b := model.NewBuilder(labels)
	field := fieldScale * rng.Float64()
	if rng.IntN(4) == 0 {
		field = 0
	}
	inf := func(i int) bool { return forbid && i > 0 && rng.Float64() < 0.06 }
	for v, kv := range labels {
		t := make([]float64, kv)
		for i := range t {
			t[i] = field * (2*rng.Float64() - 1)
			if inf(i) {
				t[i] = math.Inf(1)
			}
		}
		if field > 0 || forbid {
			mustOK(b.AddTable([]int{v}, t))
		}
	}
	for _, e := range edges {
		ka, kb := labels[e[0]], labels[e[1]]
		w := 0.2 + rng.Float64()
		if rng.IntN(2) == 0 {
			w = -w
		}
		t := make([]float64, ka*kb)
		kind := rng.IntN(3)
		for a := range ka {
			for c := range kb {
				i := a*kb + c
				switch {
				case k == 2 || kind == 0: // Ising-like: ±w agreement
					t[i] = w
					if a != c {
						t[i] = -w
					}
				case kind == 1: // ±w·[a≠b]
					if a != c {
						t[i] = w
					}
				default:
					t[i] = w * (2*rng.Float64() - 1)
				}
				if inf(i) {
					t[i] = math.Inf(1)
				}
			}
		}
		mustOK(b.AddTable([]int{e[0], e[1]}, t))
	}
	m, err := b.Build()
	mustOK(err)
	return m
}

// treeModel is a pairwise model on a random forest with 1..maxLabels labels per
// variable: random unary and pairwise tables (values in [−1, 1), some +Inf with
// forbid), a few Potts and truncated-linear terms.
func treeModel(rng *rand.Rand, n, maxLabels int, forbid bool) *model.Model {
	labels := make([]int, n)
	for v := range labels {
		labels[v] = 1 + rng.IntN(maxLabels)
	}
	b := model.NewBuilder(labels)
	table := func(size int) []float64 {
		t := make([]float64, size)
		for i := range t {
			t[i] = 2*rng.Float64() - 1
			if forbid && i > 0 && rng.Float64() < 0.08 {
				t[i] = math.Inf(1)
			}
		}
		return t
	}
	for v, k := range labels {
		mustOK(b.AddTable([]int{v}, table(k)))
	}
	for _, e := range forestEdges(rng, n) {
		ka, kb := labels[e[0]], labels[e[1]]
		switch rng.IntN(5) {
		case 0:
			fn, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{ka, kb}, W: 0.1 + rng.Float64()})
			mustOK(err)
			mustOK(b.AddFactor(fn, e[0], e[1]))
		case 1:
			fn, err := b.AddFunction(model.Function{Kind: model.TruncatedLinear, Shape: []int{ka, kb}, W: 0.1 + rng.Float64(), T: 1 + rng.Float64()})
			mustOK(err)
			mustOK(b.AddFactor(fn, e[0], e[1]))
		default:
			mustOK(b.AddTable([]int{e[0], e[1]}, table(ka*kb)))
		}
	}
	m, err := b.Build()
	mustOK(err)
	return m
}

// coreAndPeriphery is a frustrated core — a clique of 3 or 4 variables with repulsive
// couplings w·[a=b] and almost no field, whose LP relaxation is fractional — with a
// periphery that hangs off it like a tree (each further variable joins one or two
// earlier ones) with random tables and unaries of random strength: the kind of model
// where Algorithm 1 proves part of the variables and not the rest. Label counts are
// 1..k (with forbidden entries when forbid).
func coreAndPeriphery(rng *rand.Rand, n, k int, forbid bool) *model.Model {
	labels := make([]int, n)
	core := 3 + rng.IntN(2)
	for v := range labels {
		labels[v] = 2 + rng.IntN(k-1)
		if v >= core && rng.IntN(8) == 0 {
			labels[v] = 1
		}
	}
	b := model.NewBuilder(labels)
	table := func(size int, scale float64) []float64 {
		t := make([]float64, size)
		for i := range t {
			t[i] = scale * (2*rng.Float64() - 1)
			if forbid && i > 0 && rng.Float64() < 0.05 {
				t[i] = math.Inf(1)
			}
		}
		return t
	}
	for v, kv := range labels {
		scale := 0.05
		if v >= core {
			scale = 0.2 + 2*rng.Float64()
		}
		mustOK(b.AddTable([]int{v}, table(kv, scale)))
	}
	for u := range core {
		for v := u + 1; v < core; v++ {
			w := 0.5 + rng.Float64()
			t := make([]float64, labels[u]*labels[v])
			for a := range labels[u] {
				for c := range labels[v] {
					if a == c {
						t[a*labels[v]+c] = w
					}
				}
			}
			mustOK(b.AddTable([]int{u, v}, t))
		}
	}
	for v := core; v < n; v++ {
		for _, u := range rng.Perm(v)[:1+rng.IntN(min(2, v))] {
			mustOK(b.AddTable([]int{u, v}, table(labels[u]*labels[v], 0.2+rng.Float64())))
		}
	}
	m, err := b.Build()
	mustOK(err)
	return m
}

// family is a named generator of small models.
type family struct {
	name     string
	pairwise bool
	gen      func(rng *rand.Rand) *model.Model
}

// soundnessFamilies are the small models of the soundness tests: at most 2^14
// labelings, frustrated ones included, so that pruning happens.
var soundnessFamilies = []family{
	{"IsingSpinGlassGrid", true, func(rng *rand.Rand) *model.Model {
		w, h := 3, 3+rng.IntN(2)
		return spinGlass(rng, w*h, 2, gridEdges(w, h), false, false, 0.5+rng.Float64())
	}},
	{"FrustratedRandomGraph", true, func(rng *rand.Rand) *model.Model {
		n := 5 + rng.IntN(3)
		return spinGlass(rng, n, 3, randomGraph(rng, n, 0.3, rng.IntN(2) == 0), rng.IntN(2) == 0, rng.IntN(2) == 0, 0.5+rng.Float64())
	}},
	{"CoreAndPeriphery", true, func(rng *rand.Rand) *model.Model {
		return coreAndPeriphery(rng, 6+rng.IntN(4), 3, rng.IntN(2) == 0)
	}},
	{"DensePairwise", true, func(rng *rand.Rand) *model.Model {
		return random.DensePairwise(rng, 4+rng.IntN(4), 4, 0.2+0.6*rng.Float64())
	}},
	{"PottsGrid", true, func(rng *rand.Rand) *model.Model {
		if rng.IntN(2) == 0 {
			return random.PottsGrid(rng, 3, 3, 3)
		}
		return random.PottsGrid(rng, 4, 2, 3)
	}},
	{"Forest", true, func(rng *rand.Rand) *model.Model {
		return treeModel(rng, 5+rng.IntN(4), 3, rng.IntN(2) == 0)
	}},
	{"HigherOrder", false, func(rng *rand.Rand) *model.Model {
		n := 4 + rng.IntN(4)
		return random.HigherOrder(rng, n, 3, 3+rng.IntN(2), n+rng.IntN(n+1))
	}},
	{"ParametricGrid", true, func(rng *rand.Rand) *model.Model {
		return random.ParametricGrid(rng, 3, 2, 5)
	}},
}

// mustOK panics on err: the generators only build valid models.
func mustOK(err error) {
	if err != nil {
		panic(err)
	}
}

// augmented returns Ê_{A,y} assembled here from the model and BoundaryPotential,
// independently of BuildSubproblem, as a function of a labeling of A (A ascending,
// xA[i] the label of A[i]; the model's offset left out), and whether a boundary
// potential has a −Inf entry or is +Inf at y itself (either way y can never satisfy
// the criterion).
func augmented(m *model.Model, A []int, y []int, v persistency.Variant) (energy func(xA []int) float64, hopeless bool) {
	in := make([]bool, m.NumVars())
	for _, u := range A {
		in[u] = true
	}
	type boundary struct {
		f   int
		pos []int // inside argument positions
		tab []float64
	}
	var inner []int
	var bnd []boundary
	for f := range m.NumFactors() {
		var pos, yIn []int
		for p, u := range m.FactorVars(f) {
			if in[u] {
				pos, yIn = append(pos, p), append(yIn, y[u])
			}
		}
		switch len(pos) {
		case 0:
		case len(m.FactorVars(f)):
			inner = append(inner, f)
		default:
			fn := m.FactorFunction(f)
			tab := persistency.BoundaryPotential(fn, pos, yIn, v)
			yIdx := 0
			for j, p := range pos {
				yIdx = yIdx*fn.Shape[p] + yIn[j]
			}
			if slices.Contains(tab, math.Inf(-1)) || math.IsInf(tab[yIdx], 1) {
				hopeless = true
			}
			bnd = append(bnd, boundary{f, pos, tab})
		}
	}
	x := make([]int, m.NumVars())
	return func(xA []int) float64 {
		for i, u := range A {
			x[u] = xA[i]
		}
		e := 0.0
		for _, f := range inner {
			e += m.FactorValue(f, x)
		}
		for _, b := range bnd {
			fn, vars := m.FactorFunction(b.f), m.FactorVars(b.f)
			i := 0
			for _, p := range b.pos {
				i = i*fn.Shape[p] + x[vars[p]]
			}
			e += b.tab[i]
		}
		return e
	}, hopeless
}

// strongSet is a node set S with a labeling y (of the model; read on S) that is the
// unique minimiser of Ê_{S,y}: strongly persistent (paper §5), by enumeration.
type strongSet struct {
	S, y []int
}

// strongSets enumerates every non-empty S ⊆ V and every labeling y of S and returns
// those where y|_S is the unique minimiser of Ê_{S,y} (Theorem 1's integer criterion,
// strictly; cases with a −Inf boundary entry never qualify). Cost Π_v (1 + |X_v|²).
func strongSets(m *model.Model, v persistency.Variant) []strongSet {
	n := m.NumVars()
	var out []strongSet
	for mask := 1; mask < 1<<n; mask++ {
		var S []int
		for u := range n {
			if mask&(1<<u) != 0 {
				S = append(S, u)
			}
		}
		kS := restrict(labelCounts(m), S)
		forEachLabeling(kS, func(yS []int) {
			y := make([]int, n)
			for i, u := range S {
				y[u] = yS[i]
			}
			energy, hopeless := augmented(m, S, y, v)
			if hopeless {
				return
			}
			ey := energy(yS)
			if math.IsInf(ey, 1) {
				return
			}
			tol := 1e-9 * math.Max(1, math.Abs(ey))
			unique := true
			forEachLabeling(kS, func(x []int) {
				if unique && !slices.Equal(x, yS) && energy(x) <= ey+tol {
					unique = false
				}
			})
			if unique {
				out = append(out, strongSet{S, y})
			}
		})
	}
	return out
}

// lossy is an integrally correct solver made weak on purpose: it forgets each
// consistency label of its inner solver with probability First in the first solve
// (the relaxation on V) and Later afterwards. A label it keeps is the inner solver's,
// and when it keeps them all the outcome is the inner one, so it stays integrally
// correct (Proposition 2). Around Exhaustive, which labels every variable of every
// problem, it makes Algorithm 1 prune with the exact criterion on models of any order.
type lossy struct {
	inner        persistency.Relaxation
	rng          *rand.Rand
	First, Later float64
	calls        *int
	// A0 receives the consistency labels of the first solve (A⁰ and x⁰).
	A0 *[]int
}

func newLossy(inner persistency.Relaxation, seed uint64) lossy {
	rng := random.New(seed)
	return lossy{inner: inner, rng: rng, First: 0.1 + 0.5*rng.Float64(), Later: 0.1 * rng.Float64(), calls: new(int), A0: new([]int)}
}

// Solve implements persistency.Relaxation.
func (l lossy) Solve(ctx context.Context, p *model.Model, from *persistency.Warm) (*persistency.Outcome, error) {
	out, err := l.inner.Solve(ctx, p, from)
	if err != nil {
		return nil, err
	}
	q := l.Later
	if *l.calls == 0 {
		q = l.First
	}
	*l.calls++
	weak := *out
	weak.Consistent = slices.Clone(out.Consistent)
	for i := range weak.Consistent {
		if l.rng.Float64() < q {
			weak.Consistent[i] = -1
		}
	}
	if *l.calls == 1 {
		*l.A0 = slices.Clone(weak.Consistent)
	}
	return &weak, nil
}

// fewerGCs raises the GC target for the rest of the test. Every model.Builder
// allocates about 2 MB up front (its function-intern table and table arena), so tests
// that build thousands of tiny sub-problems (Run, BuildSubproblem, Condition) would
// otherwise collect every couple of builds; with two cores that costs several times
// the test's own work in GC and page faults.
func fewerGCs(t *testing.T) {
	old := debug.SetGCPercent(800)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}
