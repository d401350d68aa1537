package trws

// Models of two labels a variable whose edges are Potts terms and explicit
// tables — spin glasses, whose repulsive couplings are tables (a Potts weight
// is ≥ 0) — take the general passes' path through sumInto, send, reparam, the
// min-plus kernels and normalize for four numbers an edge; written out here,
// the sums and the message stay in registers and nothing is called per edge.
// The floats are the general passes', operation for operation (tested bit for
// bit against them).

// forwardTable2 is forward for table2 models.
func (s *Solver) forwardTable2() {
	if s.rowWidth > 0 {
		s.pipelinedPass(false, s.forwardTable2Nodes)
		return
	}
	s.forwardTable2Nodes(0, int32(s.n), nil, nil)
}

// forwardTable2Nodes is forwardTable2 on the nodes [lo, hi) (no scratch).
func (s *Solver) forwardTable2Nodes(lo, hi int32, _, _ []float32) float64 {
	for i := lo; i < hi; i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		d0, d1 := s.sum2(i, a0, a1)
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[2]float32)(s.msg[s.ain[a]:]), (*[2]float32)(s.msg[s.aout[a]:])
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			if e := s.aedge[a]; s.kind[e] == kindPotts { // pottsSquare
				w, hmin := s.w[e], min(h0, h1)
				out[0], out[1] = min(h0-hmin, w), min(h1-hmin, w)
			} else {
				t := (*[4]float32)(s.tables[s.tab[e]:]) // row = this node's label
				o0 := min(h0+t[0], h1+t[2])
				o1 := min(h0+t[1], h1+t[3])
				m := min(o0, o1)
				out[0], out[1] = o0-m, o1-m
			}
		}
	}
	return 0
}

// backwardTable2 is backward for table2 models.
func (s *Solver) backwardTable2() float64 {
	if s.rowWidth > 0 {
		return s.pipelinedPass(true, s.backwardTable2Nodes) + s.offset
	}
	return s.backwardTable2Nodes(0, int32(s.n), nil, nil) + s.offset
}

// backwardTable2Nodes is backwardTable2 on the nodes [lo, hi), without the
// offset.
func (s *Solver) backwardTable2Nodes(lo, hi int32, _, _ []float32) float64 {
	lb := 0.0
	for i := hi - 1; i >= lo; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		d0, d1 := s.sum2(i, a0, a1)
		dmin := min(d0, d1)
		lb += float64(dmin)
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[2]float32)(s.msg[s.ain[a]:]), (*[2]float32)(s.msg[s.aout[a]:])
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			var m float32
			if e := s.aedge[a]; s.kind[e] == kindPotts { // pottsSquare
				w := s.w[e]
				m = min(h0, h1)
				out[0], out[1] = min(h0-m, w), min(h1-m, w)
			} else {
				t := (*[4]float32)(s.tables[s.tab[e]:]) // row = the neighbour's label
				o0 := min(h0+t[0], h1+t[1])
				o1 := min(h0+t[2], h1+t[3])
				m = min(o0, o1)
				out[0], out[1] = o0-m, o1-m
			}
			lb += float64(m) - float64(g)*float64(dmin)
		}
	}
	return lb
}

// sum2 is sumInto for a node of two labels: its unary plus every message
// into it, in the order of its adjacency.
func (s *Solver) sum2(i, a0, a1 int32) (d0, d1 float32) {
	u := (*[2]float32)(s.u32[s.uoff[i]:])
	d0, d1 = u[0], u[1]
	for block := s.block(a0, a1, 2); len(block) >= 2; block = block[2:] {
		m := (*[2]float32)(block)
		d0 += m[0]
		d1 += m[1]
	}
	return d0, d1
}
