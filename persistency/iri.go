package persistency

// Label elimination by iterative relaxed inference (IRI): Shekhovtsov, Swoboda,
// Savchynskyy, "Maximum Persistency via Iterative Relaxed Inference with
// Graphical Models" (CVPR 2015, TPAMI 2018).
//
// For a test labeling y and immovable label sets Y_u ∋ y_u, the node-wise map
// p_u(i) = i for i ∈ Y_u, y_u otherwise is improving when E(p(x)) ≤ E(x) for every
// labeling x; then some optimal labeling lies in p's image and every movable label
// is eliminated. The verification problem g_F(x) = f_F(x) − f_F(p(x)) is a model
// on the same factors whose energy is E(x) − E(p(x)); a dual bound ≥ 0 of its LP
// relaxation proves p improving (Λ-improving implies improving). The search is a
// discrete cutting-plane method: start with every label but y_u movable, solve the
// verification problem, and while it is not certified, make immovable the movable
// labels its relaxed solution uses (the locally minimal labels of the dual, and an
// integral violator's labels), then solve again. Each round shrinks the movable
// sets, so the search ends; the last round's dual is the certificate.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// EliminateOptions configure Eliminate.
type EliminateOptions struct {
	// Solver solves the verification problems (default Auto: TRW-S for pairwise
	// models, SRMP otherwise; Exhaustive decides them exactly on tiny models).
	Solver Relaxation
	// Candidates, when set (one entry per variable), restricts the elimination to
	// the variables marked true: p is the identity elsewhere, so a window's core
	// inside the model of the window and its surroundings proves labels for the
	// whole model it was cut from.
	Candidates []bool
	// Domains, when set (one list per variable, ascending), are the labels alive
	// before: an earlier proof showed that some optimal labeling takes them. The
	// elimination composes with it: Domains must be given to VerifyElimination
	// too, with their own proof checked separately.
	Domains [][]int
	// Test, when set, is the test labeling y (alive, of finite energy); by default
	// the labeling of a relaxed solve of the model restricted to Domains.
	Test []int
	// RoundIterations caps the solver's iterations per round (default 50): a
	// round's problem differs little from the previous one, whose messages it
	// starts from, and labels are fixed as soon as the dual points at them.
	RoundIterations int
	// Progress, if set, is called after every round.
	Progress func(EliminateProgress)
}

// EliminateProgress reports a round of the search.
type EliminateProgress struct {
	Round   int
	Movable int     // labels still movable (to be eliminated if this round certifies)
	Bound   float64 // the verification problem's lower bound (≥ −tolerance: done)
}

// Elimination is the outcome of Eliminate: the labels alive per variable, proven
// by a certificate on the verification problem of the test labeling.
type Elimination struct {
	// Test is the test labeling y; Energy its energy.
	Test   []int
	Energy float64
	// Alive[v] are v's labels that some optimal labeling may take, ascending; a
	// variable with one alive label is persistent (Persistent[v], else −1).
	Alive      [][]int
	Persistent []int
	// Prior are the domains the elimination started from (nil: every label).
	Prior [][]int
	// LowerBound is the initial relaxed solve's lower bound on min E (−Inf when
	// the test labeling was given).
	LowerBound float64
	// Certificate proves, for Test, that the verification problem of Alive (built
	// by BuildVerification) has a relaxation bound ≥ −Tolerance(Energy); nil when
	// nothing is eliminated.
	Certificate      *Certificate
	Eliminated       int // labels eliminated here (Prior's dead labels not counted)
	Rounds           int
	SolverIterations int
	Seconds          float64
	SolverSeconds    float64
}

// EliminationTolerance is the relative tolerance of an elimination certificate:
// the verification problem's bound must be ≥ −EliminationTolerance·max(1, |E(y)|),
// so p is improving up to that much energy — the duality-gap tolerance of every
// certificate of this package (trws.GapTolerance).
const EliminationTolerance = trws.GapTolerance

// tolerance is the bound an elimination certificate must reach for energy e.
func tolerance(e float64) float64 { return EliminationTolerance * math.Max(1, math.Abs(e)) }

// hopeless is how far below 0 a solver's own bound may be for a certificate to be
// tried: float32 sums are off by ~1e-7 relative, so 1e-5 relative is safely out
// of reach.
func hopeless(e float64) float64 { return 1e-5 * math.Max(1, math.Abs(e)) }

// domains are per-variable label masks: alive labels, and among them the
// immovable ones (p's fixed points).
type domains struct {
	alive, fixed [][]bool
}

func (d *domains) movable(v, l int) bool { return d.alive[v][l] && !d.fixed[v][l] }

// hasMovable says whether v has a movable label.
func (d *domains) hasMovable(v int) bool {
	for l, a := range d.alive[v] {
		if a && !d.fixed[v][l] {
			return true
		}
	}
	return false
}

// image is p(l) at v for the test label y.
func (d *domains) image(v, l, y int) int {
	if d.fixed[v][l] {
		return l
	}
	return y
}

// newDomains returns the masks of prior (nil: every label alive) with only y's
// labels fixed on the candidates and every alive label fixed elsewhere.
func newDomains(m *model.Model, prior [][]int, y []int, candidates []bool) (*domains, error) {
	n := m.NumVars()
	d := &domains{alive: make([][]bool, n), fixed: make([][]bool, n)}
	for v := range n {
		k := m.NumLabels(v)
		d.alive[v], d.fixed[v] = make([]bool, k), make([]bool, k)
		if prior == nil {
			for l := range k {
				d.alive[v][l] = true
			}
		} else {
			for _, l := range prior[v] {
				if l < 0 || l >= k {
					return nil, fmt.Errorf("persistency: domain of variable %d: label %d of %d", v, l, k)
				}
				d.alive[v][l] = true
			}
		}
		if y[v] < 0 || y[v] >= k || !d.alive[v][y[v]] {
			return nil, fmt.Errorf("persistency: the test labeling gives variable %d label %d, which is not alive", v, y[v])
		}
		if candidates != nil && !candidates[v] {
			copy(d.fixed[v], d.alive[v])
		} else {
			d.fixed[v][y[v]] = true
		}
	}
	return d, nil
}

// closeForbidden makes immovable every movable label that p would move from an
// allowed (finite) entry of a factor to a forbidden one: such a p maps a feasible
// labeling to an infeasible one and cannot be improving. It repeats until no such
// entry is left (fixing labels changes p).
func closeForbidden(m *model.Model, d *domains, y []int) {
	inf := make([]bool, m.NumFunctions())
	for i := range inf {
		inf[i] = hasInf(m.Func(i))
	}
	for changed := true; changed; {
		changed = false
		for f := 0; f < m.NumFactors(); f++ {
			if !inf[m.FactorFunc(f)] {
				continue
			}
			vars := m.FactorVars(f)
			if !slices.ContainsFunc(vars, func(v int32) bool { return d.hasMovable(int(v)) }) {
				continue
			}
			fn := m.FactorFunction(f)
			forEachAlive(d, vars, y, func(x, px []int) {
				if math.IsInf(fn.Value(x), 1) || !math.IsInf(fn.Value(px), 1) {
					return
				}
				for p, v := range vars {
					if d.movable(int(v), x[p]) {
						d.fixed[v][x[p]] = true
						changed = true
					}
				}
			})
		}
	}
}

// hasInf says whether a function takes +Inf somewhere.
func hasInf(fn *model.Function) bool {
	if fn.Kind != model.Explicit {
		return math.IsInf(fn.W, 1)
	}
	return slices.ContainsFunc(fn.Table, func(x float64) bool { return math.IsInf(x, 1) })
}

// forEachAlive calls visit with every labeling x of vars over alive labels (last
// variable fastest) and its image px = p(x). The slices are reused.
func forEachAlive(d *domains, vars []int32, y []int, visit func(x, px []int)) {
	x, px := make([]int, len(vars)), make([]int, len(vars))
	var rec func(p int)
	rec = func(p int) {
		if p == len(vars) {
			visit(x, px)
			return
		}
		v := int(vars[p])
		for l, a := range d.alive[v] {
			if a {
				x[p], px[p] = l, d.image(v, l, y[v])
				rec(p + 1)
			}
		}
	}
	rec(0)
}

// BuildVerification builds the verification problem of the map p of test labeling
// y with immovable labels fixed (per variable, ascending) among the alive labels
// prior (nil: every label): over m's variables and factors, in their order, the
// tables g_F(x) = f_F(x) − f_F(p(x)), +Inf where x takes a dead label or f_F(x)
// is +Inf (a factor on which p is the identity gets a zero table). Its energy is
// E(x) − E(p(x)) on alive
// feasible labelings, 0 at y. The construction is deterministic, so
// VerifyElimination rebuilds the model a certificate was made on.
func BuildVerification(m *model.Model, y []int, fixed, prior [][]int) (*model.Model, error) {
	if len(y) != m.NumVars() || len(fixed) != m.NumVars() || (prior != nil && len(prior) != m.NumVars()) {
		return nil, errors.New("persistency: verification problem: one test label, immovable set and domain per variable needed")
	}
	d, err := newDomains(m, prior, y, nil)
	if err != nil {
		return nil, err
	}
	for v, ls := range fixed {
		for l := range d.fixed[v] {
			d.fixed[v][l] = false
		}
		for _, l := range ls {
			if l < 0 || l >= m.NumLabels(v) || !d.alive[v][l] {
				return nil, fmt.Errorf("persistency: immovable label %d of variable %d is not alive", l, v)
			}
			d.fixed[v][l] = true
		}
		if !d.fixed[v][y[v]] {
			return nil, fmt.Errorf("persistency: the test label %d of variable %d is not immovable", y[v], v)
		}
	}
	return buildVerification(m, d, y)
}

func buildVerification(m *model.Model, d *domains, y []int) (*model.Model, error) {
	labels := make([]int, m.NumVars())
	for v := range labels {
		labels[v] = m.NumLabels(v)
	}
	b := model.NewBuilder(labels)
	args := make([]int, 0, 8)
	zero := map[string]int{} // one shared zero function per shape
	for f := 0; f < m.NumFactors(); f++ {
		vars := m.FactorVars(f)
		args = args[:0]
		size := 1
		for _, v := range vars {
			args = append(args, int(v))
			size *= labels[v]
		}
		var id int
		var err error
		if !slices.ContainsFunc(vars, func(v int32) bool { return d.hasMovable(int(v)) }) {
			// p is the identity on the factor: g ≡ 0. Every factor is kept, so that
			// the rounds' problems share one graph (warm starts).
			shape := m.FactorFunction(f).Shape
			key := fmt.Sprint(shape)
			z, ok := zero[key]
			if !ok {
				if z, err = b.AddFunction(model.Function{Kind: model.Explicit, Shape: slices.Clone(shape), Table: make([]float64, size)}); err != nil {
					return nil, err
				}
				zero[key] = z
			}
			id = z
		} else {
			t, err := verificationTable(m, f, d, y, size)
			if err != nil {
				return nil, err
			}
			if id, err = b.AddFunction(model.Function{Kind: model.Explicit, Shape: slices.Clone(m.FactorFunction(f).Shape), Table: t}); err != nil {
				return nil, err
			}
		}
		if err := b.AddFactor(id, args...); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// verificationTable is g_F for factor f: f_F(x) − f_F(p(x)) on alive labelings,
// +Inf on dead labels and where f_F(x) is +Inf.
func verificationTable(m *model.Model, f int, d *domains, y []int, size int) ([]float64, error) {
	vars, fn := m.FactorVars(f), m.FactorFunction(f)
	t := make([]float64, size)
	for i := range t {
		t[i] = math.Inf(1) // dead labels
	}
	var bad error
	forEachAlive(d, vars, y, func(x, px []int) {
		i := 0
		for p, v := range vars {
			i = i*m.NumLabels(int(v)) + x[p]
		}
		e := fn.Value(x)
		if math.IsInf(e, 1) {
			return
		}
		w := fn.Value(px)
		if math.IsInf(w, 1) && bad == nil {
			bad = fmt.Errorf("persistency: the map moves factor %d from a finite entry to a forbidden one", f)
		}
		t[i] = e - w
	})
	return t, bad
}

// marginals are the solvers whose reparametrised unaries a search reads.
type marginals interface {
	Marginal(v int, d []float64) []float64
}

// Eliminate runs the IRI search on m and returns the labels it proves eliminable,
// with the certificate of the last verification problem checked: no certificate,
// no eliminated label.
func Eliminate(ctx context.Context, m *model.Model, opt EliminateOptions) (*Elimination, error) {
	start := time.Now()
	solver := opt.Solver
	if solver == nil {
		solver = Auto{}
	}
	n := m.NumVars()
	if opt.Candidates != nil && len(opt.Candidates) != n {
		return nil, errors.New("persistency: EliminateOptions.Candidates needs one entry per variable")
	}
	if opt.Domains != nil && len(opt.Domains) != n {
		return nil, errors.New("persistency: EliminateOptions.Domains needs one list per variable")
	}
	res := &Elimination{Prior: opt.Domains, LowerBound: math.Inf(-1)}
	timed := &timedSolver{r: solver, iterations: &res.SolverIterations}
	solve := func(p *model.Model, from *Warm) (*Outcome, error) { return timed.solve(ctx, p, from) }
	defer func() { res.Seconds, res.SolverSeconds = time.Since(start).Seconds(), timed.elapsed.Seconds() }()

	// The relaxed solve that gives y also starts the first round: its messages are
	// a dual of the first verification problem, whose factors are f's shifted by
	// constants (everything maps to y), on the same graph.
	var prev *Outcome
	y := opt.Test
	if y == nil {
		restricted, err := restrict(m, opt.Domains)
		if err != nil {
			return nil, err
		}
		out, err := solve(restricted, nil)
		if err != nil {
			return nil, err
		}
		y, res.LowerBound, prev = out.Labeling, out.LowerBound, out
	}
	if err := m.CheckLabeling(y); err != nil {
		return nil, fmt.Errorf("persistency: test labeling: %w", err)
	}
	res.Test, res.Energy = append([]int(nil), y...), m.Energy(y)
	d, err := newDomains(m, opt.Domains, y, opt.Candidates)
	if err != nil {
		return nil, err
	}
	if math.IsInf(res.Energy, 1) {
		// Nothing maps to an infeasible labeling: keep every alive label.
		for v := range d.fixed {
			copy(d.fixed[v], d.alive[v])
		}
		return finish(m, res, d, nil), nil
	}
	tol := tolerance(res.Energy)
	rounds := opt.RoundIterations
	if rounds == 0 {
		rounds = 50
	}
	timed.r = capped(solver, rounds)
	lastBound, nearest := math.Inf(-1), 0
	report := func(round, movable int, bound float64) {
		if opt.Progress != nil {
			opt.Progress(EliminateProgress{Round: round, Movable: movable, Bound: bound})
		}
	}
	for round := 1; ; round++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res.Rounds = round
		closeForbidden(m, d, y) // again each round: fixing labels changes p
		movable := countMovable(d)
		if movable == 0 {
			return finish(m, res, d, nil), nil
		}
		g, err := buildVerification(m, d, y)
		if err != nil {
			return nil, err
		}
		var from *Warm
		if prev != nil {
			from = &Warm{Prev: prev}
			// In the first round g is f shifted by constants: when the relaxed
			// solve already proved y optimal for the relaxation, its dual proves
			// the first map without another solve.
			if round == 1 && prev.LowerBound >= res.Energy-hopeless(res.Energy) {
				if cert, err := prev.Certify(y); err == nil {
					if v, err := cert.Check(g); err == nil && v.Bound >= -tol {
						report(round, movable, v.Bound)
						return finish(m, res, d, cert), nil
					}
				}
			}
		}
		out, err := solve(g, from)
		if err != nil {
			return nil, err
		}
		prev = out
		bound := out.LowerBound
		// The solver's bound is an estimate (TRW-S sums in float32); a certificate
		// costs about an iteration, so it is only made when it may succeed.
		if bound >= -hopeless(res.Energy) {
			cert, err := out.Certify(y)
			if err != nil {
				return nil, err
			}
			v, err := cert.Check(g)
			if err != nil {
				return nil, err
			}
			if bound = v.Bound; bound >= -tol {
				report(round, movable, bound)
				return finish(m, res, d, cert), nil
			}
		}
		report(round, movable, bound)
		// When nothing was fixed and the bound no longer rises, the dual is as
		// good as it gets: the next round fixes the movable labels nearest to
		// their variable's minimum — 1, then twice as many each stuck round — so
		// that the search always ends, in few rounds.
		fixed := fixViolators(g, d, out, tol, nearest)
		switch {
		case fixed > 0 && nearest == 0, bound > lastBound+math.Max(tol, 1e-3*math.Abs(lastBound)):
			nearest = 0
		default:
			nearest = max(1, 2*nearest)
		}
		lastBound = bound
	}
}

// fixViolators makes immovable the movable labels that the relaxed solution of the
// verification problem g uses, and returns how many: those of its labeling when it
// is a violator (g < 0), and every movable label within trws.ConsistencyTolerance
// (relative) of its variable's minimum of the reparametrised unary (the dual's
// locally minimal labels). When none is, it fixes the nearest movable labels
// nearest to their variable's minimum, so that a search whose dual no longer
// improves still advances. A solver without such a dual (Exhaustive) is exact:
// its labeling is then a violator, or its consistency labels are used.
func fixViolators(g *model.Model, d *domains, out *Outcome, tol float64, nearest int) int {
	fixed := 0
	fix := func(v, l int) {
		if d.movable(v, l) {
			d.fixed[v][l] = true
			fixed++
		}
	}
	if x := out.Labeling; x != nil && g.Energy(x) < -tol {
		for v, l := range x {
			fix(v, l)
		}
	}
	mg, ok := out.state.(marginals)
	if !ok {
		for v, l := range out.Consistent {
			if l >= 0 {
				fix(v, l)
			}
		}
		if fixed == 0 { // nothing to read: keep the rest
			for v := range d.fixed {
				for l := range d.fixed[v] {
					fix(v, l)
				}
			}
		}
		return fixed
	}
	var buf []float64
	type candidate struct {
		gap  float64
		v, l int
	}
	var near []candidate
	for v := range d.alive {
		if !d.hasMovable(v) {
			continue
		}
		buf = mg.Marginal(v, slices.Grow(buf[:0], len(d.alive[v])))
		lo := math.Inf(1)
		for l, x := range buf {
			if d.alive[v][l] {
				lo = math.Min(lo, x)
			}
		}
		scale := math.Max(1, math.Abs(lo))
		for l, x := range buf {
			gap := (x - lo) / scale
			if gap <= trws.ConsistencyTolerance {
				fix(v, l)
			} else if nearest > 0 && d.movable(v, l) {
				near = append(near, candidate{gap, v, l})
			}
		}
	}
	if fixed == 0 && len(near) > 0 {
		slices.SortFunc(near, func(a, b candidate) int { return cmp.Compare(a.gap, b.gap) })
		for _, c := range near[:min(nearest, len(near))] {
			fix(c.v, c.l)
		}
	}
	return fixed
}

func countMovable(d *domains) int {
	c := 0
	for v := range d.alive {
		for l := range d.alive[v] {
			if d.movable(v, l) {
				c++
			}
		}
	}
	return c
}

// finish fills res from the final domains: the immovable labels stay alive.
func finish(m *model.Model, res *Elimination, d *domains, cert *Certificate) *Elimination {
	n := m.NumVars()
	res.Alive, res.Persistent = make([][]int, n), make([]int, n)
	res.Eliminated = 0
	for v := range n {
		for l, a := range d.alive[v] {
			switch {
			case a && d.fixed[v][l]:
				res.Alive[v] = append(res.Alive[v], l)
			case a:
				res.Eliminated++
			}
		}
		res.Persistent[v] = -1
		if len(res.Alive[v]) == 1 {
			res.Persistent[v] = res.Alive[v][0]
		}
	}
	if res.Eliminated > 0 {
		res.Certificate = cert
	}
	return res
}

// restrict is m with every label outside domains (nil: none) forbidden, the model
// whose relaxation gives the test labeling.
func restrict(m *model.Model, domains [][]int) (*model.Model, error) {
	if domains == nil {
		return m, nil
	}
	return m.Restrict(domains)
}

// VerifyElimination re-checks e from the model alone: it rebuilds the verification
// problem of e.Test with e.Alive immovable among e.Prior, checks the certificate on
// it (bound ≥ −tolerance), and that e.Persistent and the counts follow from e.Alive.
// e.Prior's own proof is not checked here.
func VerifyElimination(m *model.Model, e *Elimination) (CheckResult, error) {
	n := m.NumVars()
	if err := checkEliminationShape(e, n); err != nil {
		return CheckResult{}, fmt.Errorf("persistency: elimination of a model of %d variables: %w", n, err)
	}
	g, err := BuildVerification(m, e.Test, e.Alive, e.Prior)
	if err != nil {
		return CheckResult{}, err
	}
	eliminated := 0
	for v := range n {
		k := m.NumLabels(v)
		if e.Prior != nil {
			k = len(e.Prior[v])
		}
		eliminated += k - len(e.Alive[v])
	}
	if eliminated != e.Eliminated {
		return CheckResult{}, fmt.Errorf("persistency: %d labels eliminated, the result says %d", eliminated, e.Eliminated)
	}
	if eliminated == 0 {
		return CheckResult{Certified: true}, nil
	}
	if e.Certificate == nil {
		return CheckResult{}, errors.New("persistency: labels eliminated without a certificate")
	}
	if !slices.Equal(e.Certificate.Labeling, e.Test) {
		return CheckResult{}, errors.New("persistency: the certificate is for another test labeling")
	}
	v, err := e.Certificate.Check(g)
	if err != nil {
		return v, err
	}
	energy := m.Energy(e.Test)
	// v.Energy, g(y), is 0 up to the rounding of the builder's normal forms.
	v.Certified = !math.IsInf(energy, 1) && v.Bound >= -tolerance(energy)
	if !v.Certified {
		return v, fmt.Errorf("persistency: the verification problem's bound %v is below −%v: the elimination is not proven", v.Bound, tolerance(energy))
	}
	return v, nil
}
