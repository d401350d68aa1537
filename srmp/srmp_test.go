package srmp_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/srmp"
	"github.com/partopt/partopt/trws"
)

var ctx = context.Background()

func newSolver(t *testing.T, m *model.Model) *srmp.Solver {
	t.Helper()
	s, err := srmp.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func within(a, b, rel float64) bool {
	return a == b || math.Abs(a-b) <= rel*math.Max(1, math.Abs(b))
}

// TestBoundNeverAboveOptimumAndAgreementIsOptimal: on 600 random models of order up
// to 4 (mixed label counts, 1-label variables, +Inf entries, parametric pairwise
// functions, constants), for the default options and for runs stopped after 1–3
// iterations: the lower bound (the solver's and the certificate's, Bound) never
// exceeds the minimum energy (enumeration); Energy is the labeling's energy, finite
// on every feasible model (the rounding's search); when
// every variable is consistent, the consistency labeling is a minimiser and its
// certificate checks; the certificate of a labeling above the minimum never checks.
// The runs must include both full agreement and partial agreement.
func TestBoundNeverAboveOptimumAndAgreementIsOptimal(t *testing.T) {
	var agreed, partial, infeasible int
	for seed := uint64(0); seed < 600; seed++ {
		rng := random.New(seed)
		m := random.HigherOrder(rng, 3+rng.IntN(6), 4, 4, 4+rng.IntN(12))
		opt, minE, err := oracle.BruteForce(m, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, iters := range []int{0, 1 + int(seed%3)} {
			o := trws.DefaultOptions()
			if iters > 0 {
				o.MaxIterations, o.GapTolerance = iters, 0
			}
			s := newSolver(t, m)
			res, err := s.Solve(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Bound()
			if err != nil {
				t.Fatal(err)
			}
			for _, lb := range []float64{res.LowerBound, b} {
				if !math.IsInf(minE, 1) && lb > minE+1e-9*math.Max(1, math.Abs(minE)) {
					t.Errorf("seed %d, %d iterations: lower bound %v above min E %v", seed, iters, lb, minE)
				}
			}
			if e := m.Energy(res.Labeling); e != res.Energy && !within(e, res.Energy, 1e-12) {
				t.Errorf("seed %d: Energy %v, the labeling's energy %v", seed, res.Energy, e)
			}
			if math.IsInf(res.Energy, 1) && !math.IsInf(minE, 1) {
				infeasible++
			}
			if res.Agreement {
				agreed++
				if e := m.Energy(res.Consistent); !within(e, minE, 1e-9) {
					t.Errorf("seed %d: agreement on a labeling of energy %v, min E %v", seed, e, minE)
				}
				if v, err := s.Certificate(res.Consistent).Check(m); err != nil || !v.Certified {
					t.Errorf("seed %d: agreement, but the certificate does not check: %+v %v", seed, v, err)
				}
			} else if res.Agreeing > 0 {
				partial++
			}
			if worse := worseLabeling(m, opt, minE); worse != nil {
				if v, err := s.Certificate(worse).Check(m); err != nil || v.Certified {
					t.Errorf("seed %d: a labeling of energy %v > min E %v certified (%+v, %v)", seed, m.Energy(worse), minE, v, err)
				}
			}
		}
	}
	t.Logf("%d runs in full agreement, %d partial; %d feasible models rounded to a forbidden labeling", agreed, partial, infeasible)
	if infeasible > 0 {
		t.Errorf("%d runs on feasible models rounded to a forbidden labeling: the search should find a feasible one on models this small", infeasible)
	}
	if agreed < 100 || partial < 50 {
		t.Errorf("too few runs with full (%d) or partial (%d) agreement: the test checks too little", agreed, partial)
	}
}

// worseLabeling returns a labeling of finite energy above minE, near opt, or nil.
func worseLabeling(m *model.Model, opt []int, minE float64) []int {
	x := slices.Clone(opt)
	for v := range x {
		for l := 0; l < m.NumLabels(v); l++ {
			old := x[v]
			x[v] = l
			if e := m.Energy(x); !math.IsInf(e, 1) && e > minE+1e-6*math.Max(1, math.Abs(minE)) {
				return x
			}
			x[v] = old
		}
	}
	return nil
}

// TestReducesToTRWSOnPairwiseModels: SRMP with these weights is TRW-S on pairwise
// models (Kolmogorov 2015). On 200 random pairwise models (dense tables with +Inf
// entries, Potts grids, truncated functions) both solvers run the same 30 iterations
// with no early stop: their bounds agree to float32 precision (TRW-S's messages are
// float32), and so do their best energies and their numbers of consistent variables,
// but for rare rounding ties, which must stay below 5% of the models.
func TestReducesToTRWSOnPairwiseModels(t *testing.T) {
	o := trws.DefaultOptions()
	o.MaxIterations, o.GapTolerance = 30, 0
	ties := 0
	const models = 200
	for seed := uint64(0); seed < models; seed++ {
		rng := random.New(seed)
		var m *model.Model
		switch seed % 3 {
		case 0:
			m = random.DensePairwise(rng, 4+rng.IntN(12), 5, 0.5)
		case 1:
			m = random.PottsGrid(rng, 2+rng.IntN(5), 2+rng.IntN(5), 1+rng.IntN(4))
		default:
			m = random.HigherOrder(rng, 10, 4, 2, 30)
		}
		s := newSolver(t, m)
		tr, err := trws.New(m)
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Solve(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tr.Solve(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if !within(a.LowerBound, b.LowerBound, 2e-5) {
			t.Errorf("seed %d: SRMP bound %v, TRW-S bound %v", seed, a.LowerBound, b.LowerBound)
		}
		if !within(a.Energy, b.Energy, 2e-5) || a.Agreeing != b.Agreeing {
			ties++
			t.Logf("seed %d: SRMP energy %v agreeing %d, TRW-S %v and %d", seed, a.Energy, a.Agreeing, b.Energy, b.Agreeing)
		}
	}
	if ties > models/20 {
		t.Errorf("%d of %d models differ in energy or agreement", ties, models)
	}
}

// TestCertificateCheckIsIndependentOfTheSolver: Check recomputes the bound from the
// model and the messages only. Arbitrary messages give a bound that is still ≤ min E;
// malformed certificates (wrong length, NaN or infinite messages, a labeling of the
// wrong size or out of range) are errors, never a verdict.
func TestCertificateCheckIsIndependentOfTheSolver(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		rng := random.New(seed)
		m := random.HigherOrder(rng, 6, 3, 3, 10)
		_, minE, err := oracle.BruteForce(m, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		s := newSolver(t, m)
		if _, err := s.Solve(ctx, trws.DefaultOptions()); err != nil {
			t.Fatal(err)
		}
		c := s.Certificate(make([]int, m.NumVars()))
		for i := range c.Messages {
			c.Messages[i] = 10 * (rng.Float64() - 0.5)
		}
		v, err := c.Check(m)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsInf(minE, 1) && v.Bound > minE+1e-9*math.Max(1, math.Abs(minE)) {
			t.Errorf("seed %d: random messages give bound %v > min E %v", seed, v.Bound, minE)
		}
		if len(c.Messages) == 0 {
			continue
		}
		bad := []struct {
			name string
			edit func(c *srmp.Certificate)
		}{
			{"short", func(c *srmp.Certificate) { c.Messages = c.Messages[1:] }},
			{"long", func(c *srmp.Certificate) { c.Messages = append(c.Messages, 0) }},
			{"NaN", func(c *srmp.Certificate) { c.Messages[0] = math.NaN() }},
			{"Inf", func(c *srmp.Certificate) { c.Messages[len(c.Messages)-1] = math.Inf(-1) }},
			{"labels", func(c *srmp.Certificate) { c.Labeling = c.Labeling[1:] }},
			{"label range", func(c *srmp.Certificate) { c.Labeling[0] = m.NumLabels(0) }},
		}
		for _, b := range bad {
			c := s.Certificate(make([]int, m.NumVars()))
			b.edit(c)
			if v, err := c.Check(m); err == nil {
				t.Errorf("seed %d: %s certificate accepted: %+v", seed, b.name, v)
			}
		}
	}
}

// TestWarmStartKeepsTheSharedFactorsMessages: Warm on the same model carries every
// message over (the next iteration continues exactly where the solver was), and on
// a sub-problem with changed unary terms and dropped factors it is a valid start:
// the bound is ≤ the sub-problem's minimum and agreement is still optimal.
func TestWarmStartKeepsTheSharedFactorsMessages(t *testing.T) {
	o := trws.DefaultOptions()
	o.MaxIterations, o.GapTolerance = 3, 0
	for seed := uint64(0); seed < 60; seed++ {
		rng := random.New(seed)
		m := random.HigherOrder(rng, 7, 3, 3, 12)
		s := newSolver(t, m)
		if _, err := s.Solve(ctx, o); err != nil {
			t.Fatal(err)
		}
		ident := make([]int, m.NumVars())
		for i := range ident {
			ident[i] = i
		}
		w, err := srmp.Warm(m, s, ident)
		if err != nil {
			t.Fatal(err)
		}
		b1, _ := s.Bound()
		b2, _ := w.Bound()
		if b1 != b2 {
			t.Errorf("seed %d: bound %v before Warm, %v after", seed, b1, b2)
		}
		a, _ := s.Solve(ctx, o)
		b, _ := w.Solve(ctx, o)
		if a.LowerBound != b.LowerBound || a.Energy != b.Energy || !slices.Equal(a.Consistent, b.Consistent) {
			t.Errorf("seed %d: the warm solver diverges from the original: %v/%v vs %v/%v", seed, a.LowerBound, a.Energy, b.LowerBound, b.Energy)
		}

		// A sub-problem: the first half of the variables, factors inside, new unary terms.
		keep := ident[:max(1, m.NumVars()/2)]
		sub, err := m.Induced(keep)
		if err != nil {
			t.Fatal(err)
		}
		bld := model.NewBuilder(labelsOf(sub.Model))
		for f := 0; f < sub.Model.NumFactors(); f++ {
			id, err := bld.AddFunction(*sub.Model.FactorFunction(f))
			if err != nil {
				t.Fatal(err)
			}
			args := []int{}
			for _, v := range sub.Model.FactorVars(f) {
				args = append(args, int(v))
			}
			if err := bld.AddFactor(id, args...); err != nil {
				t.Fatal(err)
			}
		}
		for v := range keep {
			u := make([]float64, m.NumLabels(v))
			for l := range u {
				u[l] = rng.Float64()
			}
			if err := bld.AddTable([]int{v}, u); err != nil {
				t.Fatal(err)
			}
		}
		p, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		ws, err := srmp.Warm(p, s, sub.Vars)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ws.Solve(ctx, trws.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		_, minE, err := oracle.BruteForce(p, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsInf(minE, 1) && r.LowerBound > minE+1e-9*math.Max(1, math.Abs(minE)) {
			t.Errorf("seed %d: warm sub-problem bound %v above its min E %v", seed, r.LowerBound, minE)
		}
		if r.Agreement && !within(p.Energy(r.Consistent), minE, 1e-9) {
			t.Errorf("seed %d: warm sub-problem agrees on energy %v, min E %v", seed, p.Energy(r.Consistent), minE)
		}
		if !slices.Equal(ws.Vars(), sub.Vars) {
			t.Errorf("seed %d: Vars %v, want %v", seed, ws.Vars(), sub.Vars)
		}
	}
	if _, err := srmp.Warm(random.HigherOrder(random.New(1), 3, 2, 2, 2), newSolver(t, random.HigherOrder(random.New(2), 2, 2, 2, 2)), []int{0, 1, 5}); err == nil {
		t.Error("Warm accepted a variable map out of range")
	}
}

func labelsOf(m *model.Model) []int {
	k := make([]int, m.NumVars())
	for v := range k {
		k[v] = m.NumLabels(v)
	}
	return k
}

// TestHugeTablesAreRefused: a factor whose function has more entries than the solver
// may enumerate (a Potts term on 2^15 labels: 2^30 entries, no table in memory) is
// refused with ErrTooLarge, and an explicit 2^30-entry table cannot even be built:
// neither allocates it.
func TestHugeTablesAreRefused(t *testing.T) {
	b := model.NewBuilder([]int{1 << 15, 1 << 15})
	id, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{1 << 15, 1 << 15}, W: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddFactor(id, 0, 1); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srmp.New(m); !errors.Is(err, srmp.ErrTooLarge) {
		t.Errorf("New on a 2^30-entry Potts factor: %v, want ErrTooLarge", err)
	}
	labels := make([]int, 30)
	for v := range labels {
		labels[v] = 2
	}
	vars := make([]int, 30)
	for v := range vars {
		vars[v] = v
	}
	if err := model.NewBuilder(labels).AddTable(vars, nil); err == nil {
		t.Error("a 2^30-entry table was accepted")
	}
}

// TestSolveReportsProgressAndStopsWhenCanceled.
func TestSolveReportsProgressAndStopsWhenCanceled(t *testing.T) {
	m := random.HigherOrder(random.New(3), 12, 4, 3, 40)
	s := newSolver(t, m)
	c, cancel := context.WithCancel(ctx)
	calls := 0
	o := trws.DefaultOptions()
	o.GapTolerance, o.CheckEvery = 0, 1
	o.Progress = func(p trws.Progress) {
		calls++
		if p.Variables != m.NumVars() || p.LowerBound < p.Bound || p.Iteration != calls {
			t.Errorf("progress %+v", p)
		}
		if calls == 4 {
			cancel()
		}
	}
	res, err := s.Solve(c, o)
	if !errors.Is(err, context.Canceled) || res.Stop != trws.StopCanceled || res.Iterations != 4 || calls != 4 {
		t.Errorf("canceled after 4 checks: err %v, stop %v, %d iterations, %d progress calls", err, res.Stop, res.Iterations, calls)
	}
	if e := m.Energy(res.Labeling); e != res.Energy {
		t.Errorf("canceled result: Energy %v, labeling's %v", res.Energy, e)
	}
	if s.Iterations() != 4 {
		t.Errorf("Iterations() = %d", s.Iterations())
	}
}

// TestLargeFiniteEnergiesAreNotTakenForForbidden: the penalty standing in for +Inf
// exceeds every finite energy, not just the ranges (a unary [1000, 999] with range 1
// once tied with its penalty): SRMP and TRW-S both agree on the optimum (1, 0).
func TestLargeFiniteEnergiesAreNotTakenForForbidden(t *testing.T) {
	b := model.NewBuilder([]int{2, 2})
	for _, u := range []struct {
		v int
		t []float64
	}{{0, []float64{1000, 999}}, {1, []float64{0, math.Inf(1)}}} {
		if err := b.AddTable([]int{u.v}, u.t); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddTable([]int{0, 1}, []float64{0, 0.1, 0.1, 0}); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trws.New(m)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]interface {
		Solve(context.Context, trws.Options) (trws.Result, error)
	}{"srmp": newSolver(t, m), "trws": tr} {
		res, err := s.Solve(ctx, trws.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Agreement || !slices.Equal(res.Consistent, []int{1, 0}) || res.Energy != 999.1 {
			t.Errorf("%s: agreement %v on %v, energy %v; want (1, 0) at 999.1", name, res.Agreement, res.Consistent, res.Energy)
		}
	}
}
