package persistency

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// Options configure Run.
type Options struct {
	// Variant of the boundary potentials (default Invariant).
	Variant Variant
	// Solver is the integrally correct relaxation solver (default Auto with
	// trws.DefaultOptions: TRW-S for pairwise problems, the higher-order solver else).
	Solver Relaxation
	// Progress, if set, is called after every pruning iteration.
	Progress func(Progress)
	// Candidates, when set (one entry per variable), restricts A⁰ to the variables
	// marked true: a window's core inside a model that holds the window, its outside
	// neighbours and every factor touching it. Theorem 1 holds for any A, and Ê_{A,y}
	// for A inside the core involves only factors touching A, so the result is
	// persistent for the whole model the window was cut from.
	Candidates []bool
	// FullSolves re-solves every pruning iteration's whole sub-problem, as the
	// paper does, instead of settling the default TRW-S messages near what the
	// iteration changed (the same decisions where the relaxation's optimum is
	// unique; the final certificate is checked on the whole sub-problem either way).
	FullSolves bool
	// QuickFirst ends the first relaxed solve by label elimination's loose
	// stall rule (10 iterations, 1e-5 relative; at most 500) where the solver
	// has no cap of the caller's, unless its gap is nearly closed: then it goes
	// on with the solver's own rule (stalledSolve). A relaxation that creeps far
	// from its labeling (spin glasses: 110 iterations, 100 of them stalled, for
	// nothing proven) ends early; one about to prove most of the model
	// (stereo) converges as before.
	QuickFirst bool
	// KeepDual keeps the final certificate's dual as the solver polished it
	// (float64 messages) instead of the float32 draft of the solver's messages
	// that certifies when polished on the sub-problem (draftOf): half the
	// bytes for another solver build and polish. For a proof written once, whose time counts more than
	// its bytes: a whole model's (a 231-variable segmentation's method time
	// 1.06 → 0.77 ms); windows keep drafts, since a gigapixel job stores
	// theirs several times.
	KeepDual bool
	// DropChanged drops, each pruning iteration, every node of A whose label
	// changed, not only those on A's boundary (Algorithm 1 lets an interior
	// node take its new label, which cannot change Ê). A window's edges are
	// a boundary of A where the outside is taken as adversarial, and from
	// there A erodes one ring of nodes an iteration — hundreds of iterations
	// on a stereo window, each a settle of the messages — where the changes
	// inside already mark how far it will go: a few iterations reach it.
	// Sound as any A is (the final certificate decides); it may prove less
	// than Algorithm 1, which windows can afford, as later rounds' shifted
	// windows and the elimination prove what one window's erosion dropped
	// (an 1100² stereo model, 512-pixel windows: 100% proven either way,
	// 219 -> 124 s). Off for whole models: the paper's Algorithm 1.
	DropChanged bool
	// first, when set, is the first relaxed solve (QuickFirst's) of the model,
	// made before: it is not made again.
	first *Outcome
	// keepFirst: run returns its first relaxed solve where nothing was proven
	// even after pruning iterations went on in its solver — its messages
	// copied before them, the solver made again from them (snapshot).
	keepFirst bool
}

// Progress reports a pruning iteration.
type Progress struct {
	Iteration int // 0 is the initial relaxed solve
	SetSize   int // |A^t|
	Variables int
	Bound     float64 // lower bound of the iteration's relaxed solve
}

// Result is the outcome of Run: a persistent labeling with its certificate.
type Result struct {
	Variant Variant
	// Set is A*, ascending; Persistent[v] is the proven label of v, or −1.
	Set        []int
	Persistent []int
	// Labeling is complete: the persistent labels, and elsewhere the best labeling
	// of the initial relaxed solve. Energy is its energy.
	Labeling []int
	Energy   float64
	// LowerBound is the initial relaxed solve's lower bound on min E.
	LowerBound float64
	// Certificate proves that Persistent on Set minimises the relaxation of
	// Ê_{Set, Persistent} (nil when Set is empty); Verify checks it.
	Certificate    *Certificate
	CertificateGap float64
	// Elimination, when set, is a label elimination (Eliminate) that started from
	// the domains the persistent labels leave (every label elsewhere) and is
	// proven with them: Verify checks both.
	Elimination *Elimination
	// Score is the paper's persistency score, Fraction the plain fraction of variables.
	Score, Fraction   float64
	PruningIterations int
	// Settled counts the pruning iterations that re-solved only near what they
	// changed (see Options.FullSolves); the others solved their whole sub-problem.
	// Result files do not store it.
	Settled          int
	SolverIterations int
	Seconds          float64
	SolverSeconds    float64
}

// Run is Algorithm 1 of the paper: solve the relaxation on V, keep the consistent
// (integral) nodes A⁰ with their labels x⁰, then repeatedly solve the relaxation of
// Ê_{A^t,x^t} and drop every node without a consistency label and every boundary
// node whose label differs from x^t (interior nodes keep their new label, which
// cannot change Ê), until nothing is dropped. The final solve's certificate is
// checked before any label is reported: no certificate, no persistent label.
func Run(ctx context.Context, m *model.Model, opt Options) (*Result, error) {
	res, _, err := run(ctx, m, opt)
	return res, err
}

// run is Run, and its first relaxed solve where no pruning iteration went on
// from it (nothing was consistent) or, with keepFirst, where nothing was
// proven (a copy, nil where too large): PruneFirst's elimination starts there.
func run(ctx context.Context, m *model.Model, opt Options) (*Result, *Outcome, error) {
	start := time.Now()
	solver := opt.Solver
	if solver == nil {
		solver = Auto{}
	}
	n := m.NumVars()
	res := &Result{Variant: opt.Variant, Persistent: make([]int, n)}
	for v := range res.Persistent {
		res.Persistent[v] = -1
	}
	timed := &timedSolver{r: solver, iterations: &res.SolverIterations}
	solve := func(p *model.Model, from *Warm) (*Outcome, error) { return timed.solve(ctx, p, from) }
	loose, strict := solver, (func(int) Relaxation)(nil)
	if opt.QuickFirst {
		if r, ok := stalledFirst(solver, firstIterations, 10, 1e-5); ok {
			loose, strict = r, func(int) Relaxation { return solver }
		}
	}
	out, err := opt.first, error(nil)
	if out == nil {
		out, err = stalledSolve(ctx, timed, m, loose, strict)
	}
	timed.r = solver // the pruning iterations' own
	if err != nil {
		return nil, nil, err
	}
	res.Labeling = append([]int(nil), out.Labeling...)
	res.LowerBound = out.LowerBound
	report := func(it, size int, bound float64) {
		if opt.Progress != nil {
			opt.Progress(Progress{Iteration: it, SetSize: size, Variables: n, Bound: bound})
		}
	}
	// A^0 and x^0; x holds the current labels on A (indexed by model variable).
	x := make([]int, n)
	var A []int
	if opt.Candidates != nil && len(opt.Candidates) != n {
		return nil, nil, errors.New("persistency: Options.Candidates needs one entry per variable")
	}
	for v, l := range out.Consistent {
		if l >= 0 && (opt.Candidates == nil || opt.Candidates[v]) {
			A = append(A, v)
			x[v] = l
		}
	}
	report(0, len(A), out.LowerBound)
	var prevVars []int // the variables of out's problem; nil: the whole model
	var inc *incremental
	if !opt.FullSolves {
		inc = newIncremental(m, solver, opt.Variant, out, nil, nil)
	}
	first := out // no pruning iteration changes it but settling in its solver
	if inc != nil && opt.keepFirst && len(A) > 0 {
		first = snapshot(out, m)
	}
	for it := 1; len(A) > 0; it++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		res.PruningIterations = it
		var built *Subproblem // Ê_{A,x} where this iteration built it already
		if inc != nil {
			before := inc.loc.Iterations
			cons, boundary, ok, err := inc.step(ctx, A, x)
			res.SolverIterations += inc.loc.Iterations - before
			if err != nil {
				return nil, nil, err
			}
			if ok {
				res.Settled++
				kept := narrow(A, x, cons, boundary, opt.DropChanged)
				report(it, len(kept), math.NaN())
				if len(kept) < len(A) {
					A = kept
					continue
				}
			}
			// Settled with nothing dropped (the certificate below is made from
			// the survivors' messages), or not settled: from here on as before,
			// from the survivors' solver.
			var s *trws.Solver
			if ok {
				var cert *Certificate
				var gap float64
				if built, cert, gap, s, err = certifyFinal(m, A, x, opt.Variant, inc.loc, !opt.KeepDual); err != nil {
					return nil, nil, err
				}
				if cert != nil {
					res.prove(A, x, cert, gap)
					break
				}
			}
			if s == nil {
				if s, err = inc.solver(); err != nil {
					return nil, nil, err
				}
			}
			inc, prevVars = nil, A
			out = &Outcome{state: s}
		}
		sp := built // A and x as certifyFinal built it for, if it did
		if sp == nil {
			if sp, err = BuildSubproblem(m, A, x, opt.Variant); err != nil {
				return nil, nil, err
			}
		}
		if len(sp.Hopeless) > 0 {
			A = without(A, sp.Hopeless)
			out, prevVars = nil, nil
			report(it, len(A), math.NaN())
			continue
		}
		var from *Warm
		if out != nil {
			from = &Warm{Prev: out, Vars: warmVars(prevVars, A)}
		}
		next, err := solve(sp.Model, from)
		if err != nil {
			return nil, nil, err
		}
		kept := narrow(A, x, next.Consistent, sp.Boundary, opt.DropChanged)
		report(it, len(kept), next.LowerBound)
		if len(kept) == len(A) {
			// Nothing dropped: certify the final labeling on A.
			final := make([]int, len(A))
			for i, v := range A {
				final[i] = x[v]
			}
			if s, ok := next.state.(*trws.Solver); ok && !opt.KeepDual {
				if cert, chk := draftOf(s.Draft(final), sp.Model, s.CheckDraft); cert != nil {
					res.prove(A, x, cert, chk.Gap)
					break
				}
			}
			cert, err := next.Certify(final)
			if err != nil {
				return nil, nil, err
			}
			chk, err := cert.Check(sp.Model)
			if err != nil {
				return nil, nil, err
			}
			if !chk.Certified {
				return nil, nil, errors.New("persistency: the final sub-problem's certificate does not check (the solver is not integrally correct at this tolerance)")
			}
			res.prove(A, x, cert, chk.Gap)
			break
		}
		if !opt.FullSolves {
			inc = newIncremental(m, solver, opt.Variant, next, A, sp.Boundary) // near the changes again
		}
		out, prevVars, A = next, A, kept
	}
	res.Energy = m.Energy(res.Labeling)
	res.Score, res.Fraction = Score(m, res.Persistent)
	res.Seconds = time.Since(start).Seconds()
	res.SolverSeconds = timed.elapsed.Seconds()
	if res.PruningIterations > 0 && !(opt.keepFirst && Count(res.Persistent) == 0) {
		return res, nil, nil
	}
	return res, first.wake(), nil
}

// narrow is a pruning iteration's decision: the nodes of A (ascending) that
// stay — a consistency label cons[i], equal to the test label x at a boundary
// node (at every node with dropChanged) — with x set to their labels.
func narrow(A, x, cons []int, boundary []bool, dropChanged bool) []int {
	kept := make([]int, 0, len(A))
	for i, v := range A {
		if l := cons[i]; l >= 0 && (l == x[v] || !boundary[i] && !dropChanged) {
			kept = append(kept, v)
			x[v] = l
		}
	}
	return kept
}

// prove records the checked final sub-problem: A with the labels x, proven by
// cert with its gap.
func (res *Result) prove(A, x []int, cert *Certificate, gap float64) {
	res.Certificate, res.CertificateGap, res.Set = cert, gap, A
	for _, v := range A {
		res.Persistent[v] = x[v]
		res.Labeling[v] = x[v]
	}
}

// warmVars maps each variable of A (ascending) to its index in prev (ascending, a
// superset of A); prev == nil means the previous problem was the whole model.
func warmVars(prev, A []int) []int {
	vars := make([]int, len(A))
	if prev == nil {
		copy(vars, A)
		return vars
	}
	j := 0
	for i, v := range A {
		for prev[j] != v {
			j++
		}
		vars[i] = j
	}
	return vars
}

// without returns A minus the entries at the (ascending) positions drop.
func without(A []int, drop []int) []int {
	out := make([]int, 0, len(A)-len(drop))
	j := 0
	for i, v := range A {
		if j < len(drop) && drop[j] == i {
			j++
			continue
		}
		out = append(out, v)
	}
	return out
}

// timedSolver runs a Relaxation, adding up its time and its iterations.
type timedSolver struct {
	r          Relaxation
	elapsed    time.Duration
	iterations *int
}

func (t *timedSolver) solve(ctx context.Context, p *model.Model, from *Warm) (*Outcome, error) {
	start := time.Now()
	out, err := t.r.Solve(ctx, p, from)
	t.elapsed += time.Since(start)
	if err == nil {
		*t.iterations += out.Iterations
	}
	return out, err
}

// Count returns the number of variables with a persistent label (persistent[v] ≥ 0).
func Count(persistent []int) int {
	c := 0
	for _, l := range persistent {
		if l >= 0 {
			c++
		}
	}
	return c
}

// Score returns the paper's persistency score 1 − Σ_{u∉A} ln|X_u| / Σ_u ln|X_u| (a
// variable with one label weighs nothing; 1 when all do) and the plain fraction of
// variables with a persistent label (persistent[v] ≥ 0).
func Score(m *model.Model, persistent []int) (score, fraction float64) {
	total, missing := 0.0, 0.0
	count := 0
	var logs [256]float64 // log k by label count k, found once (0: not yet; log 1 is 0 anyway)
	for v, l := range persistent {
		k := m.NumLabels(v)
		var w float64
		if k < len(logs) {
			if logs[k] == 0 {
				logs[k] = math.Log(float64(k))
			}
			w = logs[k]
		} else {
			w = math.Log(float64(k))
		}
		total += w
		if l >= 0 {
			count++
		} else {
			missing += w
		}
	}
	score = 1
	if total > 0 {
		score = 1 - missing/total
	}
	fraction = 1
	if len(persistent) > 0 {
		fraction = float64(count) / float64(len(persistent))
	}
	return score, fraction
}
