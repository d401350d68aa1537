package persistency

import (
	"context"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// incremental runs Algorithm 1's pruning iterations on pairwise models on the
// first solve's TRW-S solver itself, re-solving near the change only (see
// trws.Local): an iteration removes the nodes that left A, rewrites the unary
// terms of their surviving neighbours — the model's unary terms plus one
// boundary potential per factor that now leaves A, which is all that differs
// between Ê_{A,x} and the previous sub-problem — and settles the messages
// around them. The sub-problem is built once, at the end, for the certificate,
// which is checked on the whole of it as before: the shortcut can only fail to
// settle (then the iteration re-solves the whole sub-problem), never prove more.
type incremental struct {
	m        *model.Model
	variant  Variant
	loc      *trws.Local
	node     []int32 // model variable → solver node (−1: none)
	vars     []int   // solver node → model variable
	boundary []bool  // by solver node: in a factor that leaves A
}

// newIncremental starts the pruning iterations from a solve out of a problem
// over the model variables vars (nil: the whole model) with its boundary nodes
// (nil: none), when r is the default TRW-S relaxation of a pairwise m; nil
// otherwise.
func newIncremental(m *model.Model, r Relaxation, variant Variant, out *Outcome, vars []int, boundary []bool) *incremental {
	if !defaultTRWS(r) || !pairwise(m) {
		return nil
	}
	s, ok := out.state.(*trws.Solver)
	if !ok || (vars != nil && len(vars) != s.NumVars()) || (vars == nil && s.NumVars() != m.NumVars()) {
		return nil
	}
	loc, err := s.NewLocal(out.Consistent)
	if err != nil {
		return nil
	}
	// Settling stops once the region's labels stand still rather than fall
	// back to a whole solve for a few nodes the messages leave inconsistent
	// (stereo windows: every iteration's few ties at the eroding boundary
	// did); such nodes wait in A (step) for the iteration that drops nothing.
	loc.Stable = settledChecks
	loc.Budget = settleBudget * s.NumVars()
	inc := &incremental{m: m, variant: variant, loc: loc, node: make([]int32, m.NumVars()), vars: vars,
		boundary: slices.Clone(boundary)}
	if inc.vars == nil {
		inc.vars = make([]int, s.NumVars())
		for i := range inc.vars {
			inc.vars[i] = i
		}
	}
	if inc.boundary == nil {
		inc.boundary = make([]bool, s.NumVars())
	}
	for v := range inc.node {
		inc.node[v] = -1
	}
	for i, v := range inc.vars {
		inc.node[v] = int32(i)
	}
	return inc
}

// settledChecks is trws.Local.Stable for the pruning iterations, and
// settleBudget·nodes their trws.Local.Budget: a settle that grows over a tenth
// of a window still costs less than the whole solve it saves (hundreds of
// iterations on a stereo window, where every iteration's change travels far).
const (
	settledChecks = 1
	settleBudget  = 300
)

// defaultTRWS says whether r is TRW-S (alone or in Auto) with the default
// stopping rules once withDefaults resolved them (zero Options, or
// trws.DefaultOptions' values with or without the cap, as jobs pass them):
// other rules (caps, check periods, targets) are a caller's choice of how each
// sub-problem is solved, which settling would not honour.
func defaultTRWS(r Relaxation) bool {
	var o trws.Options
	switch r := r.(type) {
	case nil:
		return true
	case Auto:
		o = r.Options
	case TRWS:
		o = r.Options
	default:
		return false
	}
	d := trws.DefaultOptions()
	o = withDefaults(o, d) // as the solve would run them
	return o.MaxIterations == d.MaxIterations && o.GapTolerance == d.GapTolerance && o.StallIterations == d.StallIterations &&
		o.StallTolerance == d.StallTolerance && o.CheckEvery == d.CheckEvery && o.SettleBelow == d.SettleBelow && !o.HasTarget && !o.NoCertify
}

// step moves to the node set A (ascending model variables, inside the current
// one) with the test labels x: it returns the consistency labels of A's
// variables after settling, and which are boundary nodes; ok is false when a
// boundary potential is hopeless or the messages did not settle (the caller
// then builds the sub-problem and solves it whole, from solver()).
func (inc *incremental) step(ctx context.Context, A, x []int) (cons []int, boundary []bool, ok bool, err error) {
	keep := make([]bool, len(inc.vars))
	for _, v := range A {
		keep[inc.node[v]] = true
	}
	var gone []int
	for i, k := range keep {
		if !k && !inc.loc.Dead(i) {
			gone = append(gone, i)
		}
	}
	changed := inc.loc.Kill(gone)
	for _, i := range changed {
		inc.boundary[i] = true
		u, fine := inc.unary(inc.vars[i], x)
		if !fine {
			return nil, nil, false, nil
		}
		if err := inc.loc.SetUnary(i, u); err != nil {
			return nil, nil, false, err
		}
	}
	if !inc.loc.Settle(ctx, changed) {
		return nil, nil, false, ctx.Err()
	}
	cons, boundary = make([]int, len(A)), make([]bool, len(A))
	for j, v := range A {
		i := inc.node[v]
		cons[j], boundary[j] = inc.loc.Consistent(int(i)), inc.boundary[i]
		if cons[j] < 0 {
			// Left inconsistent by a settle that stood still (every node of A
			// was consistent before): not dropped on settling's word — it
			// keeps its label until the iteration that drops nothing, whose
			// certificate or whole solve decides it as before.
			cons[j] = x[v]
		}
	}
	return cons, boundary, true, nil
}

// unary is variable v's unary term in Ê_{A,x} (A: the surviving nodes): its
// unary factors plus the boundary potential of every factor to a variable
// outside A; fine is false when one is hopeless (see Subproblem.Hopeless).
func (inc *incremental) unary(v int, x []int) (u []float64, fine bool) {
	m := inc.m
	u = make([]float64, m.NumLabels(v))
	for _, f := range m.VarFactors(v) {
		fv, fn := m.FactorVars(int(f)), m.FactorFunction(int(f))
		if len(fv) == 1 {
			for l := range u {
				u[l] += fn.Table[l]
			}
			continue
		}
		pos, other := 0, int(fv[1])
		if int(fv[1]) == v {
			pos, other = 1, int(fv[0])
		}
		if j := inc.node[other]; j >= 0 && !inc.loc.Dead(int(j)) {
			continue
		}
		tab := BoundaryPotential(fn, []int{pos}, []int{x[v]}, inc.variant)
		if hasNegInf(tab) || math.IsInf(tab[x[v]], 1) {
			return nil, false
		}
		for l := range u {
			u[l] += tab[l]
		}
	}
	return u, true
}

// solver returns the surviving nodes' TRW-S solver as an Outcome's state, for
// a whole solve.
func (inc *incremental) solver() (*trws.Solver, error) {
	s, _, err := inc.loc.Solver()
	return s, err
}

// certifyFinal builds sp = Ê_{A,x} and checks a certificate of x on A from
// loc, the settled Local of A's nodes: the draft of its messages where compact
// is set (no copy of its solver), else or where the draft does not certify
// but is not hopeless, the dual of its survivors' solver. Where neither
// certifies (cert nil) it returns that solver (made) for the caller to solve
// sp whole from, and sp (nil when it could not be built) not to build it again.
//
// Without compact the solver is needed whatever happens (the caller solves
// from it where nothing certifies): it is made on a goroutine of its own while
// sp is built (seg2.LG's 10⁶ nodes: 0.25 s and 0.17 s of one core).
func certifyFinal(m *model.Model, A, x []int, variant Variant, loc *trws.Local, compact bool) (sp *Subproblem, cert *Certificate, gap float64, made *trws.Solver, err error) {
	var solved chan error
	if !compact {
		solved = make(chan error, 1)
		go func() {
			var err error
			made, _, err = loc.Solver()
			solved <- err
		}()
	}
	sp, err = BuildSubproblem(m, A, x, variant)
	if solved != nil {
		if serr := <-solved; err == nil {
			err = serr
		}
	}
	if err != nil || len(sp.Hopeless) > 0 {
		return sp, nil, 0, made, err
	}
	final := make([]int, len(A))
	for i, v := range A {
		final[i] = x[v]
	}
	tryDual := true
	if compact {
		cert, chk := draftOf(loc.Draft(final), sp.Model, loc.CheckDraft)
		if cert != nil {
			return sp, cert, chk.Gap, nil, nil
		}
		tryDual = !chk.hopeless()
	}
	if made == nil {
		if made, _, err = loc.Solver(); err != nil {
			return sp, nil, 0, made, err
		}
	}
	if !tryDual {
		return sp, nil, 0, made, nil
	}
	cert = &Certificate{Labeling: final, Dual: made.Certificate(final)}
	chk, err := cert.Check(sp.Model)
	if err != nil || !chk.Certified {
		return sp, nil, 0, made, err
	}
	return sp, cert, chk.Gap, made, nil
}
