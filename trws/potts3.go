package trws

// For K = 3 the Potts passes written out as potts8.go does for K = 8 (the
// general passes' loops and calls cost a three-label node more than the
// unrolled K = 4 passes do a four-label one), with the check's rounding as
// primalPotts8 (fusedcheck.go). Generated in their shape; the floats are
// forwardPotts/backwardPotts' and check's, operation for operation (tested
// bit for bit).

func (s *Solver) forwardPotts3() {
	for i := int32(0); i < int32(s.n); i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[3]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2 := u[0], u[1], u[2]
		for block := s.block(a0, a1, 3); len(block) >= 3; block = block[3:] {
			m := (*[3]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
		}
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[3]float32)(s.msg[s.ain[a]:]), (*[3]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			hmin := min(min(h0, h1), h2)
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
		}
	}
}

func (s *Solver) backwardPotts3(check bool) float64 {
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[3]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2 := u[0], u[1], u[2]
		for block := s.block(a0, a1, 3); len(block) >= 3; block = block[3:] {
			m := (*[3]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
		}
		dmin := min(min(d0, d1), d2)
		lb += float64(dmin)
		if check { // D's unique argmin, the node's label until testEdges
			margin := ConsistencyTolerance * max(1, abs32(dmin))
			near := b2i(d0-dmin <= margin) + b2i(d1-dmin <= margin) + b2i(d2-dmin <= margin)
			l := int32(-1)
			if near == 1 {
				l = b2i(d1-dmin <= margin) + 2*b2i(d2-dmin <= margin)
			}
			s.argmin[i], s.consLabel[i] = l, l
		}
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[3]float32)(s.msg[s.ain[a]:]), (*[3]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			hmin := min(min(h0, h1), h2)
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			lb += float64(hmin - g*dmin)
		}
	}
	return lb + s.offset
}

// primalPotts3 is primalPotts8 for K = 3.
func (s *Solver) primalPotts3() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[3]float32)(s.u32[s.uoff[i]:])
		p0, p1, p2 := u[0], u[1], u[2]
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
		}
		for block := s.block(a0, a1, 3)[nb*3:]; len(block) >= 3; block = block[3:] {
			m := (*[3]float32)(block)
			p0 += m[0]
			p1 += m[1]
			p2 += m[2]
		}
		at, m := int32(0), p0
		if p1 < m {
			at, m = 1, p1
		}
		if p2 < m {
			at = 2
		}
		s.primal[i] = at
	}
}
