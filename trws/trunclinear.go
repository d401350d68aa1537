package trws

// Stereo models — every edge truncated linear with 1 < T ≤ 2 (gen stereo's
// default T is 2), every node with the same label count, a multiple of eight —
// get passes that are one assembly call each (the node sums and, per edge,
// tl2send<>: the reparametrisation, the message, its normalisation, which
// truncLinear2SendAVX2 gives send for such edges of any model), without send's
// dispatch on the kind or a Go call per message, and a check that is one
// assembly sweep (checkTruncLinear2AVX2) instead of check's calls per node and
// edge. The same floats in the same order as the general passes and check
// (TestTruncLinearPassesEqualTheGeneralOnes, TestTruncLinearSendEqualsTheGoLoops).

// truncLinear2Sends says whether truncLinear2SendAVX2 sends a truncated-linear
// message with truncation t from k labels to kr: square, a multiple of eight
// labels, 1 < t ≤ 2, AVX2 (send uses it in every model).
func truncLinear2Sends(k, kr int, t float32) bool {
	return vector && k == kr && k%8 == 0 && t > 1 && t <= 2
}

// forwardTruncLinear2 is forward for tl2 models: one assembly call for the
// pass (sumInto and truncLinear2SendAVX2 per node and edge, without a Go call
// between them: each call's arguments, stored on the stack behind the
// messages' stores, cost a third of the pass).
func (s *Solver) forwardTruncLinear2() {
	if s.rowWidth > 0 {
		s.pipelinedPass(false, s.forwardTruncLinear2Nodes)
		return
	}
	s.forwardTruncLinear2Nodes(0, int32(s.n), s.scratch[:s.mk], s.scratch[s.mk:2*s.mk])
}

// forwardTruncLinear2Nodes is forwardTruncLinear2 on the nodes [lo, hi) with
// scratch d, h: the assembly indexes the nodes' arrays from lo, the edges'
// and the messages' absolutely.
func (s *Solver) forwardTruncLinear2Nodes(lo, hi int32, d, h []float32) float64 {
	k := s.mk
	_ = s.u32[k*int(hi)-1]
	forwardTruncLinear2AVX2(int(hi-lo), k, s.u32[k*int(lo):], s.msg, s.w, s.t, s.gamma[lo:hi], d, h,
		s.astart[lo:hi+1], s.nbwd[lo:hi], s.aedge, s.ain, s.aout)
	return 0
}

// backwardTruncLinear2 is backward for tl2 models, without a check's work.
func (s *Solver) backwardTruncLinear2() float64 {
	if s.rowWidth > 0 {
		return s.pipelinedPass(true, s.backwardTruncLinear2Nodes) + s.offset
	}
	return s.backwardTruncLinear2Nodes(0, int32(s.n), s.scratch[:s.mk], s.scratch[s.mk:2*s.mk]) + s.offset
}

// backwardTruncLinear2Nodes is backwardTruncLinear2 on the nodes [lo, hi),
// without the offset.
func (s *Solver) backwardTruncLinear2Nodes(lo, hi int32, d, h []float32) float64 {
	k := s.mk
	_ = s.u32[k*int(hi)-1]
	return backwardTruncLinear2AVX2(int(hi-lo), k, s.u32[k*int(lo):], s.msg, s.w, s.t, s.gamma[lo:hi], d, h,
		s.astart[lo:hi+1], s.nbwd[lo:hi], s.aedge, s.ain, s.aout, 0)
}

// checkTruncLinear2 is check for tl2 models; on a grid in the passes' strips
// (a node's rounded label needs its earlier neighbours' only, which the
// pipeline orders before it as a pass's messages). A strip may mark −1 the
// consistency label of its left neighbour in the strip before while that
// strip marks it −1 as an upper neighbour: the same value either way.
func (s *Solver) checkTruncLinear2() {
	if s.rowWidth > 0 {
		s.pipelinedPass(false, s.checkTruncLinear2Nodes)
		return
	}
	s.checkTruncLinear2Nodes(0, int32(s.n), s.scratch[:s.mk], s.scratch[s.mk:2*s.mk])
}

// checkTruncLinear2Nodes is checkTruncLinear2 on the nodes [lo, hi) with
// scratch d, p.
func (s *Solver) checkTruncLinear2Nodes(lo, hi int32, d, p []float32) float64 {
	k, n := s.mk, s.n
	_ = s.u32[k*n-1]
	checkTruncLinear2AVX2(int(lo), int(hi), k, s.u32, s.msg, s.w, s.t, s.gamma[:n], d, p,
		s.astart[:n+1], s.nbwd[:n], s.aedge, s.ain, s.tail, s.primal[:n], s.argmin[:n], s.consLabel[:n], ConsistencyTolerance)
	return 0
}
