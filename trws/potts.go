package trws

import "slices"

// Potts grids — every edge Potts, every node with the same label count — are the
// commonest large models (segmentation). For them the passes below replace the
// general ones: h is written straight into the outgoing message slot, and nothing is
// dispatched per edge.

// setupUniformPasses enables the passes for models of one kind and one label
// count where they apply: the Potts passes below (allPotts) and the stereo
// passes (tl2, trunclinear.go), and two labels, Potts or tables (table2,
// table2.go).
func (s *Solver) setupUniformPasses() {
	s.generalPasses()
	if s.n == 0 || slices.ContainsFunc(s.labels, func(k int32) bool { return int(k) != s.mk }) {
		return
	}
	// Which passes every edge allows, by ranges of edges on every core.
	type allows struct{ potts, tl2, tables bool }
	ranges := make([]allows, parts(len(s.kind)))
	spreadParts(len(s.kind), len(ranges), func(p, lo, hi int) {
		a := allows{true, true, s.mk == 2}
		for e, k := range s.kind[lo:hi] {
			a.potts = a.potts && k == kindPotts
			a.tl2 = a.tl2 && k == kindTruncLinear && truncLinear2Sends(s.mk, s.mk, s.t[lo+e])
			a.tables = a.tables && (k == kindTable || k == kindPotts)
		}
		ranges[p] = a
	})
	potts, tl2, tables := true, true, s.mk == 2
	for _, a := range ranges {
		potts, tl2, tables = potts && a.potts, tl2 && a.tl2, tables && a.tables
	}
	s.allPotts, s.tl2, s.table2 = potts, tl2, tables && !potts
	s.setupPipeline()
	if potts {
		s.w64 = make([]float64, len(s.fn))
		spread(len(s.fn), func(lo, hi int) {
			for e, fn := range s.fn[lo:hi] {
				s.w64[lo+e] = fn.W
			}
		})
	}
}

// generalPasses turns the uniform passes off: an edge's term changed kind.
func (s *Solver) generalPasses() {
	s.allPotts, s.tl2, s.table2 = false, false, false
}

// unrolled returns the Potts passes written out for the solver's label count,
// when the Potts passes apply and there are such (2 to 8 labels), else nil:
// in assembly where the CPU has it (2, 4 and 8 labels with AVX2, 3, 5, 6
// and 7 with AVX-512).
func (s *Solver) unrolled() *pottsPasses {
	if !s.allPotts || s.mk >= len(unrolledPotts) || unrolledPotts[s.mk].forward == nil {
		return nil
	}
	if vector && s.mk < len(assemblyPotts) && assemblyPotts[s.mk].forward != nil {
		return &assemblyPotts[s.mk]
	}
	return &unrolledPotts[s.mk]
}

// pottsPasses are the Potts passes and check pieces written out for one label
// count (potts8.go, potts24.go, potts3.go, potts567.go; potts_amd64.s): the
// passes (the backward pass of a check iteration records the unique argmins),
// the test of the edges across a change of label that follows (nil where the
// backward pass tests them itself), the check's rounding, and the forward
// pass that rounds too (nil: none, the rounding runs before the pass). The
// assembly also gives the passes without a check on the nodes [lo, hi), which
// a grid runs in strips side by side (pipeline.go); the bound without the
// offset.
type pottsPasses struct {
	forward       func(*Solver)
	backward      func(*Solver, bool) float64
	edges         func(*Solver)
	primal        func(*Solver)
	forwardRound  func(*Solver)
	forwardNodes  func(s *Solver, lo, hi int32, d, h []float32) float64
	backwardNodes func(s *Solver, lo, hi int32, d, h []float32) float64
}

// stripedPotts returns the Potts passes when they run in strips (a grid of
// enough nodes, in assembly), else nil.
func (s *Solver) stripedPotts() *pottsPasses {
	if p := s.unrolled(); p != nil && s.rowWidth > 0 && p.forwardNodes != nil {
		return p
	}
	return nil
}

var unrolledPotts = [...]pottsPasses{
	2: {(*Solver).forwardPotts2, (*Solver).backwardPotts2, (*Solver).testEdges, (*Solver).primalPotts2, nil, nil, nil},
	3: {(*Solver).forwardPotts3, (*Solver).backwardPotts3, (*Solver).testEdges, (*Solver).primalPotts3, nil, nil, nil},
	4: {(*Solver).forwardPotts4, (*Solver).backwardPotts4, (*Solver).testEdges, (*Solver).primalPotts4, nil, nil, nil},
	5: {(*Solver).forwardPotts5, (*Solver).backwardPotts5, (*Solver).testEdges, (*Solver).primalPotts5, nil, nil, nil},
	6: {(*Solver).forwardPotts6, (*Solver).backwardPotts6, (*Solver).testEdges, (*Solver).primalPotts6, nil, nil, nil},
	7: {(*Solver).forwardPotts7, (*Solver).backwardPotts7, (*Solver).testEdges, (*Solver).primalPotts7, nil, nil, nil},
	8: {(*Solver).forwardPotts8, (*Solver).backwardPotts8, (*Solver).testEdges, (*Solver).primalPotts8, nil, nil, nil},
}

// pottsSend writes into out the Potts message min(h − min h, w) with h = g·d − back,
// and returns min h. h is built in out itself (the kernel works element-wise).
func pottsSend(d, back, out []float32, g, w float32) float32 {
	out = out[:len(d)]
	return pottsSquare(out, out, reparam(out, d, back, g), w)
}

func (s *Solver) forwardPotts() {
	d := s.scratch[:s.mk]
	for i := int32(0); i < int32(s.n); i++ {
		s.sumInto(i, d)
		g := s.gamma[i]
		for a := s.astart[i] + s.nbwd[i]; a < s.astart[i+1]; a++ {
			pottsSend(d, s.msg[s.ain[a]:], s.msg[s.aout[a]:], g, s.w[s.aedge[a]])
		}
	}
}

func (s *Solver) backwardPotts(check bool) float64 {
	d := s.scratch[:s.mk]
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		dmin := s.sumInto(i, d)
		if check {
			s.consistNode(i, d)
		}
		g := s.gamma[i]
		lb += float64(dmin)
		for a := s.astart[i]; a < s.astart[i]+s.nbwd[i]; a++ {
			lb += float64(pottsSend(d, s.msg[s.ain[a]:], s.msg[s.aout[a]:], g, s.w[s.aedge[a]]) - g*dmin)
		}
	}
	return lb + s.offset
}
