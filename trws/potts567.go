package trws

// For K = 5, 6 and 7 the Potts passes written out as for K = 3 (potts3.go):
// generated in the same shape, the general passes' floats operation for
// operation (tested bit for bit).

func (s *Solver) forwardPotts5() {
	for i := int32(0); i < int32(s.n); i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[5]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4 := u[0], u[1], u[2], u[3], u[4]
		for block := s.block(a0, a1, 5); len(block) >= 5; block = block[5:] {
			m := (*[5]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
		}
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[5]float32)(s.msg[s.ain[a]:]), (*[5]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			hmin := min(min(min(h0, h1), h2), min(h3, h4))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
		}
	}
}

func (s *Solver) backwardPotts5(check bool) float64 {
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[5]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4 := u[0], u[1], u[2], u[3], u[4]
		for block := s.block(a0, a1, 5); len(block) >= 5; block = block[5:] {
			m := (*[5]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
		}
		dmin := min(min(min(d0, d1), d2), min(d3, d4))
		lb += float64(dmin)
		if check { // D's unique argmin, the node's label until testEdges
			margin := ConsistencyTolerance * max(1, abs32(dmin))
			near := b2i(d0-dmin <= margin) + b2i(d1-dmin <= margin) + b2i(d2-dmin <= margin) + b2i(d3-dmin <= margin) + b2i(d4-dmin <= margin)
			l := int32(-1)
			if near == 1 {
				l = b2i(d1-dmin <= margin) + 2*b2i(d2-dmin <= margin) + 3*b2i(d3-dmin <= margin) + 4*b2i(d4-dmin <= margin)
			}
			s.argmin[i], s.consLabel[i] = l, l
		}
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[5]float32)(s.msg[s.ain[a]:]), (*[5]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			hmin := min(min(min(h0, h1), h2), min(h3, h4))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
			lb += float64(hmin - g*dmin)
		}
	}
	return lb + s.offset
}

// primalPotts5 is primalPotts8 for K = 5.
func (s *Solver) primalPotts5() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[5]float32)(s.u32[s.uoff[i]:])
		p0, p1, p2, p3, p4 := u[0], u[1], u[2], u[3], u[4]
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
			if xj != 4 {
				p4 += w
			}
		}
		for block := s.block(a0, a1, 5)[nb*5:]; len(block) >= 5; block = block[5:] {
			m := (*[5]float32)(block)
			p0 += m[0]
			p1 += m[1]
			p2 += m[2]
			p3 += m[3]
			p4 += m[4]
		}
		at, m := int32(0), p0
		if p1 < m {
			at, m = 1, p1
		}
		if p2 < m {
			at, m = 2, p2
		}
		if p3 < m {
			at, m = 3, p3
		}
		if p4 < m {
			at = 4
		}
		s.primal[i] = at
	}
}

func (s *Solver) forwardPotts6() {
	for i := int32(0); i < int32(s.n); i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[6]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4, d5 := u[0], u[1], u[2], u[3], u[4], u[5]
		for block := s.block(a0, a1, 6); len(block) >= 6; block = block[6:] {
			m := (*[6]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
			d5 += m[5]
		}
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[6]float32)(s.msg[s.ain[a]:]), (*[6]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			h5 := g*d5 - back[5]
			hmin := min(min(min(h0, h1), h2), min(min(h3, h4), h5))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
			out[5] = min(h5-hmin, w)
		}
	}
}

func (s *Solver) backwardPotts6(check bool) float64 {
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[6]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4, d5 := u[0], u[1], u[2], u[3], u[4], u[5]
		for block := s.block(a0, a1, 6); len(block) >= 6; block = block[6:] {
			m := (*[6]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
			d5 += m[5]
		}
		dmin := min(min(min(d0, d1), d2), min(min(d3, d4), d5))
		lb += float64(dmin)
		if check { // D's unique argmin, the node's label until testEdges
			margin := ConsistencyTolerance * max(1, abs32(dmin))
			near := b2i(d0-dmin <= margin) + b2i(d1-dmin <= margin) + b2i(d2-dmin <= margin) + b2i(d3-dmin <= margin) + b2i(d4-dmin <= margin) + b2i(d5-dmin <= margin)
			l := int32(-1)
			if near == 1 {
				l = b2i(d1-dmin <= margin) + 2*b2i(d2-dmin <= margin) + 3*b2i(d3-dmin <= margin) + 4*b2i(d4-dmin <= margin) + 5*b2i(d5-dmin <= margin)
			}
			s.argmin[i], s.consLabel[i] = l, l
		}
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[6]float32)(s.msg[s.ain[a]:]), (*[6]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			h5 := g*d5 - back[5]
			hmin := min(min(min(h0, h1), h2), min(min(h3, h4), h5))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
			out[5] = min(h5-hmin, w)
			lb += float64(hmin - g*dmin)
		}
	}
	return lb + s.offset
}

// primalPotts6 is primalPotts8 for K = 6.
func (s *Solver) primalPotts6() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[6]float32)(s.u32[s.uoff[i]:])
		p0, p1, p2, p3, p4, p5 := u[0], u[1], u[2], u[3], u[4], u[5]
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
			if xj != 4 {
				p4 += w
			}
			if xj != 5 {
				p5 += w
			}
		}
		for block := s.block(a0, a1, 6)[nb*6:]; len(block) >= 6; block = block[6:] {
			m := (*[6]float32)(block)
			p0 += m[0]
			p1 += m[1]
			p2 += m[2]
			p3 += m[3]
			p4 += m[4]
			p5 += m[5]
		}
		at, m := int32(0), p0
		if p1 < m {
			at, m = 1, p1
		}
		if p2 < m {
			at, m = 2, p2
		}
		if p3 < m {
			at, m = 3, p3
		}
		if p4 < m {
			at, m = 4, p4
		}
		if p5 < m {
			at = 5
		}
		s.primal[i] = at
	}
}

func (s *Solver) forwardPotts7() {
	for i := int32(0); i < int32(s.n); i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[7]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4, d5, d6 := u[0], u[1], u[2], u[3], u[4], u[5], u[6]
		for block := s.block(a0, a1, 7); len(block) >= 7; block = block[7:] {
			m := (*[7]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
			d5 += m[5]
			d6 += m[6]
		}
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[7]float32)(s.msg[s.ain[a]:]), (*[7]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			h5 := g*d5 - back[5]
			h6 := g*d6 - back[6]
			hmin := min(min(min(h0, h1), min(h2, h3)), min(min(h4, h5), h6))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
			out[5] = min(h5-hmin, w)
			out[6] = min(h6-hmin, w)
		}
	}
}

func (s *Solver) backwardPotts7(check bool) float64 {
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[7]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4, d5, d6 := u[0], u[1], u[2], u[3], u[4], u[5], u[6]
		for block := s.block(a0, a1, 7); len(block) >= 7; block = block[7:] {
			m := (*[7]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
			d5 += m[5]
			d6 += m[6]
		}
		dmin := min(min(min(d0, d1), min(d2, d3)), min(min(d4, d5), d6))
		lb += float64(dmin)
		if check { // D's unique argmin, the node's label until testEdges
			margin := ConsistencyTolerance * max(1, abs32(dmin))
			near := b2i(d0-dmin <= margin) + b2i(d1-dmin <= margin) + b2i(d2-dmin <= margin) + b2i(d3-dmin <= margin) + b2i(d4-dmin <= margin) + b2i(d5-dmin <= margin) + b2i(d6-dmin <= margin)
			l := int32(-1)
			if near == 1 {
				l = b2i(d1-dmin <= margin) + 2*b2i(d2-dmin <= margin) + 3*b2i(d3-dmin <= margin) + 4*b2i(d4-dmin <= margin) + 5*b2i(d5-dmin <= margin) + 6*b2i(d6-dmin <= margin)
			}
			s.argmin[i], s.consLabel[i] = l, l
		}
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[7]float32)(s.msg[s.ain[a]:]), (*[7]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			h5 := g*d5 - back[5]
			h6 := g*d6 - back[6]
			hmin := min(min(min(h0, h1), min(h2, h3)), min(min(h4, h5), h6))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
			out[5] = min(h5-hmin, w)
			out[6] = min(h6-hmin, w)
			lb += float64(hmin - g*dmin)
		}
	}
	return lb + s.offset
}

// primalPotts7 is primalPotts8 for K = 7.
func (s *Solver) primalPotts7() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[7]float32)(s.u32[s.uoff[i]:])
		p0, p1, p2, p3, p4, p5, p6 := u[0], u[1], u[2], u[3], u[4], u[5], u[6]
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
			if xj != 4 {
				p4 += w
			}
			if xj != 5 {
				p5 += w
			}
			if xj != 6 {
				p6 += w
			}
		}
		for block := s.block(a0, a1, 7)[nb*7:]; len(block) >= 7; block = block[7:] {
			m := (*[7]float32)(block)
			p0 += m[0]
			p1 += m[1]
			p2 += m[2]
			p3 += m[3]
			p4 += m[4]
			p5 += m[5]
			p6 += m[6]
		}
		at, m := int32(0), p0
		if p1 < m {
			at, m = 1, p1
		}
		if p2 < m {
			at, m = 2, p2
		}
		if p3 < m {
			at, m = 3, p3
		}
		if p4 < m {
			at, m = 4, p4
		}
		if p5 < m {
			at, m = 5, p5
		}
		if p6 < m {
			at = 6
		}
		s.primal[i] = at
	}
}
