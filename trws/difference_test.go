package trws

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
)

// randomLabelMap draws k distinct labels below r (ascending), one of them the test
// label y; each other label is movable (sent to y) with probability 1/2.
func randomLabelMap(rng *rand.Rand, k, r int) *model.LabelMap {
	labels := rng.Perm(r)[:k]
	slices.Sort(labels)
	y := labels[rng.IntN(k)]
	mp := &model.LabelMap{Labels: labels, Images: slices.Clone(labels)}
	for a, l := range labels {
		if l != y && rng.IntN(2) == 0 {
			mp.Images[a] = y
		}
	}
	return mp
}

// randomDifference draws a Difference function between two random label maps.
func randomDifference(rng *rand.Rand, x, y *model.LabelMap) *model.Function {
	base := []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}[rng.IntN(3)]
	T := []float64{0.5, 1, 2, 3, 4.5, 20, math.Inf(1)}[rng.IntN(7)]
	return &model.Function{Kind: model.Difference, Base: base, Shape: []int{len(x.Labels), len(y.Labels)},
		W: rng.Float64() * 3, T: T, Args: [2]*model.LabelMap{x, y}}
}

// edgeSolver is a solver of the two-variable model with fn on (vars[0], vars[1])
// (labels: the variables' label counts) and, when unary is set, that unary term on
// variable 0.
func edgeSolver(t testing.TB, fn *model.Function, labels []int, vars [2]int, unary []float64) *Solver {
	t.Helper()
	b := model.NewBuilder(labels)
	id, err := b.AddFunction(*fn)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddFactor(id, vars[0], vars[1]); err != nil {
		t.Fatal(err)
	}
	if unary != nil {
		if err := b.AddTable([]int{0}, unary); err != nil {
			t.Fatal(err)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDifferenceKernelEqualsTheTableKernel: the message of a verification term by
// two distance transforms equals min_a h(a) + g(a, ·) over its expanded table, in
// both directions, for every base kind, with movable labels on either side or none.
func TestDifferenceKernelEqualsTheTableKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for trial := 0; trial < 3000; trial++ {
		r := 1 + rng.IntN(12)
		x, y := randomLabelMap(rng, 1+rng.IntN(r), r), randomLabelMap(rng, 1+rng.IntN(r), r)
		fn := randomDifference(rng, x, y)
		// Listed head first: the swapped orientation.
		s := edgeSolver(t, fn, []int{len(y.Labels), len(x.Labels)}, [2]int{1, 0}, nil)
		// Small Potts differences become pattern edges; their Difference entry
		// stays, and its kernel is what this test checks.
		if pattern := fn.Base == model.Potts && TablesCheaper(len(x.Labels), len(y.Labels), int(s.difs[0].r)); s.kind[0] != kindDifference && (!pattern || s.kind[0] != kindPattern) {
			t.Fatalf("trial %d: edge of kind %d, want the Difference kernel", trial, s.kind[0])
		}
		for _, fromTail := range []bool{true, false} {
			// Variable 0 (the tail) takes fn's second argument y, variable 1 its first x.
			ks, kd := len(y.Labels), len(x.Labels)
			if !fromTail {
				ks, kd = kd, ks
			}
			h := make([]float32, ks)
			for i := range h {
				h[i] = float32(rng.NormFloat64() * 4)
				if rng.IntN(8) == 0 {
					h[i] = 1e20
				}
			}
			want := make([]float32, kd)
			for j := range want {
				want[j] = inf32
				for i, hv := range h {
					a, c := int32(i), int32(j) // tail label, head label
					if !fromTail {
						a, c = c, a
					}
					want[j] = min(want[j], hv+s.pairValue(0, a, c))
				}
			}
			wantC := normalize(want)
			got := make([]float32, kd)
			gotC := s.differenceMessage(0, h, got, fromTail)
			tol := func(a float32) float32 { return 1e-5 * max(1, float32(math.Abs(float64(a)))) }
			if d := gotC - wantC; d > tol(wantC) || -d > tol(wantC) {
				t.Fatalf("trial %d %v fromTail=%v h=%v: normalisation %v, table %v", trial, fn.Base, fromTail, h, gotC, wantC)
			}
			for j := range got {
				scale := abs32(want[j]) + abs32(wantC)
				if d := got[j] - want[j]; d > tol(scale) || -d > tol(scale) {
					t.Fatalf("trial %d %v fromTail=%v x=%+v y=%+v h=%v: message %v, table %v", trial, fn.Base, fromTail, *x, *y, h, got, want)
				}
			}
		}
		// pairValue agrees with the model's value.
		for a := range y.Labels {
			for c := range x.Labels {
				if got, want := s.pairValue(0, int32(a), int32(c)), fn.Pairwise(c, a); math.Abs(float64(got)-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Fatalf("trial %d: g(%d,%d) = %v, want %v", trial, c, a, got, want)
				}
			}
		}
	}
}

// TestDifferenceEdgesSolveAsTheirTables: TRW-S on a grid of verification terms gives
// the same bound, labeling and certificate verdict as on the same terms expanded to
// explicit tables, and a certificate made on one checks on the other.
func TestDifferenceEdgesSolveAsTheirTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for trial := 0; trial < 40; trial++ {
		base := []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}[trial%3]
		ms, mt := differenceGrid(t, rng, base)
		opt := DefaultOptions()
		opt.MaxIterations, opt.GapTolerance = 60, 0
		ss, err := New(ms)
		if err != nil {
			t.Fatal(err)
		}
		st, err := New(mt)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := ss.Solve(context.Background(), opt)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := st.Solve(context.Background(), opt)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(rs.LowerBound - rt.LowerBound); d > 1e-4*math.Max(1, math.Abs(rt.LowerBound)) {
			t.Fatalf("trial %d: bound %v with difference edges, %v with tables", trial, rs.LowerBound, rt.LowerBound)
		}
		if math.Abs(rs.Energy-rt.Energy) > 1e-9*math.Max(1, math.Abs(rt.Energy)) && math.Abs(ms.Energy(rs.Labeling)-mt.Energy(rs.Labeling)) > 1e-9 {
			t.Fatalf("trial %d: energies differ between the two forms of one model", trial)
		}
		cert := ss.Certificate(rs.Labeling)
		vs, err := cert.Check(ms)
		if err != nil {
			t.Fatal(err)
		}
		vt, err := cert.Check(mt)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(vs.Bound-vt.Bound) > 1e-9*math.Max(1, math.Abs(vt.Bound)) || vs.Certified != vt.Certified {
			t.Fatalf("trial %d: certificate bound %v on difference edges, %v on tables", trial, vs.Bound, vt.Bound)
		}
		if vs.Bound > rs.LowerBound+1e-4*math.Max(1, math.Abs(rs.LowerBound)) || vs.Bound < rs.LowerBound-1e-3*math.Max(1, math.Abs(rs.LowerBound)) {
			t.Fatalf("trial %d: polished bound %v far from the solver's %v", trial, vs.Bound, rs.LowerBound)
		}
	}
}

// TestSetFunctionSolvesTheNewProblem: an edge rewritten to a Difference term in
// place solves as a solver built on the new model, bad functions are refused, and
// a parametric term replaces it again.
func TestSetFunctionSolvesTheNewProblem(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	x, y := randomLabelMap(rng, 4, 6), randomLabelMap(rng, 3, 6)
	zero := &model.Function{Kind: model.Explicit, Shape: []int{4, 3}, Table: make([]float64, 12)}
	s := edgeSolver(t, zero, []int{4, 3}, [2]int{0, 1}, []float64{0.5, -1, 2, 0})
	fn := randomDifference(rng, x, y)
	if err := s.SetFunction(0, fn); err != nil {
		t.Fatal(err)
	}
	opt := DefaultOptions()
	opt.GapTolerance = 0
	r, err := s.Solve(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	nm, err := s.Model()
	if err != nil {
		t.Fatal(err)
	}
	best := math.Inf(1)
	for a := range 4 {
		for c := range 3 {
			best = math.Min(best, nm.Energy([]int{a, c}))
		}
	}
	if math.Abs(r.Energy-best) > 1e-9 || r.LowerBound > best+1e-5 || r.LowerBound < best-1e-4 {
		t.Fatalf("rewritten two-node tree: energy %v, bound %v, optimum %v", r.Energy, r.LowerBound, best)
	}
	bad := *fn
	bad.Shape = []int{3, 4}
	if s.SetFunction(0, &bad) == nil {
		t.Fatal("a difference of the wrong shape was accepted")
	}
	bad = *fn
	bad.Args[1] = &model.LabelMap{Labels: []int{0, 1, 2}, Images: []int{1, 2, 2}} // two test labels
	if s.SetFunction(0, &bad) == nil {
		t.Fatal("a difference moving labels to two test labels was accepted")
	}
	if s.SetFunction(0, &model.Function{Kind: model.Explicit, Shape: []int{4, 3}, Table: make([]float64, 12)}) == nil {
		t.Fatal("SetFunction took an explicit table")
	}
	// Back to a parametric term: the solver solves it as one built on it.
	potts := &model.Function{Kind: model.Potts, Shape: []int{4, 3}, W: 0.75}
	if err := s.SetFunction(0, potts); err != nil {
		t.Fatal(err)
	}
	if got, want := s.pairValue(0, 1, 2), float32(0.75); got != want {
		t.Fatalf("Potts edge after SetFunction: θ(1,2) = %v, want %v", got, want)
	}
}

// TestPairRowIsPairValue: the check's rows of an edge's term, for every kind
// (tables, Potts, truncated linear and quadratic, Difference), are its values.
func TestPairRowIsPairValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	x, y := randomLabelMap(rng, 5, 9), randomLabelMap(rng, 5, 9)
	table := make([]float64, 25)
	for i := range table {
		table[i] = rng.Float64()
	}
	for _, fn := range []*model.Function{
		{Kind: model.Explicit, Shape: []int{5, 5}, Table: table},
		{Kind: model.Potts, Shape: []int{5, 5}, W: 1.5},
		{Kind: model.TruncatedLinear, Shape: []int{5, 5}, W: 0.5, T: 2},
		{Kind: model.TruncatedQuadratic, Shape: []int{5, 5}, W: 0.25, T: 5},
		randomDifference(rng, x, y),
	} {
		s := edgeSolver(t, fn, []int{5, 5}, [2]int{0, 1}, nil)
		row := make([]float32, 5)
		for a := range int32(5) {
			s.pairRow(0, a, row)
			for b, v := range row {
				if want := s.pairValue(0, a, int32(b)); v != want {
					t.Fatalf("%v: pairRow(%d)[%d] = %v, pairValue %v", fn.Kind, a, b, v, want)
				}
			}
		}
	}
}

// differenceGrid draws a grid of up to 6×6 variables with random label maps, random
// unaries and a random Difference term of base kind on each edge, and returns it
// twice: with the Difference functions, and with each expanded to an explicit
// table.
func differenceGrid(t *testing.T, rng *rand.Rand, base model.Kind) (ms, mt *model.Model) {
	t.Helper()
	w, hgt, r := 2+rng.IntN(5), 2+rng.IntN(5), 2+rng.IntN(8)
	n := w * hgt
	maps := make([]*model.LabelMap, n)
	labels := make([]int, n)
	for v := range maps {
		maps[v] = randomLabelMap(rng, 1+rng.IntN(r), r)
		labels[v] = len(maps[v].Labels)
	}
	bs, bt := model.NewBuilder(labels), model.NewBuilder(labels)
	add := func(fn *model.Function, u, v int) {
		tab := make([]float64, 0, fn.Size())
		for a := range fn.Shape[0] {
			for c := range fn.Shape[1] {
				tab = append(tab, fn.Pairwise(a, c))
			}
		}
		for _, step := range []struct {
			b  *model.Builder
			fn model.Function
		}{{bs, *fn}, {bt, model.Function{Kind: model.Explicit, Shape: fn.Shape, Table: tab}}} {
			id, err := step.b.AddFunction(step.fn)
			if err != nil {
				t.Fatal(err)
			}
			if err := step.b.AddFactor(id, u, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for v := range n {
		u := make([]float64, labels[v])
		for l := range u {
			u[l] = rng.NormFloat64()
		}
		for _, b := range []*model.Builder{bs, bt} {
			if err := b.AddTable([]int{v}, u); err != nil {
				t.Fatal(err)
			}
		}
		for _, nb := range []int{v + 1, v + w} {
			if (nb == v+1 && nb%w == 0) || nb >= n {
				continue
			}
			a, c := v, nb
			if rng.IntN(2) == 0 {
				a, c = c, a
			}
			fn := randomDifference(rng, maps[a], maps[c])
			fn.Base = base
			add(fn, a, c)
		}
	}
	var err error
	if ms, err = bs.Build(); err != nil {
		t.Fatal(err)
	}
	if mt, err = bt.Build(); err != nil {
		t.Fatal(err)
	}
	return ms, mt
}
