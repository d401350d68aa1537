package trws

import (
	"context"
	"math"
	"runtime"
	"slices"
)

// ConsistencyTolerance is τ of the consistency definition (see the package doc).
const ConsistencyTolerance = 1e-5

// Options are the stopping rules and reporting of Solve. Use DefaultOptions and change
// what you need.
type Options struct {
	// MaxIterations caps the iterations of this call (one forward + one backward pass).
	MaxIterations int
	// GapTolerance stops when Energy − LowerBound ≤ GapTolerance·max(1, |Energy|), or
	// when every variable is consistent. 0 disables every early stop (gap, agreement,
	// stall): the call runs exactly MaxIterations iterations.
	GapTolerance float64
	// StallIterations stops when, for this many iterations, neither the number of
	// consistent variables grew nor the bound rose by more than StallTolerance·
	// max(1, |bound|). 0 disables. The paper stopped on agreement alone, which ends runs
	// whose bound still rises and lets pruning erode nearly tight models.
	StallIterations int
	StallTolerance  float64
	// CheckEvery is how often (in iterations) the primal labeling, its energy and the
	// consistency labels are computed; the last iteration always checks.
	CheckEvery int
	// Progress, if set, is called after every check.
	Progress func(Progress)
	// HasTarget stops as soon as a check finds a labeling of energy < Target
	// (label elimination: a violator of a verification problem ends its round).
	HasTarget bool
	Target    float64
	// HasReach stops (StopStall) once the bound, at the rate it rose over the
	// last two checks, would not get to Reach in twice the iterations left: a
	// round of label elimination, whose dual must reach −tolerance to prove
	// its map, ends when it cannot instead of at its cap (pdb1jmx: 469 → 389
	// iterations, the same labels eliminated).
	HasReach bool
	Reach    float64
	// NoCertify skips the certificate of the best labeling when the gap closes
	// without agreement (a float64 pass): for callers that certify themselves.
	NoCertify bool
	// SettleBelow: when a check finds all but at most this fraction of the
	// variables consistent, the messages around the others are settled (a
	// Local's Settle) instead of iterating the whole problem. On success every
	// variable is consistent for the settled messages — the agreement the next
	// whole checks would wait for — and the solve stops with it; else it goes
	// on whole. Far from its last disagreements a problem has converged: a
	// segmentation window agrees but for 0.03% of its pixels after 10 of its 50
	// iterations. 0 disables, as GapTolerance 0 does; engines other than TRW-S
	// ignore it.
	SettleBelow float64
	// Threads is how many goroutines the passes may use on a large
	// 4-connected grid numbered row by row, stereo or of two labels (column
	// strips side by side, pipeline.go). The messages and the bound are the
	// same on any number; 0 or 1: one; never more than GOMAXPROCS. On a
	// loaded machine a strip waiting for a descheduled neighbour stalls:
	// measured up to 2× slower than one goroutine there.
	Threads int
}

// DefaultOptions: 1500 iterations (the paper's cap), gap 1e-9 relative, stall after
// 100 iterations without 1e-7 relative bound growth or new consistent variables,
// checks every 5 iterations (Kolmogorov's code computes its labeling every 5 too;
// a check costs a third to a half of an iteration on Potts grids, most of it
// inside the passes: docs/BENCHMARKS.md), settling once 0.1% of the variables or
// fewer disagree.
func DefaultOptions() Options {
	return Options{MaxIterations: 1500, GapTolerance: 1e-9, StallIterations: 100, StallTolerance: 1e-7, CheckEvery: 5,
		SettleBelow: 1e-3}
}

// Progress is reported after every check.
type Progress struct {
	Iteration int
	// Bound is this iteration's lower bound, LowerBound the best of this call.
	Bound      float64
	LowerBound float64
	Energy     float64 // best so far in this call
	Agreeing   int     // variables with a consistency label
	Variables  int
}

// Stop says why Solve returned.
type Stop int

const (
	StopIterations Stop = iota // the iteration cap
	StopGap                    // duality gap within GapTolerance
	StopAgreement              // every variable consistent
	StopStall                  // neither bound nor agreement improved for StallIterations
	StopCanceled               // the context ended
	StopTarget                 // a labeling below Options.Target
)

func (s Stop) String() string {
	return [...]string{"iterations", "gap", "agreement", "stall", "canceled", "target"}[s]
}

// Result is the outcome of Solve.
type Result struct {
	// LowerBound is the largest bound of this call's iterations, ≤ min E.
	LowerBound float64
	// Labeling is the best labeling found in this call and Energy its energy.
	Labeling []int
	Energy   float64
	// Consistent[v] is v's consistency label after the last iteration, or −1.
	Consistent []int
	Agreeing   int
	// Agreement reports that every variable is consistent: Consistent is then an
	// optimal labeling, and Certificate proves it.
	Agreement  bool
	Iterations int
	Stop       Stop
	Seconds    float64
}

// Gap is Energy − LowerBound.
func (r *Result) Gap() float64 { return r.Energy - r.LowerBound }

// Solve runs TRW-S from the current messages until a stopping rule fires. It returns
// the context's error, with a valid Result for the work done, when ctx ends.
func (s *Solver) Solve(ctx context.Context, opt Options) (Result, error) {
	s.threads = min(max(opt.Threads, 1), runtime.GOMAXPROCS(0))
	if n := s.strips(); n > 1 { // a grid in strips (strips is 0 elsewhere)
		s.crew = newCrew(n - 1)
		defer func() { s.crew.stop(); s.crew = nil }()
	}
	return Drive(ctx, engine{s}, opt)
}

// engine is the Solver as Drive runs it.
type engine struct{ s *Solver }

func (e engine) NumVars() int { return e.s.n }

func (e engine) Iterate(check bool) float64 {
	if check {
		e.s.forwardRound()
	} else {
		e.s.forward()
	}
	lb := e.s.backward(check)
	e.s.iters++
	return lb
}

func (e engine) Check() (consistent, primal []int32) {
	if e.s.fused {
		e.s.fused = false
		if p := e.s.unrolled(); p != nil && p.edges != nil {
			p.edges(e.s)
		}
		if !e.s.rounded {
			e.s.roundPotts()
		}
	} else if e.s.tl2 {
		e.s.checkTruncLinear2()
	} else {
		e.s.check()
	}
	return e.s.consLabel, e.s.primal
}

func (e engine) Energy(x []int32) float64 { return e.s.energy(x) }

func (e engine) NotBetter(x, ref []int32) bool { return e.s.notBetter(x, ref) }

// settle settles the messages around the nodes without a consistency label
// (cons, the last check's labels) and, on success, sets every node's label.
// It gives up after the node updates of half an iteration (a whole iteration's
// passes are faster per node than the region's).
func (e engine) settle(ctx context.Context, cons []int32) bool {
	l := e.s.newLocal(slices.Clone(cons))
	l.Budget = max(e.s.n, 1024)
	var seeds []int
	for i, c := range cons {
		if c < 0 {
			seeds = append(seeds, i)
		}
	}
	if !l.Settle(ctx, seeds) || slices.Contains(l.cons, -1) {
		return false
	}
	copy(cons, l.cons)
	return true
}

// CertifyBest polishes the messages and checks the certificate of x. A
// certified draft of the solver's own model is kept for Proved.
func (e engine) CertifyBest(x []int) (float64, bool) {
	m, err := e.s.Model()
	if err != nil {
		return 0, false
	}
	d := e.s.Draft(x)
	v, err := e.s.certificate(d.Labeling, d.Messages).Check(m)
	ok := err == nil && v.Certified
	if ok && m == e.s.src {
		e.s.proved = &provedDraft{draft: d, model: m, verdict: v}
	}
	return v.Bound, ok
}

// msgInto returns the message of edge e into node i (an endpoint of e).
func (s *Solver) msgInto(e int32, i int32) []float32 {
	if s.head[e] == i {
		return s.msg[s.mhead[e] : s.mhead[e]+s.labels[i]]
	}
	return s.msg[s.mtail[e] : s.mtail[e]+s.labels[i]]
}

// pairValue is θ_e(a, b) in float32 with a the tail's label and b the head's.
func (s *Solver) pairValue(e int32, a, b int32) float32 {
	switch s.kind[e] {
	case kindTable:
		return s.tables[s.tab[e]+a*s.labels[s.head[e]]+b]
	case kindPattern:
		return s.w[e] * s.tables[s.tab[e]+a*s.labels[s.head[e]]+b]
	case kindDifference:
		return s.differenceValue(e, a, b)
	}
	return baseValue(s.kind[e], s.w[e], s.t[e], a, b)
}

// pairRow sets out[b] = pairValue(e, a, b) for b < len(out) (a the tail's
// label), a row at a time: the check's per-edge loops.
func (s *Solver) pairRow(e int32, a int32, out []float32) {
	w, t := s.w[e], s.t[e]
	switch s.kind[e] {
	case kindTable:
		base := s.tab[e] + a*s.labels[s.head[e]]
		copy(out, s.tables[base:base+int32(len(out))])
	case kindPattern:
		base := s.tab[e] + a*s.labels[s.head[e]]
		scale(out, s.tables[base:base+int32(len(out))], w)
	case kindPotts:
		for b := range out {
			out[b] = w
		}
		if int(a) < len(out) {
			out[a] = 0
		}
	case kindTruncLinear:
		for b := range out {
			d := a - int32(b)
			if d < 0 {
				d = -d
			}
			out[b] = w * min(float32(d), t)
		}
	default:
		for b := range out {
			out[b] = s.pairValue(e, a, int32(b))
		}
	}
}

// check recomputes every D_i from the messages (in increasing order), rounds the
// primal labeling (each node minimises its unary, the pairwise terms to earlier
// neighbours at their rounded labels, and the messages from later neighbours, as
// Kolmogorov's ComputeSolution), and sets the consistency labels of the package doc.
// It returns the number of consistent variables.
func (s *Solver) check() int {
	mk := s.mk
	D, P, H := s.scratch[:mk], s.scratch[mk:2*mk], s.scratch[2*mk:3*mk]
	row := make([]float32, mk)
	for i := int32(0); i < int32(s.n); i++ {
		k := s.labels[i]
		d, p, h, r := D[:k], P[:k], H[:k], row[:k]
		s.sumInto(i, d)
		s.primalNode(i, p, r)
		adj := s.aedge[s.astart[i]:s.astart[i+1]]
		nb := s.nbwd[i]
		l := uniqueArgmin(d)
		s.argmin[i], s.consLabel[i] = l, l
		if l < 0 {
			continue
		}
		g := s.gamma[i]
		for _, e := range adj[:nb] {
			j := s.tail[e]
			if xj := s.argmin[j]; xj >= 0 && !s.tight(e, d, l, xj, g, h, r) {
				s.consLabel[i], s.consLabel[j] = -1, -1
			}
		}
	}
	agree := 0
	for _, l := range s.consLabel {
		if l >= 0 {
			agree++
		}
	}
	return agree
}

// tight is the consistency test of edge e from its head i (the later node):
// with D_i = d (unique minimiser l), γ_i = g and the tail's label xj, and
// h = g·(d − d(l)) − m_{j→i}, h(l) + θ(xj, l) is within the tolerance of
// min_y h(y) + θ(xj, y). h and r are scratch of len(d). A Potts or
// truncated-linear edge whose ends share their label passes without the
// loop (the package doc's item 2).
func (s *Solver) tight(e int32, d []float32, l, xj int32, g float32, h, r []float32) bool {
	if xj == l && s.sameLabelTight(e) {
		return true
	}
	s.pairRow(e, xj, r)
	return tightRow(d, s.msgInto(e, s.head[e]), r, h, l, g)
}

// tightRow is tight's test of the row r of θ at the tail's label: h(l) + r(l)
// within the tolerance of min_y h(y) + r(y), h = g·(d − d(l)) − fwd (scratch).
func tightRow(d, fwd, r, h []float32, l int32, g float32) bool {
	if len(d) == 16 && vector { // stereo's sixteen disparities, in two registers
		if best, ok := tightMin16AVX2(d, fwd, r, d[l], g); ok {
			val := r[l] - fwd[l] // h(l) + r(l): h(l) = g·0 − fwd(l)
			return val-best <= ConsistencyTolerance*max(1, abs32(val))
		}
	}
	return tightLoop(d, fwd, r, h, l, g)
}

// tightLoop is tightRow by one loop over the labels.
func tightLoop(d, fwd, r, h []float32, l int32, g float32) bool {
	dmin, best := d[l], float32(inf32)
	for y, v := range d {
		h[y] = float32(g*(v-dmin)) - fwd[y] // rounded before the subtraction, as the assembly
		best = min(best, h[y]+r[y])
	}
	val := h[l] + r[l]
	return val-best <= ConsistencyTolerance*max(1, abs32(val))
}

// sameLabelTight says whether edge e passes the consistency test whenever its
// ends share their label: Potts and truncated linear (the package doc's item 2).
func (s *Solver) sameLabelTight(e int32) bool {
	return s.kind[e] == kindPotts || s.kind[e] == kindTruncLinear
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

func argmin(v []float32) int32 {
	best := int32(0)
	for x := 1; x < len(v); x++ {
		if v[x] < v[best] {
			best = int32(x)
		}
	}
	return best
}

// uniqueArgmin returns the minimiser of d when every other entry exceeds it by more
// than ConsistencyTolerance·max(1, |min|), else −1.
func uniqueArgmin(d []float32) int32 {
	if len(d) == 16 && vector { // stereo's sixteen disparities, in two registers
		if l, best, next, ok := minTwo16AVX2(d); ok {
			if next-best <= ConsistencyTolerance*max(1, abs32(best)) {
				return -1
			}
			return l
		}
	}
	return uniqueArgminLoop(d)
}

// uniqueArgminLoop is uniqueArgmin by one loop over d.
func uniqueArgminLoop(d []float32) int32 {
	// One pass: the first minimiser l (as argmin) and the least of the other
	// entries; v − d[l] ≤ margin for some v exactly when it holds for the
	// least of them (the rounded difference is monotone in v; NaN never
	// passes either test).
	l, best, next := int32(0), d[0], float32(math.Inf(1))
	for x := 1; x < len(d); x++ {
		if v := d[x]; v < best {
			next = min(next, best)
			l, best = int32(x), v
		} else if v < next {
			next = v
		}
	}
	if next-best <= ConsistencyTolerance*max(1, abs32(best)) {
		return -1
	}
	return l
}

// notBetter reports that energy(x) ≥ energy(ref), energy's float64 sums, from
// the variables where x and ref differ alone, on Potts models: it sums the
// exact terms that differ (their unaries and the edges at them) and reports a
// difference beyond what rounding can move both sums and its own (Higham's
// bound for recursive summation: γ_N·Σ|terms|, energyMargin). It gives up
// beyond max(n/16, 256) differing variables, early in a solve, where the
// labeling changes much and would rarely be skipped anyway.
func (s *Solver) notBetter(x, ref []int32) bool {
	if !s.allPotts {
		return false
	}
	x, ref = x[:s.n], ref[:s.n]
	d, changed, limit := 0.0, 0, max(s.n/16, 256)
	for i, a := range x {
		b := ref[i]
		if a == b {
			continue
		}
		if changed++; changed > limit {
			return false
		}
		u := s.u64[s.uoff[i]:s.uoff[i+1]]
		d += u[a] - u[b]
		for k := s.astart[i]; k < s.astart[i+1]; k++ {
			e := s.aedge[k]
			j := int(s.tail[e] + s.head[e] - int32(i))
			if j < i && x[j] != ref[j] {
				continue // summed from j
			}
			if a != x[j] {
				d += s.w64[e]
			}
			if b != ref[j] {
				d -= s.w64[e]
			}
		}
	}
	return d > s.energyMargin() // false for an infinite margin (an infinite term: no bound)
}

// energyMargin bounds |computed − exact| of energy's sum for any labeling
// twice over, plus that of notBetter's difference: each is a recursive
// float64 sum of at most 3N terms (N: the offset, n unaries, the edges) whose
// absolute values sum to at most 2S (S: |offset| + Σ max|unary| + Σ|w|), off
// by at most γ_{3N}·2S, γ_m = m·u/(1 − m·u), u = 2⁻⁵³.
func (s *Solver) energyMargin() float64 {
	if s.emarginOK {
		return s.emargin
	}
	sum := math.Abs(s.offset)
	for i := range s.n {
		m := 0.0
		for _, v := range s.u64[s.uoff[i]:s.uoff[i+1]] {
			m = math.Max(m, math.Abs(v))
		}
		sum += m
	}
	for _, w := range s.w64 {
		sum += math.Abs(w)
	}
	mu := 3 * float64(1+s.n+len(s.w64)) * 0x1p-53
	gamma := mu / (1 - mu)
	s.emargin, s.emarginOK = 2*3*gamma*2*sum, true // three sums off by γ·2S each, twice over
	return s.emargin
}

// energy is the exact (float64) energy of a labeling of the solver's nodes,
// its unaries read from ucur where it holds them.
func (s *Solver) energy(x []int32) float64 {
	if s.ulab == nil {
		s.ucur, s.ulab = make([]float64, s.n), make([]int32, s.n)
		for i := range s.ulab {
			s.ulab[i] = -1
		}
	}
	e := s.offset
	x, ulab, ucur := x[:s.n], s.ulab[:s.n], s.ucur[:s.n]
	for i, l := range x {
		if ulab[i] != l {
			ulab[i], ucur[i] = l, s.u64[int(s.uoff[i])+int(l)]
		}
		e += ucur[i]
	}
	if s.allPotts { // fn.Pairwise of a Potts term, without the call
		for ed, w := range s.w64 {
			if x[s.tail[ed]] != x[s.head[ed]] {
				e += w
			}
		}
		return e
	}
	for ed, fn := range s.fn {
		a, b := int(x[s.tail[ed]]), int(x[s.head[ed]])
		if s.swap[ed] {
			a, b = b, a
		}
		e += fn.Pairwise(a, b)
	}
	return e
}
