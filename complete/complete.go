package complete

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/enumerate"
)

// Methods that solve a component, as reports name them.
const (
	Enumeration        = "enumeration"
	DynamicProgramming = "dynamic-programming"
	Open               = "open" // no method within the budget: the labeling is the best found
)

// Budget bounds the work of a completion.
type Budget struct {
	// States: a component of at most this many labelings is enumerated.
	States float64
	// Table: a component is solved by dynamic programming (variable
	// elimination) when no joint table along its elimination order has more
	// entries than Table, and all its tables together no more than 4·Table.
	Table float64
	// Engine, when set, solves the components past both (e.g. toulbar2 as an
	// external program, with a time limit of its own a component). With an
	// EngineDeadline it starts on no component after it, and is stopped there
	// (a budget shared by several completions).
	Engine         Engine
	EngineDeadline time.Time
}

// DefaultBudget enumerates up to 2^16 labelings and runs dynamic programming
// with tables up to 2^22 entries (~50 MB with their argmins).
var DefaultBudget = Budget{States: 1 << 16, Table: 1 << 22}

// Engine is an exact solver of a component model, e.g. toulbar2 as an external
// program.
type Engine interface {
	// Name names the engine in reports.
	Name() string
	// Solve returns a labeling of m and whether it is proven optimal (within
	// the engine's tolerance); a labeling that is not is the best it found
	// within the engine's own limits.
	Solve(ctx context.Context, m *model.Model) (x []int, optimal bool, err error)
}

// Solved is the outcome of one component.
type Solved struct {
	// Vars, the component's variables; Labels their labels (the model's).
	Vars, Labels []int
	// States is the component's number of labelings (alive labels only);
	// Width its elimination width when dynamic programming solved it.
	States float64
	Width  int
	// Method is Enumeration, DynamicProgramming, the engine's name, or Open.
	Method string
	// Exact says that Labels minimise the component; Reason says why not.
	Exact  bool
	Reason string
	// Energy is the component model's energy of Labels.
	Energy  float64
	Seconds float64
}

// Result is a completed labeling.
type Result struct {
	// Labeling takes every decided label and each component's; Energy is its
	// energy in the model.
	Labeling []int
	Energy   float64
	// Optimal says that every component was solved exactly: Labeling then
	// minimises the model (the alive labels being proven, see the package
	// comment).
	Optimal    bool
	Components []Solved
	Seconds    float64
}

// Complete returns a labeling of m within alive (alive[v]: v's alive labels,
// ascending; one label: v is decided; nil: every label alive) that minimises m over alive wherever the
// budget allows, each component solved by the cheapest exact method that fits
// (see Budget). start, when given, is a labeling within alive that open
// components start from (e.g. the elimination's test labeling); it is then
// improved by local moves. Components are solved concurrently.
func Complete(ctx context.Context, m *model.Model, alive [][]int, start []int, b Budget) (*Result, error) {
	t0 := time.Now()
	comps, err := Split(m, alive)
	if err != nil {
		return nil, err
	}
	if start != nil {
		if err := m.CheckLabeling(start); err != nil {
			return nil, fmt.Errorf("complete: start labeling: %w", err)
		}
	}
	res := &Result{Labeling: make([]int, m.NumVars()), Components: make([]Solved, len(comps)), Optimal: true}
	for v, ls := range orEvery(m, alive) {
		res.Labeling[v] = ls[0]
	}
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make([]error, len(comps))
	for range min(runtime.GOMAXPROCS(0), len(comps)) {
		wg.Go(func() {
			for i := range next {
				res.Components[i], errs[i] = solve(ctx, &comps[i], start, b)
			}
		})
	}
	for i := range comps {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, s := range res.Components {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for j, v := range s.Vars {
			res.Labeling[v] = s.Labels[j]
		}
		res.Optimal = res.Optimal && s.Exact
	}
	res.Energy = m.Energy(res.Labeling)
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// solve solves one component within b.
func solve(ctx context.Context, c *Component, start []int, b Budget) (Solved, error) {
	t0 := time.Now()
	s := Solved{Vars: c.Vars, States: c.States()}
	var x []int
	switch {
	case s.States <= b.States:
		var err error
		if x, _, err = enumerate.Minimize(c.Model, int(s.States)); err != nil {
			return s, fmt.Errorf("complete: component of variable %d: %w", c.Vars[0], err)
		}
		s.Method, s.Exact = Enumeration, true
	default:
		var ok bool
		if x, s.Width, ok = eliminate(c.Model, b.Table, 4*b.Table); ok {
			s.Method, s.Exact = DynamicProgramming, true
			break
		}
		s.Method, s.Reason = Open, fmt.Sprintf("%.3g labelings and elimination tables past %.3g entries", s.States, b.Table)
		ectx, cancel := ctx, context.CancelFunc(func() {})
		if !b.EngineDeadline.IsZero() {
			ectx, cancel = context.WithDeadline(ctx, b.EngineDeadline)
		}
		defer cancel()
		switch {
		case b.Engine != nil && ectx.Err() != nil && ctx.Err() == nil:
			s.Reason = fmt.Sprintf("%s; the completion's time for %s was spent", s.Reason, b.Engine.Name())
		case b.Engine != nil:
			ex, optimal, err := b.Engine.Solve(ectx, c.Model)
			switch {
			case err != nil && ctx.Err() != nil:
				return s, ctx.Err()
			case err != nil && ectx.Err() != nil:
				s.Reason = fmt.Sprintf("%s; %s stopped when the completion's time for it was spent", s.Reason, b.Engine.Name())
			case err != nil:
				msg, _, _ := strings.Cut(err.Error(), "\n") // an engine's output tail stays out of reports
				s.Reason = fmt.Sprintf("%s: %s", b.Engine.Name(), msg)
			case optimal:
				x, s.Method, s.Exact, s.Reason = ex, b.Engine.Name(), true, ""
			case ectx.Err() != nil:
				x, s.Reason = ex, fmt.Sprintf("%s; %s stopped when the completion's time for it was spent (its best labeling kept)", s.Reason, b.Engine.Name())
			default:
				x, s.Reason = ex, fmt.Sprintf("%s found no proof of optimality within its limits", b.Engine.Name())
			}
		}
		if !s.Exact {
			x = improve(c, x, start)
		}
	}
	s.Labels = c.Labels(x)
	s.Energy = c.Model.Energy(x)
	s.Seconds = time.Since(t0).Seconds()
	return s, nil
}

// improve returns the best of x (an engine's labeling, or nil) and start's
// labels (when alive; else each variable's first alive label) after local
// moves: each variable in turn to its best label given the others, until none
// improves.
func improve(c *Component, x, start []int) []int {
	m := c.Model
	y := make([]int, m.NumVars())
	if start != nil {
		if loc, ok := c.local(start); ok {
			y = loc
		}
	}
	icm(m, y)
	if x != nil && m.Energy(x) <= m.Energy(y) {
		return x
	}
	return y
}

// icm runs iterated conditional modes on x in place: a variable moves only to
// a label strictly better given the others, so it ends.
func icm(m *model.Model, x []int) {
	local := func(v int) float64 {
		e := 0.0
		for _, f := range m.VarFactors(v) {
			e += m.FactorValue(int(f), x)
		}
		return e
	}
	for changed := true; changed; {
		changed = false
		for v := range m.NumVars() {
			old := x[v]
			best, arg := local(v), old
			for l := range m.NumLabels(v) {
				x[v] = l
				if e := local(v); e < best && (math.IsInf(best, 1) || e < best-1e-12*math.Abs(best)) {
					best, arg = e, l
				}
			}
			x[v] = arg
			changed = changed || arg != old
		}
	}
}

// Checked is a component of a labeling re-checked by Check.
type Checked struct {
	Vars []int
	// Method is what solved the component again (Enumeration,
	// DynamicProgramming, the engine's name), or Open when nothing within the
	// budget could.
	Method string
	// Optimal says that the labeling's labels minimise the component (within
	// 1e-9 relative of the minimum found again); Energy is theirs, Minimum the
	// one found again (when Method is not Open).
	Optimal         bool
	Energy, Minimum float64
}

// Check solves every component of x's undecided variables again within b and
// says whether x's labels minimise it: the re-check of a completed result from
// the model alone. x must take the decided labels and alive labels elsewhere.
func Check(ctx context.Context, m *model.Model, alive [][]int, x []int, b Budget) ([]Checked, error) {
	comps, err := Split(m, alive)
	if err != nil {
		return nil, err
	}
	if err := m.CheckLabeling(x); err != nil {
		return nil, fmt.Errorf("complete: labeling: %w", err)
	}
	for v, ls := range orEvery(m, alive) {
		if len(ls) == 1 && x[v] != ls[0] {
			return nil, fmt.Errorf("complete: variable %d takes label %d, not its persistent label %d", v, x[v], ls[0])
		}
	}
	out := make([]Checked, len(comps))
	for i := range comps {
		c := &comps[i]
		loc, ok := c.local(x)
		if !ok {
			return nil, fmt.Errorf("complete: the labeling takes an eliminated label in the component of variable %d", c.Vars[0])
		}
		s, err := solve(ctx, c, nil, b)
		if err != nil {
			return nil, err
		}
		e := c.Model.Energy(loc)
		out[i] = Checked{Vars: c.Vars, Method: s.Method, Energy: e, Minimum: s.Energy}
		if s.Exact {
			out[i].Optimal = e <= s.Energy || e-s.Energy <= 1e-9*max(1, math.Abs(s.Energy))
		} else {
			out[i].Method = Open
		}
	}
	return out, nil
}
