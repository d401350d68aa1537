package trws

// Potts grids — every edge Potts, every node with the same label count — are the
// commonest large models (segmentation). For them the passes below replace the
// general ones: h is written straight into the outgoing message slot, and nothing is
// dispatched per edge.

// setupPottsFast enables the fast passes when they apply.
func (s *Solver) setupPottsFast() {
	s.allPotts = false
	if s.n == 0 {
		return
	}
	for e, k := range s.kind {
		if k != kindPotts || s.labels[s.tail[e]] != s.labels[s.head[e]] {
			return
		}
	}
	for _, k := range s.labels {
		if int(k) != s.mk {
			return
		}
	}
	s.allPotts = true
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
