package persistency

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/enumerate"
	"github.com/partopt/partopt/srmp"
	"github.com/partopt/partopt/trws"
)

// Relaxation is an integrally correct solver for the relaxation of the sub-problems
// (paper §4, Definition 3): whenever it gives every variable a consistency label, that
// labeling is optimal for the relaxation, and Outcome.Certify can prove it. Any such
// solver keeps Algorithm 1 sound (Proposition 2); a weaker one only finds less.
type Relaxation interface {
	// Solve solves the relaxation of p. When from is not nil it is a warm start: p's
	// variable i is variable from.Vars[i] of from.Prev's problem, p's factors inside
	// are those of that problem among these variables, and only unary terms changed;
	// or, with from.Vars nil, p has from.Prev's variables and factor scopes in the
	// same order and only tables changed (label elimination's rounds).
	Solve(ctx context.Context, p *model.Model, from *Warm) (*Outcome, error)
}

// Warm describes a warm start (see Relaxation).
type Warm struct {
	Prev *Outcome
	Vars []int
	// InPlace: from.Prev's TRW-S solver already holds p — the caller rewrote its
	// tables through the solver (trws.Solver.SetTable, SetUnary) — and runs again
	// from its messages; p is not read. Only this package's TRW-S solvers take it
	// (see inPlace).
	InPlace bool
}

// inPlace says whether r runs Warm.InPlace starts on the solver of prev.
func inPlace(r Relaxation, prev *Outcome) bool {
	if _, ok := warmState[*trws.Solver](&Warm{Prev: prev}); !ok {
		return false
	}
	switch r.(type) {
	case TRWS, Auto, cappedAuto:
		return true
	}
	return false
}

// Outcome is what a Relaxation returns.
type Outcome struct {
	// Consistent[i] is the consistency label of variable i, or −1 (# in the paper).
	Consistent []int
	// Labeling is the best labeling found, Energy its energy, LowerBound ≤ min E.
	Labeling           []int
	Energy, LowerBound float64
	Iterations         int
	// Certify returns a certificate that the labeling x of p is optimal for the
	// relaxation of p (Check decides).
	Certify func(x []int) (*Certificate, error)
	state   any
	// saved, when set (state nil: snapshot), are the messages of a TRW-S
	// solver of savedOn that has gone on since; wake makes its solver again.
	saved   []float32
	savedOn *model.Model
}

// TRWS is the Relaxation of pairwise models by TRW-S, warm-started across iterations
// (messages kept, unary terms replaced). Zero Options are trws.DefaultOptions; a zero
// MaxIterations alone is its cap (1500).
type TRWS struct {
	Options trws.Options
}

// Solve implements Relaxation.
func (t TRWS) Solve(ctx context.Context, p *model.Model, from *Warm) (*Outcome, error) {
	var s *trws.Solver
	prev, warm := warmState[*trws.Solver](from)
	if from != nil && from.InPlace {
		if !warm {
			return nil, errors.New("persistency: an in-place warm start without a TRW-S solver")
		}
		s = prev
	} else if warm && from.Vars != nil {
		s = warmSolver(prev, p, from.Vars)
	}
	if s == nil {
		var err error
		if s, err = trws.New(p); err != nil {
			return nil, err
		}
		if warm && from.Vars == nil {
			s.TakeMessages(prev)
		}
	}
	return solveOutcome(ctx, s, withDefaults(t.Options, trws.DefaultOptions()), func(x []int) *Certificate {
		return &Certificate{Labeling: append([]int(nil), x...), Dual: s.Certificate(x)}
	})
}

// withDefaults fills opt from the solver's defaults def: every field when opt has
// neither a cap nor a check period (the zero Options, Progress kept), the cap alone
// when only MaxIterations is 0 (the solver's own cap: 1500 for TRW-S, 10000 for SRMP).
func withDefaults(opt, def trws.Options) trws.Options {
	switch {
	case opt.MaxIterations == 0 && opt.CheckEvery == 0:
		def.Progress, def.Threads = opt.Progress, opt.Threads
		return def
	case opt.MaxIterations == 0:
		opt.MaxIterations = def.MaxIterations
	}
	return opt
}

// solveOutcome runs s with opt and wraps its result; certify makes the certificate of
// a labeling from s's messages.
func solveOutcome(ctx context.Context, s interface {
	Solve(context.Context, trws.Options) (trws.Result, error)
}, opt trws.Options, certify func(x []int) *Certificate) (*Outcome, error) {
	r, err := s.Solve(ctx, opt)
	if err != nil {
		return nil, err
	}
	return &Outcome{
		Consistent: r.Consistent, Labeling: r.Labeling, Energy: r.Energy, LowerBound: r.LowerBound,
		Iterations: r.Iterations, state: s,
		Certify: func(x []int) (*Certificate, error) { return certify(x), nil },
	}, nil
}

// WithThreads is r with its TRW-S passes on up to threads goroutines
// (trws.Options.Threads: the same messages and bounds on any number), for a
// window or a whole model that has cores to itself; relaxations other than
// this package's are returned as they are.
func WithThreads(r Relaxation, threads int) Relaxation {
	switch r := r.(type) {
	case nil:
		return Auto{Options: trws.Options{Threads: threads}}
	case Auto:
		r.Options.Threads = threads
		return r
	case TRWS:
		r.Options.Threads = threads
		return r
	}
	return r
}

// Auto is the default Relaxation: each problem goes to the solver for its order, TRWS
// for pairwise problems and SRMP otherwise, with the same options (MaxIterations 0:
// each solver's own cap).
// A warm start crosses from one call to the next when both use the same solver.
type Auto struct {
	Options trws.Options
}

// Solve implements Relaxation.
func (a Auto) Solve(ctx context.Context, p *model.Model, from *Warm) (*Outcome, error) {
	if (from != nil && from.InPlace) || pairwise(p) {
		return TRWS(a).Solve(ctx, p, from)
	}
	return SRMP(a).Solve(ctx, p, from)
}

// capped returns r with its per-solve iteration cap set to n and the loose
// stall rule (10 iterations, 1e-5 relative), when r is one of this package's
// solvers (others are returned as they are).
func capped(r Relaxation, n int) Relaxation {
	set := func(o, def trws.Options) trws.Options {
		o = withDefaults(o, def)
		o.MaxIterations, o.NoCertify = n, true // the search certifies itself
		o.SettleBelow = 0                      // its rounds end at violators, not agreement
		// A round whose bound creeps ends as the first solve's loose rule
		// ends it (no violator coming: the next round fixes the labels
		// nearest their minimum): a spin glass's round stopped after 15
		// iterations, not 50, with the same outcome.
		o.StallIterations, o.StallTolerance = 10, 1e-5
		return o
	}
	switch r := r.(type) {
	case TRWS:
		return TRWS{set(r.Options, trws.DefaultOptions())}
	case SRMP:
		return SRMP{set(r.Options, srmp.DefaultOptions())}
	case Auto:
		return cappedAuto{TRWS{set(r.Options, trws.DefaultOptions())}, SRMP{set(r.Options, srmp.DefaultOptions())}}
	}
	return r
}

// targeted returns the capped r (see capped) stopping as soon as it finds a
// labeling of energy < target: a round of label elimination ends at its first
// violator, usually after one check (5 iterations) instead of its cap, or
// once its bound cannot rise to target in its iterations (Options.HasReach):
// no certificate is coming, the round's dual then marks the labels. A gap > 0
// also stops TRW-S once its labeling is within gap of its bound (absolute, for
// labelings of energy within ±1): the float64 certificate may close what float32
// messages leave (see search's retry).
func targeted(r Relaxation, target, gap float64) Relaxation {
	set := func(o trws.Options, gap float64) trws.Options {
		o.HasTarget, o.Target = true, target
		o.HasReach, o.Reach = true, target
		if gap > 0 {
			o.GapTolerance = gap
		}
		return o
	}
	switch r := r.(type) {
	case TRWS:
		return TRWS{set(r.Options, gap)}
	case SRMP:
		return SRMP{set(r.Options, 0)}
	case cappedAuto:
		return cappedAuto{TRWS{set(r.t.Options, gap)}, SRMP{set(r.s.Options, 0)}}
	}
	return r
}

// stalledFirst is firstStalled with its other options as they were
// (certificate and settling kept: Algorithm 1's first solve, whose consistent
// nodes start A).
func stalledFirst(r Relaxation, n, iterations int, tolerance float64) (Relaxation, bool) {
	return stallRule(r, n, iterations, tolerance, nil)
}

// firstCapped is r for the relaxed solve that starts a label elimination, unless
// the caller set a cap: TRW-S for at most n iterations, ending once its bound has
// not risen by 1e-6 relative in 20 iterations. That solve gives the test labeling
// and the first dual. Where the relaxation converges (stereo: ~320 iterations) the
// rounds then have little to do, and a round on explicit verification tables costs
// several iterations on f's own terms — tsukuba stopped at 100 iterations ran 40
// rounds for 51k persistent pixels instead of one round for all 53k; where it
// creeps (proteins), the rounds and refine's labelings do better than more
// iterations. search runs it with a looser rule first (firstStalled: 10
// iterations, 1e-5) and goes on with this one only where the gap is nearly closed:
// proteins save 7–12% of their iterations, stereo loses none of its proof.
func firstCapped(r Relaxation, n int) Relaxation {
	r, _ = firstStalled(r, n, 20, 1e-6)
	return r
}

// firstStalled is firstCapped with the stall rule of its arguments: TRW-S ends
// once its bound has not risen by tolerance (relative) in iterations. It says
// whether it set them (not when the caller set a cap).
func firstStalled(r Relaxation, n, iterations int, tolerance float64) (Relaxation, bool) {
	return stallRule(r, n, iterations, tolerance, func(o *trws.Options) {
		o.NoCertify, o.SettleBelow = true, 0 // as capped: the search certifies itself
	})
}

// stallRule is r's TRW-S, where the caller set no cap, for at most n
// iterations, ending once its bound has not risen by tolerance (relative) in
// iterations, its other options resolved and then adjusted (nil: kept); SRMP
// keeps its own. It says whether it set them.
func stallRule(r Relaxation, n, iterations int, tolerance float64, adjust func(*trws.Options)) (Relaxation, bool) {
	set := func(o trws.Options) TRWS {
		o = withDefaults(o, trws.DefaultOptions())
		o.MaxIterations, o.StallIterations, o.StallTolerance = n, iterations, tolerance
		if adjust != nil {
			adjust(&o)
		}
		return TRWS{o}
	}
	switch r := r.(type) {
	case TRWS:
		if r.Options.MaxIterations == 0 {
			return set(r.Options), true
		}
	case Auto:
		if r.Options.MaxIterations == 0 {
			return cappedAuto{set(r.Options), SRMP(r)}, true
		}
	}
	return r, false
}

// stalledSolve is a first relaxed solve of p by timed with loose (a loose
// stall rule): the loose rule ends a creeping bound early (proteins, spin
// glasses); one that stalls near its labeling's energy belongs to a relaxation
// about to prove it (stereo), and stopping it there would leave the rounds or
// pruning iterations, on explicit tables, to finish its work: it goes on in
// place with strict(the iterations done), unless that is nil (strict nil: the
// loose solve alone).
func stalledSolve(ctx context.Context, timed *timedSolver, p *model.Model, loose Relaxation, strict func(done int) Relaxation) (*Outcome, error) {
	timed.r = loose
	out, err := timed.solve(ctx, p, nil)
	if err != nil || strict == nil {
		return out, err
	}
	_, inPlace := out.state.(*trws.Solver)
	gap := out.Energy - out.LowerBound
	if !inPlace || gap <= tolerance(out.Energy) || gap > nearlyTight*math.Max(1, math.Abs(out.Energy)) {
		return out, nil
	}
	r := strict(out.Iterations)
	if r == nil {
		return out, nil
	}
	timed.r = r
	more, err := timed.solve(ctx, nil, &Warm{Prev: out, InPlace: true})
	if err != nil {
		return nil, err
	}
	if more.Energy > out.Energy {
		more.Labeling, more.Energy = out.Labeling, out.Energy
	}
	more.LowerBound = math.Max(more.LowerBound, out.LowerBound)
	return more, nil
}

// cappedAuto is Auto with each solver's options resolved.
type cappedAuto struct {
	t TRWS
	s SRMP
}

func (a cappedAuto) Solve(ctx context.Context, p *model.Model, from *Warm) (*Outcome, error) {
	if (from != nil && from.InPlace) || pairwise(p) {
		return a.t.Solve(ctx, p, from)
	}
	return a.s.Solve(ctx, p, from)
}

// pairwise reports that every factor of p has order ≤ 2.
func pairwise(p *model.Model) bool {
	for f := 0; f < p.NumFactors(); f++ {
		if len(p.FactorVars(f)) > 2 {
			return false
		}
	}
	return true
}

// SRMP is the Relaxation of models of any order by sequential reweighted message
// passing (package srmp), warm-started across iterations: the factors a sub-problem
// shares with the previous one keep their messages. Zero Options are
// srmp.DefaultOptions; a zero MaxIterations alone is its cap (10000).
type SRMP struct {
	Options trws.Options
}

// Solve implements Relaxation.
func (r SRMP) Solve(ctx context.Context, p *model.Model, from *Warm) (*Outcome, error) {
	var s *srmp.Solver
	var err error
	prev, warm := warmState[*srmp.Solver](from)
	if warm && from.Vars != nil {
		s, err = srmp.Warm(p, prev, from.Vars)
	} else if s, err = srmp.New(p); err == nil && warm {
		s.TakeMessages(prev)
	}
	if err != nil {
		return nil, err
	}
	return solveOutcome(ctx, s, withDefaults(r.Options, srmp.DefaultOptions()), func(x []int) *Certificate {
		return &Certificate{Labeling: append([]int(nil), x...), Factor: s.Certificate(x)}
	})
}

// warmState is the solver state of a warm start's previous outcome, when it is a T.
func warmState[T any](from *Warm) (T, bool) {
	var zero T
	if from == nil || from.Prev == nil {
		return zero, false
	}
	s, ok := from.Prev.state.(T)
	return s, ok
}

// snapshotFloats bounds the messages of a solver whose outcome is kept after it
// goes on (storeMarginals, snapshot): up to 4 MiB.
const snapshotFloats = 1 << 20

// small says whether out's TRW-S solver has at most snapshotFloats messages.
func small(out *Outcome) bool {
	s, ok := out.state.(*trws.Solver)
	return ok && s.NumMessages() <= snapshotFloats
}

// snapshot is out, of the model on, kept for later while its TRW-S solver goes
// on: a copy of its messages (one copy, the usual case being that no one wakes
// it), the solver made again from on and them by wake; nil when out has no
// TRW-S solver or its messages pass snapshotFloats.
func snapshot(out *Outcome, on *model.Model) *Outcome {
	if !small(out) {
		return nil
	}
	cp := *out
	cp.state, cp.Certify = nil, nil
	cp.saved, cp.savedOn = out.state.(*trws.Solver).SaveMessages(), on
	return &cp
}

// wake is out with its solver made again where it is a snapshot (nil: it
// could not be), out itself otherwise.
func (out *Outcome) wake() *Outcome {
	if out == nil || out.saved == nil {
		return out
	}
	s, err := trws.New(out.savedOn)
	if err != nil || !s.LoadMessages(out.saved) {
		return nil
	}
	cp := *out
	cp.saved, cp.savedOn, cp.state = nil, nil, s
	cp.Certify = func(x []int) (*Certificate, error) {
		return &Certificate{Labeling: append([]int(nil), x...), Dual: s.Certificate(x)}, nil
	}
	return &cp
}

// warmSolver restricts prev to vars and installs p's unary terms; nil when p's pairwise
// structure is not the restriction's (then the caller starts cold).
func warmSolver(prev *trws.Solver, p *model.Model, vars []int) *trws.Solver {
	s, err := prev.Restrict(vars)
	if err != nil {
		return nil
	}
	pairs := 0
	unary := make([][]float64, p.NumVars())
	for f := 0; f < p.NumFactors(); f++ {
		fv := p.FactorVars(f)
		switch len(fv) {
		case 1:
			u := unary[fv[0]]
			if u == nil {
				u = make([]float64, p.NumLabels(int(fv[0])))
				unary[fv[0]] = u
			}
			for l, x := range p.FactorFunction(f).Table {
				u[l] += x
			}
		case 2:
			pairs++
		default:
			return nil
		}
	}
	if pairs != s.NumEdges() {
		return nil
	}
	for v, u := range unary {
		if u == nil {
			u = make([]float64, p.NumLabels(v))
		}
		if s.SetUnary(v, u) != nil {
			return nil
		}
	}
	return s
}

// Exhaustive is the exact "relaxation" of tiny models: enumeration of all labelings.
// It labels every variable with an optimal labeling, so Algorithm 1 then decides by
// Theorem 1's criterion itself (y ∈ argmin Ê), which is sound for any order; it serves
// higher-order and test models. Limit bounds the labelings enumerated (default and
// at most MaxCheckEnumeration: a certificate no checker enumerates proves nothing).
type Exhaustive struct {
	Limit int
}

// Solve implements Relaxation.
func (x Exhaustive) Solve(_ context.Context, p *model.Model, _ *Warm) (*Outcome, error) {
	limit := x.limit()
	lab, e, err := enumerate.Minimize(p, limit)
	if err != nil {
		return nil, fmt.Errorf("persistency: exhaustive relaxation: %w", err)
	}
	out := &Outcome{Labeling: lab, Energy: e, LowerBound: e, Consistent: append([]int(nil), lab...)}
	if math.IsInf(e, 1) {
		for i := range out.Consistent {
			out.Consistent[i] = -1 // nothing to prove when every labeling is forbidden
		}
	}
	out.Certify = func(y []int) (*Certificate, error) {
		return &Certificate{Labeling: append([]int(nil), y...), Exhaustive: true, Limit: limit}, nil
	}
	return out, nil
}

func (x Exhaustive) limit() int {
	if x.Limit > 0 {
		return min(x.Limit, MaxCheckEnumeration)
	}
	return MaxCheckEnumeration
}

// MaxCheckEnumeration bounds the labelings that Certificate.Check enumerates for
// an exhaustive certificate, whatever limit the certificate names: a
// certificate is input (a file, a worker's message), and the checker, not the
// prover, decides what a check may cost: 2^22 labelings of 22 binary
// variables, every pair joined by a factor, take 4 s on a loaded core.
const MaxCheckEnumeration = 1 << 22

// Certificate proves that Labeling is optimal for the relaxation of a sub-problem: by
// an LP dual of a pairwise problem (Dual, checked by trws.Certificate.Check, or
// its Draft, polished and checked by trws.Draft.Check), of a
// problem of any order (Factor, checked by srmp.Certificate.Check), or by enumeration
// (Exhaustive: Labeling is a minimiser of the sub-problem itself, Theorem 1's
// criterion).
type Certificate struct {
	Labeling []int
	Dual     *trws.Certificate
	// Draft, in place of Dual, is the dual before its polish (half its
	// bytes), which Check polishes on the sub-problem (trws.Draft.Check).
	Draft      *trws.Draft
	Factor     *srmp.Certificate
	Exhaustive bool
	Limit      int
}

// draftOf is the certificate of a labeling on p as d, the draft of a TRW-S
// solver's messages (Solver.Draft, Local.Draft), half the bytes of a dual (a
// window's proof is stored and sent: 10⁸ stereo pixels take tens of gigabytes
// of them), with its verdict, where it certifies the labeling: the draft
// polished on p as every later check of it polishes it (Draft.Check), once, in
// place of a dual polished from the solver and the draft polished again to
// compare. Nil where the draft does not certify it (a solver built otherwise
// than trws.New(p) builds it, a warm start's node order, lays its messages out
// otherwise): the caller then polishes the solver's own, unless the draft's
// verdict (returned either way; zero where the check failed) shows it cannot
// certify either (hopeless). check is the solver's CheckDraft: a draft it has
// certified on p already (trws.Solver.Proved: the solve's gap closed without
// agreement) is not polished again, another is polished on the solve's cores.
func draftOf(d *trws.Draft, p *model.Model, check func(*trws.Draft, *model.Model) (trws.Verdict, error)) (*Certificate, CheckResult) {
	v, err := check(d, p)
	if err != nil {
		return nil, CheckResult{}
	}
	r := fromVerdict(v)
	if !r.Certified {
		return nil, r
	}
	return &Certificate{Labeling: d.Labeling, Draft: d}, r
}

// hopeless says that a draft's verdict v is far from certifying: the solver's
// own dual, polished from the same float32 messages (only its float64 unary
// terms may round otherwise than p's), cannot close a gap a thousand times
// the certificate's tolerance.
func (v CheckResult) hopeless() bool {
	return v.Gap > 1e3*trws.GapTolerance*math.Max(1, math.Abs(v.Energy))
}

// CheckResult is the outcome of Certificate.Check.
type CheckResult struct {
	Energy, Bound, Gap float64
	Certified          bool
}

// fromVerdict is a TRW-S certificate's verdict as a CheckResult.
func fromVerdict(v trws.Verdict) CheckResult {
	return CheckResult{Energy: v.Energy, Bound: v.Bound, Gap: v.Gap, Certified: v.Certified}
}

// Check verifies the certificate against the sub-problem p from p alone.
func (c *Certificate) Check(p *model.Model) (CheckResult, error) {
	if c == nil {
		return CheckResult{}, errors.New("persistency: no certificate")
	}
	switch {
	case c.Dual != nil:
		if !slices.Equal(c.Dual.Labeling, c.Labeling) {
			return CheckResult{}, errors.New("persistency: the dual certificate is for another labeling")
		}
		v, err := c.Dual.Check(p)
		return fromVerdict(v), err
	case c.Draft != nil:
		if !slices.Equal(c.Draft.Labeling, c.Labeling) {
			return CheckResult{}, errors.New("persistency: the draft certificate is for another labeling")
		}
		v, err := c.Draft.Check(p)
		return fromVerdict(v), err
	case c.Factor != nil:
		if !slices.Equal(c.Factor.Labeling, c.Labeling) {
			return CheckResult{}, errors.New("persistency: the dual certificate is for another labeling")
		}
		v, err := c.Factor.Check(p)
		return CheckResult{Energy: v.Energy, Bound: v.Bound, Gap: v.Gap, Certified: v.Certified}, err
	case c.Exhaustive:
		if err := p.CheckLabeling(c.Labeling); err != nil {
			return CheckResult{}, err
		}
		_, min, err := enumerate.Minimize(p, MaxCheckEnumeration)
		if err != nil {
			return CheckResult{}, fmt.Errorf("persistency: exhaustive certificate: a check enumerates at most %d labelings: %w", MaxCheckEnumeration, err)
		}
		e := p.Energy(c.Labeling)
		gap := e - min
		if math.IsInf(e, 1) && math.IsInf(min, 1) {
			gap = 0
		}
		return CheckResult{Energy: e, Bound: min, Gap: gap, Certified: !math.IsInf(e, 1) && gap <= 1e-9*math.Max(1, math.Abs(e))}, nil
	}
	return CheckResult{}, errors.New("persistency: empty certificate")
}
