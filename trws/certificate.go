package trws

import (
	"fmt"
	"math"

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
		Edges: make([][2]int, 0, ne), LaterIsSecond: make([]bool, 0, ne), Share: make([]float64, 0, ne)}
	for e := range s.tail {
		first, second := int(s.tail[e]), int(s.head[e])
		if s.swap[e] {
			first, second = second, first
		}
		c.Edges = append(c.Edges, [2]int{first, second})
		c.LaterIsSecond = append(c.LaterIsSecond, !s.swap[e])
		c.Share = append(c.Share, share(s.head[e], s))
	}
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
	off := make([]int, n+1)
	for v := 0; v < n; v++ {
		off[v+1] = off[v] + m.NumLabels(v)
	}
	D := make([]float64, off[n])
	edge, pos := 0, 0
	for f := 0; f < m.NumFactors(); f++ {
		vars := m.FactorVars(f)
		switch len(vars) {
		case 1:
			for l, t := range m.FactorFunction(f).Table {
				D[off[vars[0]]+l] += t
			}
			continue
		case 2:
		default:
			return Verdict{}, ErrNotPairwise
		}
		a, b := int(vars[0]), int(vars[1])
		if edge >= len(c.Edges) || c.Edges[edge] != [2]int{a, b} {
			return Verdict{}, fmt.Errorf("trws: certificate: edge %d does not match factor %d on %v", edge, f, vars)
		}
		ka, kb := m.NumLabels(a), m.NumLabels(b)
		if pos+ka+kb > len(c.Messages) {
			return Verdict{}, fmt.Errorf("trws: certificate: too few messages")
		}
		for l, v := range c.Messages[pos : pos+ka] {
			D[off[a]+l] += v
		}
		for l, v := range c.Messages[pos+ka : pos+ka+kb] {
			D[off[b]+l] += v
		}
		for _, v := range c.Messages[pos : pos+ka+kb] {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return Verdict{}, fmt.Errorf("trws: certificate: edge %d has a non-finite message", edge)
			}
		}
		edge, pos = edge+1, pos+ka+kb
	}
	if edge != len(c.Edges) || pos != len(c.Messages) {
		return Verdict{}, fmt.Errorf("trws: certificate has %d edges and %d message entries, the model %d pairwise factors and %d", len(c.Edges), len(c.Messages), edge, pos)
	}
	weight := make([]float64, n)
	for v := range weight {
		weight[v] = 1
	}
	bound := m.Offset()
	edge, pos = 0, 0
	var buf, sideA, sideB []float64 // MinSum's scratch, its two sides
	for f := 0; f < m.NumFactors(); f++ {
		vars := m.FactorVars(f)
		if len(vars) != 2 {
			continue
		}
		a, b := int(vars[0]), int(vars[1])
		ka, kb := m.NumLabels(a), m.NumLabels(b)
		toA, toB := c.Messages[pos:pos+ka], c.Messages[pos+ka:pos+ka+kb]
		sh := c.Share[edge]
		if !(sh >= 0 && sh <= 1) {
			return Verdict{}, fmt.Errorf("trws: certificate: edge %d has share %v outside [0,1]", edge, sh)
		}
		later := b
		if !c.LaterIsSecond[edge] {
			later = a
		}
		weight[later] -= sh
		fn := m.FactorFunction(f)
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
		var best float64
		if fn.Kind == model.Explicit {
			// MinSum's values (a model holds no NaN): min_x by rows, then over y.
			out := grow(&buf, kb)
			minPlus64FromTail(ra, out, fn.Table, math.Inf(1))
			best = math.Inf(1)
			for y, v := range out {
				if s := v + rb[y]; s < best {
					best = s
				}
			}
		} else {
			best = fn.MinSum(ra, rb, &buf)
		}
		bound += best
		edge, pos = edge+1, pos+ka+kb
	}
	for v := 0; v < n; v++ {
		// The shares are ≤ 1/degree each, so they sum to ≤ 1 exactly; 1 − Σ in float64
		// may still land a few ulps below 0.
		if weight[v] < -1e-12 {
			return Verdict{}, fmt.Errorf("trws: certificate: variable %d gives away shares summing to %v > 1", v, 1-weight[v])
		}
		if w := weight[v]; w > 0 {
			lo := math.Inf(1)
			for _, d := range D[off[v]:off[v+1]] {
				lo = math.Min(lo, d)
			}
			bound += w * lo
		}
	}
	e := m.Energy(c.Labeling)
	verdict := Verdict{Energy: e, Bound: bound, Gap: e - bound}
	verdict.Certified = !math.IsInf(e, 1) && verdict.Gap <= GapTolerance*math.Max(1, math.Abs(e))
	return verdict, nil
}

// grow returns (*buf)[:n], growing *buf as needed.
func grow(buf *[]float64, n int) []float64 {
	if cap(*buf) < n {
		*buf = make([]float64, n)
	}
	return (*buf)[:n]
}
