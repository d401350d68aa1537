package trws

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/partopt/partopt/model"
)

// GapTolerance is the relative duality gap under which Check certifies a labeling.
// Certificates are polished in float64 (see Solver.Certificate), so the gap of a truly
// optimal labeling is float64 rounding, far below it.
const GapTolerance = 1e-9

// Certificate is a dual solution of the LP relaxation together with a labeling, in a
// form that Check verifies from the model alone. Edge e of the certificate is the e-th
// factor of order 2 of the model, in factor order, on the variables Edges[e] (the
// factor's argument order). Its messages into the first and the second variable are
// Messages[o : o+K₁] and Messages[o+K₁ : o+K₁+K₂], o being the sum of K₁+K₂ over the
// earlier edges. Share[e] of the reparametrised unary of the later variable
// (LaterIsSecond[e] says which) goes to the edge's subproblem.
type Certificate struct {
	Labeling      []int
	Edges         [][2]int
	Messages      []float64
	LaterIsSecond []bool
	Share         []float64
}

// Verdict is the outcome of Check.
type Verdict struct {
	Energy, Bound, Gap float64
	// Certified: Gap ≤ GapTolerance·max(1, |Energy|) and Energy finite: Labeling is
	// optimal (for the model and for its LP relaxation) up to Gap.
	Certified bool
}

// Certificate returns a certificate for labeling x of the solver's current problem
// (s.Model()), from the current messages (valid right after Solve). The messages are
// polished first: one forward and one backward pass in float64 with exact energies,
// which makes the decomposition exact to float64 rounding instead of float32.
func (s *Solver) Certificate(x []int) *Certificate { return s.certificate(x, s.messages()) }

// certificate is the certificate of x from the messages msg (laid out as
// Certificate.Messages), polished.
func (s *Solver) certificate(x []int, msg []float32) *Certificate {
	ne := len(s.tail)
	c := &Certificate{Labeling: append([]int(nil), x...), Messages: s.polish(msg),
		Edges: make([][2]int, ne), LaterIsSecond: make([]bool, ne), Share: make([]float64, ne)}
	spread(ne, func(lo, hi int) {
		for e := lo; e < hi; e++ {
			first, second := int(s.tail[e]), int(s.head[e])
			if s.swap[e] {
				first, second = second, first
			}
			c.Edges[e], c.LaterIsSecond[e], c.Share[e] = [2]int{first, second}, !s.swap[e], share(s.head[e], s)
		}
	})
	return c
}

// Bound returns a lower bound on the minimum energy of the solver's current problem,
// valid up to float64 rounding (~1e-15 relative), unlike Result.LowerBound (float32
// sums, which may exceed the minimum by ~1e-7 relative): the bound that Check
// computes for the polished certificate. It costs one float64 iteration and O(Σ_e K²)
// (O(Σ_e K) where every edge is Potts or truncated linear).
func (s *Solver) Bound() (float64, error) {
	m, err := s.Model()
	if err != nil {
		return 0, err
	}
	x := make([]int, s.n)
	for v, l := range s.primal {
		x[v] = int(l)
	}
	v, err := s.Certificate(x).Check(m)
	return v.Bound, err
}

// share is the weight γ of a node in float64, rounded down so that the shares of a
// node sum to at most 1 exactly; any share in [0, γ] gives a valid bound.
func share(v int32, s *Solver) float64 {
	nb := s.nbwd[v]
	nf := s.astart[v+1] - s.astart[v] - nb
	if d := max(nb, nf); d > 0 {
		return math.Nextafter(1/float64(d), 0)
	}
	return 0
}

// Check recomputes, in float64 and from m alone, the energy of the labeling and the
// bound of the certificate's decomposition of m,
//
//	offset + Σ_e min_{a,b} [θ_e(a,b) − m_{e→1}(a) − m_{e→2}(b) + Share_e·D_later] + Σ_v w_v·min D_v,
//
// where D_v is the sum of v's unary factors and of the messages into v, and w_v = 1 −
// Σ of the shares taken from v (which must be ≥ 0). The bound is valid for every
// message value, so a labeling whose energy meets it is optimal. Check costs
// O(Σ_e K₁·K₂).
func (c *Certificate) Check(m *model.Model) (Verdict, error) {
	n := m.NumVars()
	if err := m.CheckLabeling(c.Labeling); err != nil {
		return Verdict{}, fmt.Errorf("trws: certificate: %w", err)
	}
	if len(c.Share) != len(c.Edges) || len(c.LaterIsSecond) != len(c.Edges) {
		return Verdict{}, fmt.Errorf("trws: certificate: inconsistent lengths")
	}
	// The labeling's energy needs only the model: on a goroutine of its own
	// while the rest is checked.
	energy := make(chan float64, 1)
	go func() { energy <- m.Energy(c.Labeling) }()
	factor, at, edgeOf, err := c.edges(m)
	if err != nil {
		return Verdict{}, err
	}
	weight, err := c.weights(m, edgeOf)
	if err != nil {
		return Verdict{}, err
	}

	// D_v, each entry summed over v's factors in factor order (a unary's table,
	// an edge's message into v), then the edges' minima and the nodes' —
	// independent, so on every core, and summed in order: the same bound bit for
	// bit on any number of cores.
	off := make([]int, n+1)
	for v := 0; v < n; v++ {
		off[v+1] = off[v] + m.NumLabels(v)
	}
	D := make([]float64, off[n])
	spreadHeavy(n, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			d := D[off[v]:off[v+1]]
			for _, f := range m.VarFactors(v) {
				vars := m.FactorVars(int(f))
				if len(vars) == 1 {
					for l, t := range m.FactorFunction(int(f)).Table {
						d[l] += t
					}
					continue
				}
				o := at[edgeOf[f]]
				if int(vars[1]) == v {
					o += m.NumLabels(int(vars[0]))
				}
				for l, msg := range c.Messages[o : o+len(d)] {
					d[l] += msg
				}
			}
		}
	})
	best := make([]float64, len(factor))
	spreadHeavy(len(factor), func(lo, hi int) {
		var buf, sideA, sideB []float64 // MinSum's scratch, its two sides
		for e := lo; e < hi; e++ {
			f := int(factor[e])
			vars := m.FactorVars(f)
			a, b := int(vars[0]), int(vars[1])
			ka, kb := m.NumLabels(a), m.NumLabels(b)
			toA, toB := c.Messages[at[e]:at[e]+ka], c.Messages[at[e]+ka:at[e+1]]
			sh, later := c.Share[e], c.later(e)
			// min over (x, y) of θ(x, y) − toA(x) − toB(y), the later end's share of
			// its D added to its side.
			ra, rb := grow(&sideA, ka), grow(&sideB, kb)
			for x := range ra {
				ra[x] = -toA[x]
				if sh > 0 && later == a {
					ra[x] += sh * D[off[a]+x]
				}
			}
			for y := range rb {
				rb[y] = -toB[y]
				if sh > 0 && later == b {
					rb[y] += sh * D[off[b]+y]
				}
			}
			fn := m.FactorFunction(f)
			if fn.Kind == model.Explicit {
				// MinSum's values (a model holds no NaN): min_x by rows, then over y.
				out := grow(&buf, kb)
				minPlus64FromTail(ra, out, fn.Table, math.Inf(1))
				best[e] = math.Inf(1)
				for y, v := range out {
					if s := v + rb[y]; s < best[e] {
						best[e] = s
					}
				}
			} else {
				best[e] = fn.MinSum(ra, rb, &buf)
			}
		}
	})
	bound := m.Offset()
	for _, b := range best {
		bound += b
	}
	for v, w := range weight {
		if w > 0 {
			lo := math.Inf(1)
			for _, d := range D[off[v]:off[v+1]] {
				lo = math.Min(lo, d)
			}
			bound += w * lo
		}
	}
	e := <-energy
	verdict := Verdict{Energy: e, Bound: bound, Gap: e - bound}
	verdict.Certified = !math.IsInf(e, 1) && verdict.Gap <= GapTolerance*math.Max(1, math.Abs(e))
	return verdict, nil
}

// later is the variable of edge e whose reparametrised unary the edge shares.
func (c *Certificate) later(e int) int {
	if c.LaterIsSecond[e] {
		return c.Edges[e][1]
	}
	return c.Edges[e][0]
}

// edges finds the certificate's edges among m's factors, in factor order:
// each one's factor, where its messages start (at, with the end last), and
// each pairwise factor's edge. The factors are counted and then matched in
// ranges on every core; the error is the one a loop over the factors in order
// would stop at.
func (c *Certificate) edges(m *model.Model) (factor []int32, at []int, edgeOf []int32, err error) {
	nf := m.NumFactors()
	k := parts(nf)
	posBefore := make([]int, k+1) // the ranges' message entries, summed as starts sums the edges
	edgesBefore := starts(nf, k, func(p, lo, hi int) (edges int) {
		for f := lo; f < hi; f++ {
			if vars := m.FactorVars(f); len(vars) == 2 {
				edges++
				posBefore[p+1] += m.NumLabels(int(vars[0])) + m.NumLabels(int(vars[1]))
			}
		}
		return edges
	})
	for p := range k {
		posBefore[p+1] += posBefore[p]
	}
	ne, pos := edgesBefore[k], posBefore[k]
	factor, at, edgeOf = make([]int32, ne), make([]int, ne+1), make([]int32, nf)
	errs := make([]error, k)
	spreadParts(nf, k, func(p, lo, hi int) {
		edge, pos := edgesBefore[p], posBefore[p]
		for f := lo; f < hi; f++ {
			vars := m.FactorVars(f)
			switch len(vars) {
			case 1:
				continue
			case 2:
			default:
				errs[p] = ErrNotPairwise
				return
			}
			a, b := int(vars[0]), int(vars[1])
			if edge >= len(c.Edges) || c.Edges[edge] != [2]int{a, b} {
				errs[p] = fmt.Errorf("trws: certificate: edge %d does not match factor %d on %v", edge, f, vars)
				return
			}
			ka, kb := m.NumLabels(a), m.NumLabels(b)
			if pos+ka+kb > len(c.Messages) {
				errs[p] = fmt.Errorf("trws: certificate: too few messages")
				return
			}
			for _, v := range c.Messages[pos : pos+ka+kb] {
				if math.IsInf(v, 0) || math.IsNaN(v) {
					errs[p] = fmt.Errorf("trws: certificate: edge %d has a non-finite message", edge)
					return
				}
			}
			factor[edge], at[edge], edgeOf[f] = int32(f), pos, int32(edge)
			edge, pos = edge+1, pos+ka+kb
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if ne != len(c.Edges) || pos != len(c.Messages) {
		return nil, nil, nil, fmt.Errorf("trws: certificate has %d edges and %d message entries, the model %d pairwise factors and %d", len(c.Edges), len(c.Messages), ne, pos)
	}
	at[ne] = pos
	return factor, at, edgeOf, nil
}

// weights checks the shares and returns each variable's weight, 1 − Σ of the
// shares taken from it, on every core. A variable's shares are subtracted in
// the order of its factors, which is the edges' order: the same floats as one
// loop over the edges.
func (c *Certificate) weights(m *model.Model, edgeOf []int32) ([]float64, error) {
	if err := spreadErr(len(c.Share), func(lo, hi int) error {
		for e := lo; e < hi; e++ {
			if sh := c.Share[e]; !(sh >= 0 && sh <= 1) {
				return fmt.Errorf("trws: certificate: edge %d has share %v outside [0,1]", e, sh)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	weight := make([]float64, m.NumVars())
	return weight, spreadErr(len(weight), func(lo, hi int) error {
		for v := lo; v < hi; v++ {
			w := 1.0
			for _, f := range m.VarFactors(v) {
				if len(m.FactorVars(int(f))) == 2 {
					if e := int(edgeOf[f]); c.later(e) == v {
						w -= c.Share[e]
					}
				}
			}
			// The shares are ≤ 1/degree each, so they sum to ≤ 1 exactly; 1 − Σ
			// in float64 may still land a few ulps below 0.
			if weight[v] = w; w < -1e-12 {
				return fmt.Errorf("trws: certificate: variable %d gives away shares summing to %v > 1", v, 1-w)
			}
		}
		return nil
	})
}

// spreadMin is the least a range of spread holds, of items that cost a few
// nanoseconds each (a copy, a count, an offset), and heavyMin of items that
// cost ~100 ns (a node's D, an edge's minimum in a check): a second core woken
// from idle starts ~30 µs late here, which 32,768 light items cost on one (a
// 96×96 stereo solver's New took 5.8 ms on two cores with ranges of 4,096,
// 3.7 on one). Variables, so that tests cut small models too.
var spreadMin, heavyMin = 1 << 15, 1 << 12

// parts is how many ranges spread cuts [0, n) into: one a core, of at least
// spreadMin each.
func parts(n int) int { return partsOf(n, spreadMin) }

// partsOf is how many ranges of at least least items [0, n) is cut into, one a core.
func partsOf(n, least int) int { return max(1, min(runtime.GOMAXPROCS(0), n/least)) }

// spread runs fn over [0, n) cut into ranges, one a core, and returns when all
// are done.
func spread(n int, fn func(lo, hi int)) {
	spreadParts(n, parts(n), func(_, lo, hi int) { fn(lo, hi) })
}

// spreadHeavy is spread over items that cost ~100 ns each (heavyMin).
func spreadHeavy(n int, fn func(lo, hi int)) {
	spreadParts(n, partsOf(n, heavyMin), func(_, lo, hi int) { fn(lo, hi) })
}

// spreadParts runs fn(p, lo, hi) over [0, n) cut into k ranges, the p-th
// [p·n/k, (p+1)·n/k), each on a goroutine but the first, and returns when all
// are done.
func spreadParts(n, k int, fn func(p, lo, hi int)) {
	if k <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for p := 1; p < k; p++ {
		wg.Go(func() { fn(p, p*n/k, (p+1)*n/k) })
	}
	fn(0, 0, n/k)
	wg.Wait()
}

// starts counts each of the k ranges of [0, n) that spreadParts cuts on its
// own core, count(p, lo, hi) for the p-th, and returns where each range
// starts with the counts laid end to end, the total last.
func starts[T int | int32](n, k int, count func(p, lo, hi int) T) []T {
	before := make([]T, k+1)
	spreadParts(n, k, func(p, lo, hi int) { before[p+1] = count(p, lo, hi) })
	for p := range k {
		before[p+1] += before[p]
	}
	return before
}

// spreadErr is spread over an fn that stops at the first error of its range,
// and returns the error of the earliest range that has one: the error a loop
// over [0, n) in order would stop at.
func spreadErr(n int, fn func(lo, hi int) error) error {
	k := parts(n)
	errs := make([]error, k)
	spreadParts(n, k, func(p, lo, hi int) { errs[p] = fn(lo, hi) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// grow returns (*buf)[:n], growing *buf as needed.
func grow(buf *[]float64, n int) []float64 {
	if cap(*buf) < n {
		*buf = make([]float64, n)
	}
	return (*buf)[:n]
}
