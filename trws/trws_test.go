package trws_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/trws"
)

// mixedPairwise builds a random pairwise model over the given edges with every kind
// of pairwise term (Potts, truncated linear and quadratic, explicit tables, some
// rectangular), mixed label counts (some 1-label variables) and, when forbidden is
// set, +Inf entries that keep the all-zero labeling feasible.
func mixedPairwise(rng *rand.Rand, n, maxK int, edges [][2]int, forbidden bool) *model.Model {
	labels := make([]int, n)
	for v := range labels {
		labels[v] = 1 + rng.IntN(maxK)
		if rng.IntN(3) == 0 {
			labels[v] = maxK
		}
	}
	b := model.NewBuilder(labels)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	for v, k := range labels {
		u := make([]float64, k)
		for l := range u {
			u[l] = rng.NormFloat64()
			if forbidden && l > 0 && rng.IntN(5) == 0 {
				u[l] = math.Inf(1)
			}
		}
		must(b.AddTable([]int{v}, u))
	}
	for i, e := range edges {
		a, c := e[0], e[1]
		if rng.IntN(2) == 0 {
			a, c = c, a // either argument order
		}
		ka, kc := labels[a], labels[c]
		switch i % 4 {
		case 0, 1, 2:
			kind := []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}[i%3]
			id, err := b.AddFunction(model.Function{Kind: kind, Shape: []int{ka, kc}, W: rng.Float64() * 2, T: 0.5 + rng.Float64()*4})
			must(err)
			must(b.AddFactor(id, a, c))
		default:
			t := make([]float64, ka*kc)
			for j := range t {
				t[j] = rng.NormFloat64()
				if forbidden && j > 0 && rng.IntN(6) == 0 {
					t[j] = math.Inf(1)
				}
			}
			must(b.AddTable([]int{a, c}, t))
		}
	}
	m, err := b.Build()
	must(err)
	return m
}

func randomEdges(rng *rand.Rand, n int, density float64) [][2]int {
	var edges [][2]int
	for a := 0; a < n; a++ {
		for c := a + 1; c < n; c++ {
			if rng.Float64() < density {
				edges = append(edges, [2]int{a, c})
			}
		}
	}
	return edges
}

// randomTree returns the edges of a random spanning tree (a chain when chain is set).
func randomTree(rng *rand.Rand, n int, chain bool) [][2]int {
	perm := rng.Perm(n)
	var edges [][2]int
	for i := 1; i < n; i++ {
		parent := i - 1
		if !chain {
			parent = rng.IntN(i)
		}
		edges = append(edges, [2]int{perm[parent], perm[i]})
	}
	return edges
}

func solve(t *testing.T, m *model.Model, opt trws.Options) (*trws.Solver, trws.Result) {
	t.Helper()
	s, err := trws.New(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Solve(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

func optimum(t *testing.T, m *model.Model) float64 {
	t.Helper()
	_, e, err := oracle.BruteForce(m, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func within(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestBoundNeverExceedsOptimumAndFullAgreementIsOptimal: on hundreds of random models
// with every pairwise kind and forbidden states, the bound is ≤ the exact optimum, the
// bound sequence is monotone, no NaN appears, and whenever every variable is
// consistent the consistent labeling is optimal and its certificate checks.
func TestBoundNeverExceedsOptimumAndFullAgreementIsOptimal(t *testing.T) {
	agreements := 0
	for seed := uint64(0); seed < 400; seed++ {
		rng := random.New(seed)
		var m *model.Model
		switch seed % 4 {
		case 0:
			m = random.PottsGrid(rng, 3, 3, 3)
		case 1:
			m = random.DensePairwise(rng, 7, 4, 0.5)
		default:
			n := 5 + rng.IntN(4)
			m = mixedPairwise(rng, n, 4, randomEdges(rng, n, 0.5), seed%4 == 3)
		}
		opt := optimum(t, m)
		var bounds []float64
		o := trws.DefaultOptions()
		o.Progress = func(p trws.Progress) { bounds = append(bounds, p.Bound) }
		s, r := solve(t, m, o)
		if math.IsNaN(r.LowerBound) || math.IsNaN(r.Energy) {
			t.Fatalf("seed %d: NaN (bound %v, energy %v)", seed, r.LowerBound, r.Energy)
		}
		if !math.IsInf(opt, 1) && r.LowerBound > opt+1e-5*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: bound %v exceeds the optimum %v", seed, r.LowerBound, opt)
		}
		for i := 1; i < len(bounds); i++ {
			if bounds[i] < bounds[i-1]-1e-5*math.Max(1, math.Abs(bounds[i-1])) {
				t.Errorf("seed %d: bound fell from %v to %v at iteration %d", seed, bounds[i-1], bounds[i], i+1)
			}
		}
		if r.Energy < opt-1e-9*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: energy %v below the optimum %v", seed, r.Energy, opt)
		}
		if !r.Agreement {
			continue
		}
		agreements++
		if e := m.Energy(r.Consistent); !within(e, opt, 1e-6) {
			t.Errorf("seed %d: full agreement on a labeling of energy %v, optimum %v", seed, e, opt)
		}
		v, err := s.Certificate(r.Consistent).Check(m)
		if err != nil || !v.Certified || v.Bound > opt+1e-6*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: certificate of a full agreement: %+v, %v (optimum %v)", seed, v, err, opt)
		}
	}
	if agreements < 100 {
		t.Errorf("only %d of 400 models reached full agreement; the test checks too little", agreements)
	}
}

// TestTreesAndChainsReachTheOptimumWithFullAgreement: the LP relaxation of a tree is
// tight, and TRW-S on a tree is exact dynamic programming after one iteration.
func TestTreesAndChainsReachTheOptimumWithFullAgreement(t *testing.T) {
	for seed := uint64(0); seed < 60; seed++ {
		rng := random.New(100 + seed)
		n := 4 + rng.IntN(6)
		m := mixedPairwise(rng, n, 4, randomTree(rng, n, seed%2 == 0), false)
		opt := optimum(t, m)
		s, r := solve(t, m, trws.DefaultOptions())
		if !within(r.LowerBound, opt, 1e-5) || !within(r.Energy, opt, 1e-9) {
			t.Errorf("seed %d: bound %v, energy %v, optimum %v", seed, r.LowerBound, r.Energy, opt)
		}
		if !r.Agreement {
			// Ties in the optimum leave variables without a unique label; then the
			// rounded labeling must still be optimal.
			if ties := countOptima(m, opt); ties == 1 {
				t.Errorf("seed %d: unique optimum but agreement %d/%d", seed, r.Agreeing, n)
			}
			continue
		}
		if v, err := s.Certificate(r.Consistent).Check(m); err != nil || !v.Certified {
			t.Errorf("seed %d: certificate %+v, %v", seed, v, err)
		}
	}
}

// countOptima counts the labelings within 1e-9 of the optimum (tiny models only).
func countOptima(m *model.Model, opt float64) int {
	count := 0
	x := make([]int, m.NumVars())
	for {
		if within(m.Energy(x), opt, 1e-9) {
			count++
		}
		v := 0
		for ; v < len(x); v++ {
			if x[v]++; x[v] < m.NumLabels(v) {
				break
			}
			x[v] = 0
		}
		if v == len(x) {
			return count
		}
	}
}

// TestCertificateBoundIsValidForAnyMessages: Check's bound never exceeds the optimum,
// even for a certificate whose messages and shares are arbitrary, so a wrong solver
// cannot produce a false certificate.
func TestCertificateBoundIsValidForAnyMessages(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := random.New(500 + seed)
		n := 5 + rng.IntN(3)
		m := mixedPairwise(rng, n, 3, randomEdges(rng, n, 0.6), seed%2 == 0)
		opt := optimum(t, m)
		s, r := solve(t, m, trws.Options{MaxIterations: 1 + rng.IntN(3), GapTolerance: 0})
		c := s.Certificate(r.Labeling)
		for i := range c.Messages {
			c.Messages[i] = rng.NormFloat64() * 10
		}
		for e := range c.Share {
			c.Share[e] *= rng.Float64()
		}
		v, err := c.Check(m)
		if err != nil {
			t.Fatal(err)
		}
		if v.Bound > opt+1e-9*math.Max(1, math.Abs(opt)) {
			t.Fatalf("seed %d: random certificate bound %v exceeds the optimum %v", seed, v.Bound, opt)
		}
	}
}

func TestCertificateRejectsMismatchesAndSuboptimalLabelings(t *testing.T) {
	rng := random.New(9)
	m := mixedPairwise(rng, 6, 3, randomTree(rng, 6, true), false)
	s, r := solve(t, m, trws.DefaultOptions())
	if !r.Agreement {
		t.Skip("no full agreement on this chain")
	}
	c := s.Certificate(r.Consistent)
	if v, err := c.Check(m); err != nil || !v.Certified {
		t.Fatalf("%+v %v", v, err)
	}
	worse := *c
	worse.Labeling = append([]int(nil), c.Labeling...)
	for v := range worse.Labeling {
		if m.NumLabels(v) > 1 {
			worse.Labeling[v] = (worse.Labeling[v] + 1) % m.NumLabels(v)
			if m.Energy(worse.Labeling) > m.Energy(c.Labeling)+1e-3 {
				break
			}
		}
	}
	if v, err := worse.Check(m); err != nil || v.Certified {
		t.Errorf("a worse labeling was certified: %+v %v", v, err)
	}
	other := mixedPairwise(random.New(10), 6, 3, randomTree(random.New(10), 6, false), false)
	if _, err := c.Check(other); err == nil {
		t.Error("a certificate checked against another model's edges")
	}
	bad := *c
	bad.Share = append([]float64(nil), c.Share...)
	for e := range bad.Share {
		bad.Share[e] = 1
	}
	if _, err := bad.Check(m); err == nil {
		t.Error("shares summing to more than 1 accepted")
	}
}

// TestForbiddenStatesNeverProduceNaN: models dense with +Inf, including infeasible ones.
func TestForbiddenStatesNeverProduceNaN(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		rng := random.New(900 + seed)
		n := 6
		labels := make([]int, n)
		for v := range labels {
			labels[v] = 3
		}
		b := model.NewBuilder(labels)
		for _, e := range randomEdges(rng, n, 0.7) {
			tab := make([]float64, 9)
			for i := range tab {
				if rng.IntN(2) == 0 {
					tab[i] = math.Inf(1)
				} else {
					tab[i] = rng.NormFloat64()
				}
			}
			b.AddTable(e[:], tab)
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		opt := optimum(t, m)
		_, r := solve(t, m, trws.DefaultOptions())
		if math.IsNaN(r.LowerBound) || math.IsNaN(r.Energy) {
			t.Fatalf("seed %d: NaN", seed)
		}
		if !math.IsInf(opt, 1) && r.LowerBound > opt+1e-5*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: bound %v above optimum %v", seed, r.LowerBound, opt)
		}
		if math.IsInf(opt, 1) && !math.IsInf(r.Energy, 1) {
			t.Errorf("seed %d: infeasible model, finite energy %v", seed, r.Energy)
		}
	}
}

func TestZeroGapToleranceRunsExactlyMaxIterations(t *testing.T) {
	m := random.PottsGrid(random.New(1), 4, 4, 3)
	for _, n := range []int{1, 7, 30} {
		_, r := solve(t, m, trws.Options{MaxIterations: n, GapTolerance: 0, StallIterations: 5})
		if r.Iterations != n || r.Stop != trws.StopIterations {
			t.Errorf("MaxIterations %d: ran %d, stop %v", n, r.Iterations, r.Stop)
		}
	}
}

func TestStallStopsOnlyWithoutProgress(t *testing.T) {
	rng := random.New(4)
	m := mixedPairwise(rng, 10, 4, randomEdges(rng, 10, 0.9), false)
	var bounds []float64
	var agree []int
	o := trws.Options{MaxIterations: 5000, GapTolerance: 1e-12, StallIterations: 20, StallTolerance: 1e-9, CheckEvery: 1,
		Progress: func(p trws.Progress) { bounds, agree = append(bounds, p.LowerBound), append(agree, p.Agreeing) }}
	_, r := solve(t, m, o)
	if r.Stop != trws.StopStall {
		t.Skipf("stopped by %v after %d iterations", r.Stop, r.Iterations)
	}
	n := len(bounds)
	last := bounds[n-1-20]
	for i := n - 20; i < n; i++ {
		if bounds[i] > last+1e-9*math.Max(1, math.Abs(last)) || agree[i] > maxInts(agree[:n-20]) {
			t.Fatalf("stopped for stall at %d while iteration %d made progress", n, i+1)
		}
	}
}

func maxInts(v []int) int {
	m := -1
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func TestCancelReturnsTheWorkDone(t *testing.T) {
	m := random.PottsGrid(random.New(2), 20, 20, 4)
	s, err := trws.New(m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := trws.Options{MaxIterations: 1 << 30, GapTolerance: 0, Progress: func(p trws.Progress) {
		if p.Iteration == 3 {
			cancel()
		}
	}}
	r, err := s.Solve(ctx, o)
	if !errors.Is(err, context.Canceled) || r.Stop != trws.StopCanceled || r.Iterations != 3 {
		t.Fatalf("err %v, stop %v, iterations %d", err, r.Stop, r.Iterations)
	}
	if e := m.Energy(r.Labeling); !within(e, r.Energy, 1e-12) || r.LowerBound > r.Energy {
		t.Errorf("energy %v (labeling %v), bound %v", r.Energy, e, r.LowerBound)
	}
}

func TestHigherOrderModelsAreRefused(t *testing.T) {
	b := model.NewBuilder([]int{2, 2, 2})
	b.AddTable([]int{0, 1, 2}, []float64{1, 2, 3, 4, 5, 6, 7, 8})
	m, _ := b.Build()
	if _, err := trws.New(m); !errors.Is(err, trws.ErrNotPairwise) {
		t.Errorf("error %v, want ErrNotPairwise", err)
	}
}

// TestWarmStartAfterAddUnary: adding unary terms and continuing from the kept messages
// reaches the same bound as a cold solve of the changed model, and stays valid.
func TestWarmStartAfterAddUnary(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		rng := random.New(1300 + seed)
		m := random.PottsGrid(rng, 3, 4, 3)
		s, _ := solve(t, m, trws.DefaultOptions())
		// Changed model: a few random unary terms added.
		b := model.NewBuilder(intLabels(m))
		for f := 0; f < m.NumFactors(); f++ {
			fn := m.FactorFunction(f)
			id, _ := b.AddFunction(*fn)
			vars := m.FactorVars(f)
			args := make([]int, len(vars))
			for i, v := range vars {
				args[i] = int(v)
			}
			b.AddFactor(id, args...)
		}
		b.AddConstant(m.Offset())
		for k := 0; k < 3; k++ {
			v := rng.IntN(m.NumVars())
			delta := make([]float64, m.NumLabels(v))
			for l := range delta {
				delta[l] = rng.NormFloat64() * 2
			}
			if err := s.AddUnary(v, delta); err != nil {
				t.Fatal(err)
			}
			b.AddTable([]int{v}, delta)
		}
		changed, _ := b.Build()
		opt := optimum(t, changed)
		warm, err := s.Solve(context.Background(), trws.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		_, cold := solve(t, changed, trws.DefaultOptions())
		if warm.LowerBound > opt+1e-5*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: warm bound %v above the optimum %v", seed, warm.LowerBound, opt)
		}
		if !within(warm.Energy, changed.Energy(warm.Labeling), 1e-12) {
			t.Errorf("seed %d: warm energy %v is not the changed model's energy of its labeling", seed, warm.Energy)
		}
		if cold.Agreement && warm.Agreement && !within(warm.Energy, cold.Energy, 1e-9) {
			t.Errorf("seed %d: warm %v and cold %v disagree at full agreement", seed, warm.Energy, cold.Energy)
		}
	}
}

func intLabels(m *model.Model) []int {
	out := make([]int, m.NumVars())
	for v := range out {
		out[v] = m.NumLabels(v)
	}
	return out
}

// TestRestrictKeepsTheInducedSubproblem: a restricted solver's problem is the induced
// sub-model, its certificate checks against Model(), and its bound is valid for it.
func TestRestrictKeepsTheInducedSubproblem(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		rng := random.New(1700 + seed)
		n := 9
		m := mixedPairwise(rng, n, 3, randomEdges(rng, n, 0.4), seed%2 == 0)
		s, _ := solve(t, m, trws.DefaultOptions())
		keep := rng.Perm(n)[:5]
		r, err := s.Restrict(keep)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := r.Model()
		if err != nil {
			t.Fatal(err)
		}
		ind, err := m.Induced(r.Vars())
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 20; trial++ {
			x := random.Labeling(rng, sub)
			want := ind.Model.Energy(x)
			if got := sub.Energy(x); !within(got, want, 1e-9) && !(math.IsInf(got, 1) && math.IsInf(want, 1)) {
				t.Fatalf("seed %d: restricted model energy %v, induced %v", seed, got, want)
			}
		}
		res, err := r.Solve(context.Background(), trws.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		opt := optimum(t, sub)
		if res.LowerBound > opt+1e-5*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: restricted bound %v above the optimum %v", seed, res.LowerBound, opt)
		}
		if res.Agreement {
			if v, err := r.Certificate(res.Consistent).Check(sub); err != nil || !v.Certified {
				t.Errorf("seed %d: certificate on the restricted model: %+v %v", seed, v, err)
			}
		}
	}
}

// boundTrace runs the solver for exactly n iterations and returns the bound after each.
func boundTrace(t *testing.T, m *model.Model, n int) []float64 {
	t.Helper()
	s, err := trws.New(m)
	if err != nil {
		t.Fatal(err)
	}
	var bounds []float64
	o := trws.Options{MaxIterations: n, GapTolerance: 0, Progress: func(p trws.Progress) { bounds = append(bounds, p.Bound) }}
	if _, err := s.Solve(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return bounds
}

// TestSameNumbersAsKolmogorovsTRWS: with the same variable order and iteration
// definition, the float32 solver's bound after every iteration equals that of the
// float64 reference implementation of MRFEnergy's TRW-S (reference_test.go) to 1e-6
// relative, on the denoising model (scaled down) and on random finite models
// with every pairwise kind. On tiny models float32 rounding is measured against the
// number of variables rather than a bound near zero.
func TestSameNumbersAsKolmogorovsTRWS(t *testing.T) {
	models := map[string]*model.Model{
		"denoising 48x40 K=8": random.PottsDenoising(random.New(1), 48, 40, 8, 1.2, 4, 2),
	}
	for seed := uint64(0); seed < 20; seed++ {
		rng := random.New(2100 + seed)
		n := 8 + rng.IntN(8)
		models["mixed "+string(rune('a'+seed))] = mixedPairwise(rng, n, 5, randomEdges(rng, n, 0.4), false)
	}
	for name, m := range models {
		const iters = 40
		want, _, _, err := referenceTRWS(m, iters)
		if err != nil {
			t.Fatal(err)
		}
		got := boundTrace(t, m, iters)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-6*math.Max(math.Abs(want[i]), float64(m.NumVars())) {
				t.Errorf("%s: iteration %d: bound %.10g, reference %.10g", name, i+1, got[i], want[i])
				break
			}
		}
	}
}

// TestGoldenDenoisingTrace pins the bound trace on the reference model (256×256,
// K=8, 4 plane waves in 8 levels, y = label + 1.2·N(0,1), unary min((y−l)², 4), Potts
// λ=2; random.PottsDenoising with seed 1, see docs/BENCHMARKS.md). The golden numbers
// are those of the float64 MRFEnergy-semantics reference (reference_test.go) on this
// model; the trace for Kolmogorov's C++ on its own random draw is 91104.8317,
// 91111.1436, 91112.3503, 91112.5495 at 50/100/150/200 iterations.
func TestGoldenDenoisingTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("200 iterations on 65,536 variables; skipped in -short mode")
	}
	m := random.PottsDenoising(random.New(1), 256, 256, 8, 1.2, 4, 2)
	s, err := trws.New(m)
	if err != nil {
		t.Fatal(err)
	}
	golden := map[int]float64{50: 91466.7699346463, 100: 91472.2237283361, 150: 91472.8375044677, 200: 91472.8375047699}
	o := trws.Options{MaxIterations: 200, GapTolerance: 0, CheckEvery: 50, Progress: func(p trws.Progress) {
		if want, ok := golden[p.Iteration]; !ok || !within(p.Bound, want, 1e-6) {
			t.Errorf("iteration %d: bound %.10f, golden %.10f", p.Iteration, p.Bound, want)
		}
	}}
	r, err := s.Solve(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Energy > 91473.5551193885*(1+1e-6) {
		t.Errorf("energy after 200 iterations %.6f, reference 91473.5551193885", r.Energy)
	}
}

// A forbidden rounded labeling has infinite energy and no gap: it must not stop the run.
func TestInfiniteEnergyNeverStopsOnGap(t *testing.T) {
	b := model.NewBuilder([]int{2, 2})
	b.AddTable([]int{0, 1}, []float64{math.Inf(1), 0, 0, math.Inf(1)})
	b.AddTable([]int{0}, []float64{0, 1})
	b.AddTable([]int{1}, []float64{0, 1})
	m, _ := b.Build()
	_, r := solve(t, m, trws.DefaultOptions())
	if math.IsInf(r.Energy, 1) || r.Energy != 1 {
		t.Errorf("energy %v (stop %v after %d), want the optimum 1", r.Energy, r.Stop, r.Iterations)
	}
}

// Pruning leaves isolated nodes (all neighbours dropped), also at the end of the node
// order, in every kernel path (generic, Potts, K=8 Potts).
func TestRestrictToIsolatedNodes(t *testing.T) {
	for _, k := range []int{3, 8} {
		m := random.PottsDenoising(random.New(5), 6, 5, k, 1, 4, 1)
		s, _ := solve(t, m, trws.DefaultOptions())
		r, err := s.Restrict([]int{0, 2, 7, 29}) // no two adjacent: every node isolated
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Solve(context.Background(), trws.DefaultOptions())
		if err != nil || !res.Agreement {
			t.Fatalf("K=%d: %+v %v", k, res, err)
		}
	}
}

// TestSetTableSolvesTheNewProblem: a solver built on one model whose tables and
// unaries are all replaced (SetTable, SetUnary), messages kept, is a solver of the
// new model: the same energies, a bound never above the new optimum, a certificate
// that the new model checks, and an optimal labeling whenever every variable
// agrees. Edges that shared one function are rewritten independently; on a
// quarter of the models only some edges are (a slot an edge has to itself is
// rewritten in place, a shared one is left to the edges that keep it).
func TestSetTableSolvesTheNewProblem(t *testing.T) {
	for seed := uint64(0); seed < 150; seed++ {
		rng := random.New(1300 + seed)
		n := 4 + rng.IntN(4)
		edges := randomEdges(rng, n, 0.6)
		if seed%3 == 0 {
			edges = randomTree(rng, n, false)
		}
		old := mixedPairwise(rng, n, 3, edges, false)
		s, err := trws.New(old)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Solve(context.Background(), trws.Options{MaxIterations: 3}); err != nil {
			t.Fatal(err)
		}
		// The new model: old's factors in order, fresh explicit tables.
		b := model.NewBuilder(intLabels(old))
		if err := b.AddConstant(old.Offset()); err != nil { // SetTable keeps the offset
			t.Fatal(err)
		}
		edge := 0
		for f := 0; f < old.NumFactors(); f++ {
			vars := old.FactorVars(f)
			size := 1
			args := make([]int, len(vars))
			for p, v := range vars {
				size *= old.NumLabels(int(v))
				args[p] = int(v)
			}
			tab := make([]float64, size)
			for i := range tab {
				tab[i] = rng.NormFloat64()
				if seed%2 == 0 && i > 0 && rng.IntN(7) == 0 {
					tab[i] = math.Inf(1)
				}
			}
			shape := make([]int, len(args))
			for p, v := range args {
				shape[p] = old.NumLabels(v)
			}
			fn := model.Function{Kind: model.Explicit, Shape: shape, Table: tab}
			keep := len(vars) == 2 && seed%4 == 1 && rng.IntN(2) == 0
			if keep {
				fn = *old.FactorFunction(f)
			}
			id, err := b.AddFunction(fn)
			if err == nil {
				err = b.AddFactor(id, args...) // every factor kept, in order (AddTable drops constants)
			}
			if err != nil {
				t.Fatal(err)
			}
			if keep {
				edge++
			} else if len(vars) == 2 {
				if err := s.SetTable(edge, tab); err != nil {
					t.Fatal(err)
				}
				edge++
			}
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		for v := range n {
			u := make([]float64, m.NumLabels(v))
			for _, f := range m.VarFactors(v) {
				if len(m.FactorVars(int(f))) == 1 {
					for l, x := range m.FactorFunction(int(f)).Table {
						u[l] += x
					}
				}
			}
			if err := s.SetUnary(v, u); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Model()
		if err != nil {
			t.Fatal(err)
		}
		x := make([]int, n)
		for range 20 {
			for v := range x {
				x[v] = rng.IntN(m.NumLabels(v))
			}
			if a, b := got.Energy(x), m.Energy(x); a != b && !within(a, b, 1e-12) {
				t.Fatalf("seed %d: energy %v after SetTable, %v on the new model", seed, a, b)
			}
		}
		r, err := s.Solve(context.Background(), trws.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		opt := optimum(t, m)
		v, err := s.Certificate(r.Labeling).Check(m)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if v.Bound > opt+1e-9*math.Max(1, math.Abs(opt)) || r.LowerBound > opt+1e-4*math.Max(1, math.Abs(opt)) {
			t.Fatalf("seed %d: bound %v (solver %v) above the new optimum %v", seed, v.Bound, r.LowerBound, opt)
		}
		if r.Agreement && !within(m.Energy(r.Consistent), opt, 1e-6) {
			t.Fatalf("seed %d: agreement on energy %v, optimum %v", seed, m.Energy(r.Consistent), opt)
		}
	}
}

func TestSetTableRejectsBadTables(t *testing.T) {
	m := mixedPairwise(random.New(3), 5, 3, randomTree(random.New(3), 5, true), false)
	s, err := trws.New(m)
	if err != nil {
		t.Fatal(err)
	}
	with := func(v float64) func() error {
		return func() error {
			vs := m.FactorVars(firstPair(m))
			t := make([]float64, m.NumLabels(int(vs[0]))*m.NumLabels(int(vs[1])))
			t[len(t)-1] = v
			return s.SetTable(0, t)
		}
	}
	big := trws.Penalty(m)
	for name, call := range map[string]func() error{
		"edge out of range":        func() error { return s.SetTable(s.NumEdges(), nil) },
		"wrong size":               func() error { return s.SetTable(0, []float64{1}) },
		"NaN":                      with(math.NaN()),
		"-Inf":                     with(math.Inf(-1)),
		"beyond the penalty":       with(big),
		"beyond minus the penalty": with(-big),
	} {
		if err := call(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, call := range map[string]func() error{"+Inf": with(math.Inf(1)), "a fifth of the penalty": with(-big / 5)} {
		if err := call(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func firstPair(m *model.Model) int {
	for f := 0; f < m.NumFactors(); f++ {
		if len(m.FactorVars(f)) == 2 {
			return f
		}
	}
	return -1
}

// TestTargetStopsAtTheFirstCheckBelowIt: with a target, a solve ends at the first
// check whose labeling is below it (label elimination's rounds end at their first
// violator), and a target nothing reaches changes nothing.
func TestTargetStopsAtTheFirstCheckBelowIt(t *testing.T) {
	m := mixedPairwise(random.New(21), 8, 3, randomEdges(random.New(21), 8, 0.5), false)
	opt := trws.Options{MaxIterations: 50, GapTolerance: 0, CheckEvery: 5, HasTarget: true, Target: math.Inf(1)}
	_, r := solve(t, m, opt)
	if r.Stop != trws.StopTarget || r.Iterations != 5 || !(r.Energy < opt.Target) {
		t.Fatalf("target +Inf: stop %v after %d iterations, energy %v", r.Stop, r.Iterations, r.Energy)
	}
	opt.Target = math.Inf(-1)
	if _, r = solve(t, m, opt); r.Stop != trws.StopIterations || r.Iterations != 50 {
		t.Fatalf("target −Inf: stop %v after %d iterations", r.Stop, r.Iterations)
	}
}

// TestModelIsTheSourceUntilATermChanges: a solver's Model is the model it was
// built from (no rebuild) until a unary or pairwise term changes, and then a
// model of the changed problem; certificates check against either.
func TestModelIsTheSourceUntilATermChanges(t *testing.T) {
	m := random.PottsGrid(random.New(5), 12, 9, 3)
	s, err := trws.New(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Solve(context.Background(), trws.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Model()
	if err != nil || got != m {
		t.Fatalf("Model of an unchanged solver: %p (err %v), want the source %p", got, err, m)
	}
	if v, err := s.Certificate(r.Labeling).Check(got); err != nil || math.Abs(v.Energy-m.Energy(r.Labeling)) > 1e-9 {
		t.Fatalf("certificate on the source: %+v, %v", v, err)
	}
	u := make([]float64, 3)
	u[1] = 2.5
	if err := s.AddUnary(7, u); err != nil {
		t.Fatal(err)
	}
	changed, err := s.Model()
	if err != nil || changed == m {
		t.Fatalf("Model after AddUnary: the source still (err %v)", err)
	}
	x := slices.Clone(r.Labeling)
	for _, l := range []int{0, 1, 2} {
		x[7] = l
		if want := m.Energy(x) + u[l]; math.Abs(changed.Energy(x)-want) > 1e-9 {
			t.Fatalf("label %d: the changed model's energy %v, want %v", l, changed.Energy(x), want)
		}
	}
	if _, err := s.Certificate(x).Check(changed); err != nil {
		t.Fatal(err)
	}
}

// TestSavedMessagesGoOnWhereTheSolverStood: a new solver of the same model
// with the messages a solver saved runs on as the solver did from there — the
// same bound and labeling after the same further iterations — whatever the
// solver did after saving them (more iterations, a table rewritten).
func TestSavedMessagesGoOnWhereTheSolverStood(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		rng := random.New(2900 + seed)
		n := 10
		m := mixedPairwise(rng, n, 4, randomEdges(rng, n, 0.5), seed%2 == 0)
		few := trws.DefaultOptions()
		few.MaxIterations, few.GapTolerance = 5, 0
		s, _ := solve(t, m, few)
		saved := s.SaveMessages()
		a, err := s.Solve(context.Background(), few)
		if err != nil {
			t.Fatal(err)
		}
		for f := range m.NumFactors() { // the first edge's table, zeros now
			if vars := m.FactorVars(f); len(vars) == 2 {
				if err := s.SetTable(0, make([]float64, m.NumLabels(int(vars[0]))*m.NumLabels(int(vars[1])))); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if _, err := s.Solve(context.Background(), few); err != nil {
			t.Fatal(err)
		}
		r, err := trws.New(m)
		if err != nil {
			t.Fatal(err)
		}
		if !r.LoadMessages(saved) {
			t.Fatal("the saved messages do not fit a solver of the same model")
		}
		b, err := r.Solve(context.Background(), few)
		if err != nil {
			t.Fatal(err)
		}
		if a.LowerBound != b.LowerBound || !slices.Equal(a.Labeling, b.Labeling) {
			t.Fatalf("seed %d: from the saved messages bound %v, labeling %v; the solver went on to %v, %v", seed, b.LowerBound, b.Labeling, a.LowerBound, a.Labeling)
		}
	}
	if r, _ := trws.New(mixedPairwise(random.New(1), 3, 2, [][2]int{{0, 1}}, false)); r.LoadMessages(make([]float32, 1)) {
		t.Fatal("messages of another model loaded")
	}
}

// TestSetTableLeavesASharedTableToTheEdgesKeepingIt: two edges of a chain
// share one explicit function (one table slot in the solver); rewriting the
// first leaves the second on the old table — the solver, run to convergence
// on the tree, reaches the optimum of the model with one table new and the
// other old — while a table an edge has to itself is rewritten in place.
func TestSetTableLeavesASharedTableToTheEdgesKeepingIt(t *testing.T) {
	for seed := range uint64(20) {
		rng := random.New(3100 + seed)
		table := func() []float64 {
			tab := make([]float64, 9)
			for i := range tab {
				tab[i] = 4 * rng.Float64()
			}
			return tab
		}
		unary := make([][]float64, 4)
		for v := range unary {
			unary[v] = []float64{rng.Float64(), rng.Float64(), rng.Float64()}
		}
		build := func(tabs [3][]float64, share bool) *model.Model {
			b := model.NewBuilder([]int{3, 3, 3, 3})
			for v, u := range unary {
				if err := b.AddTable([]int{v}, u); err != nil {
					t.Fatal(err)
				}
			}
			var ids [3]int
			for e, tab := range tabs {
				if share && e == 1 { // edges 0 and 1 share one function
					ids[1] = ids[0]
				} else {
					var err error
					if ids[e], err = b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{3, 3}, Table: tab}); err != nil {
						t.Fatal(err)
					}
				}
				if err := b.AddFactor(ids[e], e, e+1); err != nil {
					t.Fatal(err)
				}
			}
			m, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		old, own := table(), table()
		s, err := trws.New(build([3][]float64{old, old, own}, true))
		if err != nil {
			t.Fatal(err)
		}
		fresh, mine := table(), table()
		if err := s.SetTable(0, fresh); err != nil {
			t.Fatal(err)
		}
		if err := s.SetTable(2, mine); err != nil {
			t.Fatal(err)
		}
		want := build([3][]float64{fresh, old, mine}, false)
		r, err := s.Solve(context.Background(), trws.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if opt := optimum(t, want); !within(r.LowerBound, opt, 1e-5) || !within(want.Energy(r.Labeling), opt, 1e-9) {
			t.Fatalf("seed %d: the rewritten solver ends at bound %v, labeling energy %v; the optimum with the shared table kept is %v",
				seed, r.LowerBound, want.Energy(r.Labeling), opt)
		}
	}
}

// TestACheckIsTheSameOnAnyNumberOfCores: Check sums every D_v over v's factors
// in factor order and the edges' minima in edge order whatever the cores it
// runs on (spread), so a certificate's bound is the same bit for bit on one
// core and on several — here on 200×200 grids of every pairwise kind, edges in
// grid and in shuffled order, and a damaged certificate fails alike.
func TestACheckIsTheSameOnAnyNumberOfCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer trws.SmallRanges(1 << 10)() // the 200×200 grids in several ranges
	for seed := range uint64(3) {
		rng := random.New(500 + seed)
		var edges [][2]int
		for v := range 200 * 200 {
			if v%200 < 199 {
				edges = append(edges, [2]int{v, v + 1})
			}
			if v+200 < 200*200 {
				edges = append(edges, [2]int{v, v + 200})
			}
		}
		if seed > 0 {
			rng.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
		}
		m := mixedPairwise(rng, 200*200, 4, edges, seed == 2)
		s, err := trws.New(m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Solve(context.Background(), trws.Options{MaxIterations: 20})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GOMAXPROCS(1)
		cert := s.Certificate(r.Labeling)
		var want trws.Verdict
		for _, procs := range []int{1, 2, 3, 8} {
			runtime.GOMAXPROCS(procs)
			if c := s.Certificate(r.Labeling); !reflect.DeepEqual(c, cert) {
				t.Errorf("seed %d: the certificate made on %d cores differs from one core's", seed, procs)
			}
			v, err := cert.Check(m)
			if err != nil {
				t.Fatal(err)
			}
			if procs == 1 {
				want = v
			} else if v != want {
				t.Errorf("seed %d: %d cores checked %+v, one %+v", seed, procs, v, want)
			}
		}
		if math.IsInf(want.Bound, 0) || math.IsNaN(want.Bound) || want.Bound > want.Energy+1e-9*math.Abs(want.Energy) {
			t.Errorf("seed %d: bound %v, energy %v", seed, want.Bound, want.Energy)
		}
		// Damaged in several places, far apart: every number of cores stops at
		// the first damage in order, as one core does.
		for _, damage := range []struct {
			what string
			do   func(c *trws.Certificate)
		}{
			{"two non-finite messages", func(c *trws.Certificate) {
				c.Messages[len(c.Messages)*3/4] = math.NaN()
				c.Messages[len(c.Messages)/3] = math.Inf(-1)
			}},
			{"a swapped edge after a non-finite message", func(c *trws.Certificate) {
				c.Messages[len(c.Messages)/5] = math.Inf(1)
				e := len(c.Edges) * 4 / 5
				c.Edges[e] = [2]int{c.Edges[e][1], c.Edges[e][0]}
			}},
			{"two shares out of range", func(c *trws.Certificate) {
				c.Share[len(c.Share)*2/3], c.Share[len(c.Share)/2] = -1, 2
			}},
			{"shares summing over 1", func(c *trws.Certificate) {
				for e := range c.Share {
					if e%7 == 3 {
						c.Share[e] = 1
					}
				}
			}},
			{"too few messages", func(c *trws.Certificate) { c.Messages = c.Messages[:len(c.Messages)*9/10] }},
		} {
			bad := *cert
			bad.Messages, bad.Edges, bad.Share = slices.Clone(cert.Messages), slices.Clone(cert.Edges), slices.Clone(cert.Share)
			damage.do(&bad)
			var first error
			for _, procs := range []int{1, 2, 3, 8} {
				runtime.GOMAXPROCS(procs)
				_, err := bad.Check(m)
				if procs == 1 {
					if first = err; err == nil {
						t.Errorf("seed %d: %s passed the check", seed, damage.what)
					}
				} else if fmt.Sprint(err) != fmt.Sprint(first) {
					t.Errorf("seed %d, %s: %d cores said %v, one %v", seed, damage.what, procs, err, first)
				}
			}
		}
		cert.Share[len(cert.Share)/2] = 2
		if _, err := cert.Check(m); err == nil || !strings.Contains(err.Error(), "outside [0,1]") {
			t.Errorf("seed %d: a share of 2 gave %v", seed, err)
		}
	}
}
