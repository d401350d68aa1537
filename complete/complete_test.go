package complete_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/complete"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/enumerate"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// models are random models of every kind the package must handle: dense and
// sparse pairwise, higher order, grids, with 1-label variables and +Inf entries.
func models(seed uint64) []*model.Model {
	rng := random.New(seed)
	return []*model.Model{
		random.DensePairwise(rng, 7, 3, 0.5),
		random.DensePairwise(rng, 9, 3, 0.25),
		random.HigherOrder(rng, 8, 3, 3, 7),
		random.PottsGrid(rng, 3, 3, 3),
		random.ParametricGrid(rng, 4, 2, 3),
		random.FrustratedGrid(rng, 3, 3),
	}
}

// randomAlive keeps each variable's labels with probability keep (at least
// one), so that some variables are decided and the rest split in components.
func randomAlive(rng *rand.Rand, m *model.Model, keep float64) [][]int {
	alive := make([][]int, m.NumVars())
	for v := range alive {
		for l := range m.NumLabels(v) {
			if rng.Float64() < keep {
				alive[v] = append(alive[v], l)
			}
		}
		if len(alive[v]) == 0 {
			alive[v] = []int{rng.IntN(m.NumLabels(v))}
		}
	}
	return alive
}

// minOver is the minimum of m over the labelings within alive (nil: every
// label), by enumeration.
func minOver(t *testing.T, m *model.Model, alive [][]int) float64 {
	t.Helper()
	r := m
	if alive != nil { // nil: every label
		var err error
		if r, err = m.Restrict(alive); err != nil {
			t.Fatal(err)
		}
	}
	_, e, err := enumerate.Minimize(r, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func within(x []int, alive [][]int) bool {
	for v, l := range x {
		found := false
		for _, a := range alive[v] {
			found = found || a == l
		}
		if !found {
			return false
		}
	}
	return true
}

func close(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*max(1, math.Abs(b))
}

// bruteEngine is an Engine that enumerates (the external engine's path without
// toulbar2); fail makes it fail, unsure makes it claim no optimality, stuck
// makes it work until its context ends, stopped too but then return its
// labeling unproven (toulbar2 stopped at a deadline: the best it wrote).
type bruteEngine struct{ fail, unsure, stuck, stopped bool }

func (bruteEngine) Name() string { return "brute" }

func (e bruteEngine) Solve(ctx context.Context, m *model.Model) ([]int, bool, error) {
	if e.stuck || e.stopped {
		<-ctx.Done()
		if e.stopped {
			x, _, err := enumerate.Minimize(m, 1<<22)
			return x, false, err
		}
		return nil, false, ctx.Err()
	}
	if e.fail {
		return nil, false, errors.New("engine down")
	}
	x, _, err := enumerate.Minimize(m, 1<<22)
	return x, !e.unsure, err
}

// TestCompletionMinimisesOverTheAliveLabels: on many random models and alive
// sets, a completion that says optimal has the minimum over the alive labels,
// whichever method solved each component — enumeration, dynamic programming or
// an engine; one with open components says so, and stays within alive.
func TestCompletionMinimisesOverTheAliveLabels(t *testing.T) {
	budgets := []struct {
		name    string
		b       complete.Budget
		method  string // what every component with ≥ 2 labelings must be solved by
		optimal bool
		reason  string // what an open component's reason says
	}{
		{"enumeration", complete.Budget{States: math.Inf(1)}, complete.Enumeration, true, ""},
		{"dynamic programming", complete.Budget{Table: 1 << 20}, complete.DynamicProgramming, true, ""},
		{"engine", complete.Budget{Engine: bruteEngine{}}, "brute", true, ""},
		{"open", complete.Budget{}, complete.Open, false, "elimination tables past"},
		{"engine unsure", complete.Budget{Engine: bruteEngine{unsure: true}}, complete.Open, false, "no proof of optimality"},
		{"engine failing", complete.Budget{Engine: bruteEngine{fail: true}}, complete.Open, false, "engine down"},
		{"engine out of time", complete.Budget{Engine: bruteEngine{stuck: true}, EngineDeadline: time.Now().Add(time.Millisecond)}, complete.Open, false, "was spent"},
	}
	for seed := range uint64(40) {
		rng := random.New(1000 + seed)
		for mi, m := range models(seed) {
			alive := randomAlive(rng, m, 0.6)
			want := minOver(t, m, alive)
			for _, c := range budgets {
				res, err := complete.Complete(context.Background(), m, alive, nil, c.b)
				if err != nil {
					t.Fatalf("seed %d model %d %s: %v", seed, mi, c.name, err)
				}
				if !within(res.Labeling, alive) {
					t.Fatalf("seed %d model %d %s: labeling %v outside the alive labels", seed, mi, c.name, res.Labeling)
				}
				if e := m.Energy(res.Labeling); e != res.Energy {
					t.Fatalf("seed %d model %d %s: energy %v, the labeling's %v", seed, mi, c.name, res.Energy, e)
				}
				open := false
				for _, s := range res.Components {
					if s.States >= 2 && s.Method != c.method {
						t.Fatalf("seed %d model %d %s: a component of %g labelings solved by %s", seed, mi, c.name, s.States, s.Method)
					}
					open = open || !s.Exact
					if !s.Exact && (s.Reason == "" || !strings.Contains(s.Reason, c.reason)) {
						t.Errorf("seed %d model %d %s: an open component's reason %q, want %q", seed, mi, c.name, s.Reason, c.reason)
					}
				}
				if res.Optimal == open {
					t.Fatalf("seed %d model %d %s: optimal %v with open components %v", seed, mi, c.name, res.Optimal, open)
				}
				if res.Optimal && !close(res.Energy, want) {
					t.Fatalf("seed %d model %d %s: optimal energy %v, the minimum over alive is %v", seed, mi, c.name, res.Energy, want)
				}
				if res.Energy < want && !close(res.Energy, want) {
					t.Fatalf("seed %d model %d %s: energy %v below the minimum %v", seed, mi, c.name, res.Energy, want)
				}
			}
		}
	}
}

// TestEngineStoppedAtTheDeadlineKeepsItsLabeling: an engine stopped when the
// completion's time is spent returns its best labeling unproven; the
// component stays open, says so, and keeps that labeling (here a minimum).
func TestEngineStoppedAtTheDeadlineKeepsItsLabeling(t *testing.T) {
	m := random.DensePairwise(random.New(3), 9, 3, 0.5)
	b := complete.Budget{Engine: bruteEngine{stopped: true}, EngineDeadline: time.Now().Add(50 * time.Millisecond)}
	res, err := complete.Complete(context.Background(), m, nil, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Components) != 1 || res.Optimal || !strings.Contains(res.Components[0].Reason, "its best labeling kept") {
		t.Fatalf("optimal %v, components %+v: want one open, its engine's labeling kept", res.Optimal, res.Components)
	}
	if want := minOver(t, m, nil); !close(res.Energy, want) {
		t.Fatalf("energy %v, the engine's labeling (a minimum) %v", res.Energy, want)
	}
}

// TestCompletionAfterLabelEliminationIsAGlobalOptimum: the claim the package
// exists for — label elimination's alive labels (Algorithm 1 after it, the
// default), completed, give a minimum of the whole model.
func TestCompletionAfterLabelEliminationIsAGlobalOptimum(t *testing.T) {
	for seed := range uint64(30) {
		for mi, m := range models(seed) {
			el, err := persistency.PruneAfter(context.Background(), m, persistency.EliminateOptions{}, persistency.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := complete.Complete(context.Background(), m, el.Alive, el.Test, complete.DefaultBudget)
			if err != nil {
				t.Fatal(err)
			}
			if want := minOver(t, m, nil); !res.Optimal || !close(res.Energy, want) {
				t.Fatalf("seed %d model %d: optimal %v energy %v, the model's minimum %v", seed, mi, res.Optimal, res.Energy, want)
			}
		}
	}
}

// TestSplitDecomposesTheEnergy: the components' energies of any labeling within
// alive add up to the model's less one constant, and no factor joins two
// components.
func TestSplitDecomposesTheEnergy(t *testing.T) {
	for seed := range uint64(30) {
		rng := random.New(2000 + seed)
		for mi, m := range models(seed) {
			alive := randomAlive(rng, m, 0.5)
			comps, err := complete.Split(m, alive)
			if err != nil {
				t.Fatal(err)
			}
			of := map[int]int{}
			for i, c := range comps {
				if len(c.Vars) != c.Model.NumVars() {
					t.Fatalf("component %d: %d variables, its model %d", i, len(c.Vars), c.Model.NumVars())
				}
				for j, v := range c.Vars {
					if len(alive[v]) < 2 || len(c.Domains[j]) != c.Model.NumLabels(j) {
						t.Fatalf("component %d holds variable %d of alive labels %v (model %d labels)", i, v, alive[v], c.Model.NumLabels(j))
					}
					of[v] = i
				}
			}
			for f := range m.NumFactors() {
				comp := -1
				for _, u := range m.FactorVars(f) {
					if i, ok := of[int(u)]; ok {
						if comp >= 0 && comp != i {
							t.Fatalf("seed %d model %d: factor %d joins components %d and %d", seed, mi, f, comp, i)
						}
						comp = i
					}
				}
			}
			constant, seen := 0.0, false // E − Σ components, +Inf when a decided factor forbids every completion
			for range 20 {
				x := make([]int, m.NumVars())
				for v, ls := range alive {
					x[v] = ls[rng.IntN(len(ls))]
				}
				sum := 0.0
				for _, c := range comps {
					loc := make([]int, len(c.Vars))
					for j, v := range c.Vars {
						loc[j] = slices.Index(c.Domains[j], x[v])
					}
					sum += c.Model.Energy(loc)
				}
				e := m.Energy(x)
				if math.IsInf(sum, 1) {
					if !math.IsInf(e, 1) {
						t.Fatalf("seed %d model %d: energy %v, components +Inf", seed, mi, e)
					}
					continue
				}
				if !seen {
					constant, seen = e-sum, true
				} else if !close(e-sum, constant) {
					t.Fatalf("seed %d model %d: E − Σ components %v, before %v", seed, mi, e-sum, constant)
				}
			}
		}
	}
}

// TestDynamicProgrammingIsExactOnAChainOfAnySize: a chain of 2,000 variables
// of 4 labels is a tree (width 1) — far past enumeration, exact by elimination.
func TestDynamicProgrammingIsExactOnAChainOfAnySize(t *testing.T) {
	rng := random.New(5)
	const n, k = 2000, 4
	labels := make([]int, n)
	for v := range labels {
		labels[v] = k
	}
	b := model.NewBuilder(labels)
	unary, pair := make([][]float64, n), make([][]float64, n) // pair[v]: (v−1, v)
	for v := range n {
		unary[v] = make([]float64, k)
		for l := range unary[v] {
			unary[v][l] = rng.Float64()
		}
		if err := b.AddTable([]int{v}, unary[v]); err != nil {
			t.Fatal(err)
		}
		if v > 0 {
			pair[v] = make([]float64, k*k)
			for i := range pair[v] {
				pair[v][i] = rng.Float64()
			}
			if err := b.AddTable([]int{v - 1, v}, pair[v]); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	alive := make([][]int, n)
	for v := range alive {
		alive[v] = []int{0, 1, 2, 3}
	}
	res, err := complete.Complete(context.Background(), m, alive, nil, complete.DefaultBudget)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Components) != 1 || res.Components[0].Method != complete.DynamicProgramming || res.Components[0].Width != 1 || !res.Optimal {
		t.Fatalf("components %+v", res.Components)
	}
	// The chain's minimum by the textbook forward pass.
	cost := append([]float64(nil), unary[0]...)
	for v := 1; v < n; v++ {
		next := make([]float64, k)
		for l := range k {
			next[l] = math.Inf(1)
			for p := range k {
				next[l] = min(next[l], cost[p]+pair[v][p*k+l])
			}
			next[l] += unary[v][l]
		}
		cost = next
	}
	want := slices.Min(cost) + m.Offset()
	if !close(res.Energy, want) {
		t.Fatalf("energy %v, the chain's minimum %v", res.Energy, want)
	}
}

// TestCheckFindsANonOptimalComponent: Check accepts a completion's labeling and
// rejects, component by component, one changed to a worse label.
func TestCheckFindsANonOptimalComponent(t *testing.T) {
	for seed := range uint64(20) {
		rng := random.New(3000 + seed)
		for mi, m := range models(seed) {
			alive := randomAlive(rng, m, 0.7)
			res, err := complete.Complete(context.Background(), m, alive, nil, complete.DefaultBudget)
			if err != nil {
				t.Fatal(err)
			}
			checked, err := complete.Check(context.Background(), m, alive, res.Labeling, complete.DefaultBudget)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checked {
				if !c.Optimal {
					t.Fatalf("seed %d model %d: the completion's component %v not optimal at its check: %+v", seed, mi, c.Vars, c)
				}
			}
			// Each worse single-label change is found in its component.
			for _, s := range res.Components {
				v := s.Vars[0]
				for _, l := range alive[v] {
					x := append([]int(nil), res.Labeling...)
					x[v] = l
					if !(m.Energy(x) > res.Energy) || math.IsInf(m.Energy(x), 1) && math.IsInf(res.Energy, 1) {
						continue
					}
					checked, err := complete.Check(context.Background(), m, alive, x, complete.DefaultBudget)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range checked {
						if c.Vars[0] == v && c.Optimal && !close(c.Energy, c.Minimum) {
							t.Fatalf("seed %d model %d: a worse labeling of variable %d passes: %+v", seed, mi, v, c)
						}
						if c.Vars[0] == v && c.Optimal {
							t.Fatalf("seed %d model %d: labeling %d of variable %d, %v above the optimum, passes its check", seed, mi, l, v, m.Energy(x)-res.Energy)
						}
					}
				}
			}
		}
	}
}

// TestNilAliveIsEveryLabel: alive nil (nothing proven, as
// persistency.Result.Domains says it) completes the whole model exactly.
func TestNilAliveIsEveryLabel(t *testing.T) {
	for seed := range uint64(10) {
		m := random.DensePairwise(random.New(seed), 8, 3, 0.4)
		res, err := complete.Complete(context.Background(), m, nil, nil, complete.DefaultBudget)
		if err != nil {
			t.Fatal(err)
		}
		if want := minOver(t, m, nil); !res.Optimal || !close(res.Energy, want) {
			t.Fatalf("seed %d: optimal %v energy %v, minimum %v", seed, res.Optimal, res.Energy, want)
		}
		checked, err := complete.Check(context.Background(), m, nil, res.Labeling, complete.DefaultBudget)
		if err != nil || len(checked) == 0 || !checked[0].Optimal {
			t.Fatalf("seed %d: check %+v, %v", seed, checked, err)
		}
	}
}

// TestBadAliveLabelsAreErrors: alive label lists that do not fit the model are
// named, not trusted.
func TestBadAliveLabelsAreErrors(t *testing.T) {
	m := random.DensePairwise(random.New(1), 3, 3, 1)
	ks := []int{m.NumLabels(0), m.NumLabels(1), m.NumLabels(2)}
	all := func(k int) []int {
		out := make([]int, k)
		for l := range out {
			out[l] = l
		}
		return out
	}
	for _, c := range []struct {
		name  string
		alive [][]int
		want  string
	}{
		{"too few", [][]int{all(ks[0])}, "3 variables"},
		{"empty", [][]int{all(ks[0]), {}, all(ks[2])}, "no alive label"},
		{"out of range", [][]int{all(ks[0]), {ks[1]}, all(ks[2])}, "not ascending labels"},
		{"not ascending", [][]int{all(ks[0]), {0, 0}, all(ks[2])}, "not ascending labels"},
	} {
		if _, err := complete.Complete(context.Background(), m, c.alive, nil, complete.DefaultBudget); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

// TestDynamicProgrammingIsExactOnAGrid: a grid-shaped component (what pbp's
// windows leave on a hard region, every label alive) is solved by dynamic
// programming — on 12×9 within the default table budget by min-fill's order
// (width 12), where min-weight's (width 13, 3^14 entries) is past it — and
// its energy is the minimum a dynamic programming over the frontier finds.
func TestDynamicProgrammingIsExactOnAGrid(t *testing.T) {
	for _, c := range []struct{ w, h, k, width int }{{12, 9, 3, 12}, {10, 6, 3, 7}, {30, 4, 4, 4}} {
		m := random.PottsGrid(random.New(uint64(c.w*c.h)), c.w, c.h, c.k)
		res, err := complete.Complete(context.Background(), m, nil, nil, complete.DefaultBudget)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Components) != 1 || res.Components[0].Method != complete.DynamicProgramming || res.Components[0].Width > c.width || !res.Optimal {
			t.Fatalf("%d×%d: components %+v", c.w, c.h, res.Components)
		}
		if want := frontierMinimum(m, c.w, c.h, c.k); !close(res.Energy, want) {
			t.Fatalf("%d×%d: energy %v, the frontier minimum %v", c.w, c.h, res.Energy, want)
		}
	}
}

// frontierMinimum is the minimum energy of a w×h grid model of k labels
// (variable y·w+x, factors on a pixel and its left and upper neighbours) by
// dynamic programming over the frontier: pixels in column-major order, the
// state the labels of the last h of them, one pixel added a step.
func frontierMinimum(m *model.Model, w, h, k int) float64 {
	states, pow := 1, make([]int, h)
	for y := range h {
		pow[y] = states
		states *= k
	}
	at := func(p int) int { return (p%w)*h + p/w } // a pixel's step
	attached := make([][]int, w*h)                 // the factors each step completes
	for f := range m.NumFactors() {
		last := 0
		for _, v := range m.FactorVars(f) {
			last = max(last, at(int(v)))
		}
		attached[last] = append(attached[last], f)
	}
	x := make([]int, m.NumVars())
	cost := make([]float64, states)
	for s := range cost {
		cost[s] = math.Inf(1)
	}
	cost[0] = 0
	for step := range w * h {
		col, row := step/h, step%h
		next := make([]float64, states)
		for s := range next {
			next[s] = math.Inf(1)
		}
		for s, c := range cost {
			if math.IsInf(c, 1) {
				continue
			}
			for y := range h { // digit y: row y of this column above row, else of the last
				if d := s / pow[y] % k; y < row {
					x[y*w+col] = d
				} else if col > 0 {
					x[y*w+col-1] = d
				}
			}
			for l := range k {
				x[row*w+col] = l
				e := c
				for _, f := range attached[step] {
					e += m.FactorValue(f, x)
				}
				t := s + (l-s/pow[row]%k)*pow[row]
				next[t] = min(next[t], e)
			}
		}
		cost = next
	}
	return slices.Min(cost) + m.Offset()
}

// TestWidthBoundsTheTreewidth: Width, min-fill's elimination width, is exact
// where the treewidth is known — 1 on a chain, n−1 on n pairwise-joined
// variables — and near the shorter side on a grid.
func TestWidthBoundsTheTreewidth(t *testing.T) {
	// pairs is a model of n binary variables with a factor on each pair of
	// variables joined(u, v) says, u < v.
	pairs := func(n int, joined func(u, v int) bool) *model.Model {
		labels := make([]int, n)
		for v := range labels {
			labels[v] = 2
		}
		b := model.NewBuilder(labels)
		for v := range n {
			for u := range v {
				if !joined(u, v) {
					continue
				}
				if err := b.AddTable([]int{u, v}, []float64{0, 1, 1, 0}); err != nil {
					t.Fatal(err)
				}
			}
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if w := complete.Width(pairs(50, func(u, v int) bool { return v == u+1 })); w != 1 {
		t.Errorf("a chain: width %d, want 1", w)
	}
	if w := complete.Width(pairs(12, func(int, int) bool { return true })); w != 11 {
		t.Errorf("12 pairwise-joined variables: width %d, want 11", w)
	}
	if w := complete.Width(random.PottsGrid(random.New(1), 30, 6, 2)); w < 6 || w > 8 {
		t.Errorf("a 30×6 grid: width %d, want 6 to 8", w)
	}
}
