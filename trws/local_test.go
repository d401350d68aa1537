package trws

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// localModels are models of every kernel for the Local tests.
func localModels() map[string]*model.Model {
	return map[string]*model.Model{
		"K=2 denoising":       random.PottsDenoising(random.New(11), 30, 30, 2, 0.8, 4, 1.5),
		"K=4 denoising":       random.PottsDenoising(random.New(12), 30, 25, 4, 1.0, 4, 1.5),
		"K=8 grid, per-edge":  random.PottsGrid(random.New(13), 24, 16, 8),
		"K=3 grid, ties":      random.PottsGrid(random.New(14), 17, 13, 3),
		"parametric grid":     random.ParametricGrid(random.New(15), 20, 15, 6),
		"dense, mixed labels": random.DensePairwise(random.New(16), 80, 5, 0.05),
	}
}

// solvedLocal is a Local of m after a default solve, with the check's labels.
func solvedLocal(t *testing.T, m *model.Model) *Local {
	t.Helper()
	s, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Solve(context.Background(), DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	s.check()
	cons := make([]int, s.n)
	for i, l := range s.consLabel {
		cons[i] = int(l)
	}
	l, err := s.NewLocal(cons)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pruneStep changes the Locals ls (solvers of one problem in one state) as a
// pruning iteration does: 1 to most random nodes killed, the unary terms of
// their surviving neighbours raised by up to raise; it returns those
// neighbours (Kill's, the same on every Local).
func pruneStep(t *testing.T, rng *rand.Rand, most int, raise float64, ls ...*Local) []int {
	t.Helper()
	l := ls[0]
	var gone []int
	for range 1 + rng.IntN(most) {
		if v := rng.IntN(l.s.n); !l.dead[v] && !slices.Contains(gone, v) {
			gone = append(gone, v)
		}
	}
	changed := l.Kill(gone)
	for _, o := range ls[1:] {
		if !slices.Equal(o.Kill(gone), changed) {
			t.Fatal("Kill changed other nodes on another Local")
		}
	}
	for _, v := range changed {
		u := slices.Clone(l.s.u64[l.s.uoff[v]:l.s.uoff[v+1]])
		for i := range u {
			u[i] += raise * rng.Float64()
		}
		for _, o := range ls {
			if err := o.SetUnary(v, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	return changed
}

// TestKilledNodesLeaveTheRestrictedProblem: after Kill, a Local's passes over
// every surviving node are Restrict's solver's iteration, message for message
// and bit for bit (the fast Potts passes included), and the Local's solver is
// that problem, whose Draft is the Local's; with no node killed it is the
// Local's own solver.
func TestKilledNodesLeaveTheRestrictedProblem(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, m := range localModels() {
		l := solvedLocal(t, m)
		if r, keep, err := l.Solver(); err != nil || r != l.s || len(keep) != l.s.n {
			t.Fatalf("%s: no node killed, yet the Local's solver is a copy or loses nodes (%d kept, %v)", name, len(keep), err)
		}
		var gone []int
		for v := range l.s.n {
			if rng.IntN(5) == 0 {
				gone = append(gone, v)
			}
		}
		l.Kill(gone)
		r, keep, err := l.Solver()
		if err != nil {
			t.Fatal(err)
		}
		x := make([]int, len(keep))
		for i := range x {
			x[i] = rng.IntN(int(r.labels[i]))
		}
		if d, want := l.Draft(x), r.Draft(x); !slices.Equal(d.Labeling, want.Labeling) || !slices.EqualFunc(d.Messages, want.Messages, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("%s: the Local's draft differs from its solver's (%d against %d message entries)", name, len(d.Messages), len(want.Messages))
		}
		var region []int32
		for _, v := range keep {
			region = append(region, int32(v))
		}
		for it := range 3 {
			l.passes(region, true)
			r.forward()
			r.backward(false)
			for e := range r.tail {
				// Restrict keeps the edges in order: e is the e-th kept edge of l.s.
				f := keptEdge(l, keep, e)
				a, b := r.msgInto(int32(e), r.head[e]), l.s.msgInto(f, l.s.head[f])
				c, d := r.msgInto(int32(e), r.tail[e]), l.s.msgInto(f, l.s.tail[f])
				if !slices.Equal(a, b) || !slices.Equal(c, d) {
					t.Fatalf("%s, iteration %d: edge %d's messages differ: %v %v against %v %v", name, it, e, a, c, b, d)
				}
			}
		}
	}
}

// keptEdge is the solver edge of l.s that Restrict(keep) numbers e.
func keptEdge(l *Local, keep []int, e int) int32 {
	in := make([]bool, l.s.n)
	for _, v := range keep {
		in[v] = true
	}
	for f := range l.s.tail {
		if in[l.s.tail[f]] && in[l.s.head[f]] {
			if e == 0 {
				return int32(f)
			}
			e--
		}
	}
	panic("no such edge")
}

// TestSettledLabelsHoldForTheWholeProblem: after nodes are removed and their
// neighbours' unary terms changed, a Settle that succeeds leaves every
// surviving node with the consistency label that the whole problem's check
// computes from the same messages — near the change and far from it — and
// Settle does succeed on most such changes; also when it may stop with region
// nodes left inconsistent (Stable), whose label is then −1 as in the check.
func TestSettledLabelsHoldForTheWholeProblem(t *testing.T) {
	for _, stable := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("Stable%d", stable), func(t *testing.T) { settledLabelsHold(t, stable) })
	}
}

func settledLabelsHold(t *testing.T, stable int) {
	rng := rand.New(rand.NewPCG(3, 4))
	settled, tries, inconsistent := 0, 0, 0
	for name, m := range localModels() {
		l := solvedLocal(t, m)
		l.Stable = stable
		for round := range 20 {
			changed := pruneStep(t, rng, 3, 1, l)
			tries++
			if !l.Settle(context.Background(), changed) {
				if l.Settle(context.Background(), nil) {
					t.Fatalf("%s: a Local settled after a failed Settle", name)
				}
				break // the labels no longer hold: a whole solve follows
			}
			settled++
			r, keep, err := l.Solver()
			if err != nil {
				t.Fatal(err)
			}
			r.check()
			for i, v := range keep {
				got, want := l.Consistent(v), int(r.consLabel[i])
				if got != want {
					t.Fatalf("%s, round %d: node %d settled with label %d, the whole check gives %d", name, round, v, got, want)
				}
				if got < 0 {
					inconsistent++
				}
			}
		}
	}
	if settled < tries/2 {
		t.Errorf("only %d of %d changes settled: the test shows little", settled, tries)
	}
	t.Logf("%d of %d changes settled, %d inconsistent labels after them", settled, tries, inconsistent)
}

// TestSettledSolvesAgreeAsWholeSolvesDo: a solve that settles its last
// disagreements (Options.SettleBelow) instead of iterating the whole problem
// stops with agreement only when the whole check of its final messages finds
// every node consistent with exactly those labels, and on models where the
// whole solve agrees it agrees too, on a labeling of the same (optimal)
// energy, in fewer whole iterations on the grids.
func TestSettledSolvesAgreeAsWholeSolvesDo(t *testing.T) {
	models := localModels()
	for seed := range uint64(12) {
		models[fmt.Sprintf("K=3 denoising %d", seed)] = random.PottsDenoising(random.New(100+seed), 40, 30, 3, 1.0, 4, 1.5)
		models[fmt.Sprintf("K=5 grid %d", seed)] = random.PottsGrid(random.New(200+seed), 25, 20, 5)
		models[fmt.Sprintf("parametric %d", seed)] = random.ParametricGrid(random.New(300+seed), 20, 20, 4)
	}
	whole := DefaultOptions()
	whole.SettleBelow = 0
	settling := DefaultOptions()
	settling.SettleBelow = 1 // from the first check on
	agreed, sooner := 0, 0
	for _, name := range slices.Sorted(maps.Keys(models)) {
		m := models[name]
		solve := func(o Options) (*Solver, Result) {
			s, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Solve(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			return s, r
		}
		_, w := solve(whole)
		s, r := solve(settling)
		if r.Agreement && r.Stop == StopAgreement {
			s.check()
			for i, l := range s.consLabel {
				if int(l) != r.Consistent[i] {
					t.Fatalf("%s: node %d settled with label %d, the whole check of the same messages gives %d", name, i, r.Consistent[i], l)
				}
			}
			if e := m.Energy(r.Consistent); math.Abs(e-r.Energy) > 1e-9*max(1, math.Abs(e)) || !slices.Equal(r.Labeling, r.Consistent) {
				t.Fatalf("%s: agreement on a labeling of energy %v, reported %v", name, e, r.Energy)
			}
		}
		if !w.Agreement {
			continue
		}
		if !r.Agreement {
			t.Errorf("%s: the whole solve agrees (%d iterations), the settled one stops with %v", name, w.Iterations, r.Stop)
			continue
		}
		agreed++
		if math.Abs(w.Energy-r.Energy) > 1e-9*max(1, math.Abs(w.Energy)) {
			t.Errorf("%s: agreement at energy %v, the whole solve's at %v", name, r.Energy, w.Energy)
		}
		if r.Iterations < w.Iterations {
			sooner++
		}
	}
	if agreed < len(models)/2 || sooner < agreed/2 {
		t.Errorf("%d of %d models agree, %d of them settle sooner: the test shows little", agreed, len(models), sooner)
	}
	t.Logf("%d of %d models agree, %d of them in fewer whole iterations when settled", agreed, len(models), sooner)
}
