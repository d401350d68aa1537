package trws

// For K = 2 and 4 (binary and four-colour segmentation) the Potts passes of
// potts.go written out as potts8.go does for K = 8: the sums and the message in
// registers, no call or loop over labels per edge; and the check's rounding, as
// primalPotts8. Generated in the shape of potts8.go and fusedcheck.go; keep them
// in step with forwardPotts/backwardPotts and check, whose floats they repeat
// operation for operation (tested bit for bit).

func (s *Solver) forwardPotts2() {
	for i := int32(0); i < int32(s.n); i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[2]float32)(s.u32[s.uoff[i]:])
		d0, d1 := u[0], u[1]
		for block := s.block(a0, a1, 2); len(block) >= 2; block = block[2:] {
			m := (*[2]float32)(block)
			d0 += m[0]
			d1 += m[1]
		}
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[2]float32)(s.msg[s.ain[a]:]), (*[2]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			hmin := min(h0, h1)
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
		}
	}
}

func (s *Solver) backwardPotts2(check bool) float64 {
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[2]float32)(s.u32[s.uoff[i]:])
		d0, d1 := u[0], u[1]
		for block := s.block(a0, a1, 2); len(block) >= 2; block = block[2:] {
			m := (*[2]float32)(block)
			d0 += m[0]
			d1 += m[1]
		}
		dmin := min(d0, d1)
		lb += float64(dmin)
		if check { // D's unique argmin, the node's label until testEdges
			margin := ConsistencyTolerance * max(1, abs32(dmin))
			near := b2i(d0-dmin <= margin) + b2i(d1-dmin <= margin)
			l := int32(-1)
			if near == 1 {
				l = b2i(d1-dmin <= margin)
			}
			s.argmin[i], s.consLabel[i] = l, l
		}
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[2]float32)(s.msg[s.ain[a]:]), (*[2]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			hmin := min(h0, h1)
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			lb += float64(hmin - g*dmin)
		}
	}
	return lb + s.offset
}

func (s *Solver) forwardPotts4() {
	for i := int32(0); i < int32(s.n); i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[4]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3 := u[0], u[1], u[2], u[3]
		for block := s.block(a0, a1, 4); len(block) >= 4; block = block[4:] {
			m := (*[4]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
		}
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[4]float32)(s.msg[s.ain[a]:]), (*[4]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			hmin := min(min(h0, h1), min(h2, h3))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
		}
	}
}

func (s *Solver) backwardPotts4(check bool) float64 {
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[4]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3 := u[0], u[1], u[2], u[3]
		for block := s.block(a0, a1, 4); len(block) >= 4; block = block[4:] {
			m := (*[4]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
		}
		dmin := min(min(d0, d1), min(d2, d3))
		lb += float64(dmin)
		if check { // D's unique argmin, the node's label until testEdges
			margin := ConsistencyTolerance * max(1, abs32(dmin))
			near := b2i(d0-dmin <= margin) + b2i(d1-dmin <= margin) + b2i(d2-dmin <= margin) + b2i(d3-dmin <= margin)
			l := int32(-1)
			if near == 1 {
				l = b2i(d1-dmin <= margin) + 2*b2i(d2-dmin <= margin) + 3*b2i(d3-dmin <= margin)
			}
			s.argmin[i], s.consLabel[i] = l, l
		}
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[4]float32)(s.msg[s.ain[a]:]), (*[4]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			hmin := min(min(h0, h1), min(h2, h3))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			lb += float64(hmin - g*dmin)
		}
	}
	return lb + s.offset
}

// primalPotts2 is primalPotts8 for K = 2.
func (s *Solver) primalPotts2() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[2]float32)(s.u32[s.uoff[i]:])
		p0, p1 := u[0], u[1]
		a0, a1, nb := s.astart[i], s.astart[i+1], s.nbwd[i]
		for a := a0; a < a0+nb; a++ {
			e := s.aedge[a]
			w, xj := s.w[e], s.primal[s.tail[e]]
			if xj != 0 {
				p0 += w
			}
			if xj != 1 {
				p1 += w
			}
		}
		for block := s.block(a0, a1, 2)[nb*2:]; len(block) >= 2; block = block[2:] {
			m := (*[2]float32)(block)
			p0 += m[0]
			p1 += m[1]
		}
		at, m := int32(0), p0
		if p1 < m {
			at = 1
		}
		s.primal[i] = at
	}
}

// primalPotts4 is primalPotts8 for K = 4.
func (s *Solver) primalPotts4() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[4]float32)(s.u32[s.uoff[i]:])
		p0, p1, p2, p3 := u[0], u[1], u[2], u[3]
		a0, a1, nb := s.astart[i], s.astart[i+1], s.nbwd[i]
		for a := a0; a < a0+nb; a++ {
			e := s.aedge[a]
			w, xj := s.w[e], s.primal[s.tail[e]]
			if xj != 0 {
				p0 += w
			}
			if xj != 1 {
				p1 += w
			}
			if xj != 2 {
				p2 += w
			}
			if xj != 3 {
				p3 += w
			}
		}
		for block := s.block(a0, a1, 4)[nb*4:]; len(block) >= 4; block = block[4:] {
			m := (*[4]float32)(block)
			p0 += m[0]
			p1 += m[1]
			p2 += m[2]
			p3 += m[3]
		}
		at, m := int32(0), p0
		if p1 < m {
			at, m = 1, p1
		}
		if p2 < m {
			at, m = 2, p2
		}
		if p3 < m {
			at = 3
		}
		s.primal[i] = at
	}
}
