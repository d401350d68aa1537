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
// and returns min h.
func pottsSend(d, back, out []float32, g, w float32) float32 {
	k := len(d)
	back, out = back[:k], out[:k]
	m0, m1, m2, m3 := float32(inf32), float32(inf32), float32(inf32), float32(inf32)
	x := 0
	for ; x+4 <= k; x += 4 {
		dd, bb, oo := d[x:x+4:x+4], back[x:x+4:x+4], out[x:x+4:x+4]
		h0, h1, h2, h3 := g*dd[0]-bb[0], g*dd[1]-bb[1], g*dd[2]-bb[2], g*dd[3]-bb[3]
		oo[0], oo[1], oo[2], oo[3] = h0, h1, h2, h3
		m0, m1, m2, m3 = min(m0, h0), min(m1, h1), min(m2, h2), min(m3, h3)
	}
	for ; x < k; x++ {
		h := g*d[x] - back[x]
		out[x] = h
		m0 = min(m0, h)
	}
	hmin := min(min(m0, m1), min(m2, m3))
	x = 0
	for ; x+4 <= k; x += 4 {
		oo := out[x : x+4 : x+4]
		oo[0], oo[1], oo[2], oo[3] = min(oo[0]-hmin, w), min(oo[1]-hmin, w), min(oo[2]-hmin, w), min(oo[3]-hmin, w)
	}
	for ; x < k; x++ {
		out[x] = min(out[x]-hmin, w)
	}
	return hmin
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

func (s *Solver) backwardPotts() float64 {
	d := s.scratch[:s.mk]
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		dmin := s.sumInto(i, d)
		g := s.gamma[i]
		lb += float64(dmin)
		for a := s.astart[i]; a < s.astart[i]+s.nbwd[i]; a++ {
			lb += float64(pottsSend(d, s.msg[s.ain[a]:], s.msg[s.aout[a]:], g, s.w[s.aedge[a]]) - g*dmin)
		}
	}
	return lb + s.offset
}
