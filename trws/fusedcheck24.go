package trws

// The check inside the Potts passes for K = 2 and 4, written out as for K = 8
// (fusedcheck.go): consistNode, uniqueArgmin and primalLabels with the values
// in registers, the same floats operation for operation (tested).

// testEdges2 is consistNode's test of every edge, after the backward pass,
// for K = 2.
func (s *Solver) testEdges2() {
	for e := range int32(len(s.tail)) {
		i, j := s.tail[e], s.head[e]
		l, lj := s.argmin[i], s.argmin[j]
		if l < 0 || lj < 0 || l == lj { // equal argmins: tight (see testEdges8)
			continue
		}
		var dj [2]float32
		s.sumInto(j, dj[:])                      // j's D, as the pass summed it
		fwd := (*[2]float32)(s.msg[s.mhead[e]:]) // into j along e
		dmin, g, w := dj[lj], s.gamma[j], s.w[e]
		h0 := g*(dj[0]-dmin) - fwd[0] + w
		h1 := g*(dj[1]-dmin) - fwd[1] + w
		hl := g*(dj[l&1]-dmin) - fwd[l&1]
		best := min(min(h0, h1), hl)
		val := g*(dj[lj&1]-dmin) - fwd[lj&1] + w
		if val-best > ConsistencyTolerance*max(1, abs32(val)) {
			s.consLabel[i], s.consLabel[j] = -1, -1
		}
	}
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

// testEdges4 is consistNode's test of every edge, after the backward pass,
// for K = 4.
func (s *Solver) testEdges4() {
	for e := range int32(len(s.tail)) {
		i, j := s.tail[e], s.head[e]
		l, lj := s.argmin[i], s.argmin[j]
		if l < 0 || lj < 0 || l == lj { // equal argmins: tight (see testEdges8)
			continue
		}
		var dj [4]float32
		s.sumInto(j, dj[:])                      // j's D, as the pass summed it
		fwd := (*[4]float32)(s.msg[s.mhead[e]:]) // into j along e
		dmin, g, w := dj[lj], s.gamma[j], s.w[e]
		h0 := g*(dj[0]-dmin) - fwd[0] + w
		h1 := g*(dj[1]-dmin) - fwd[1] + w
		h2 := g*(dj[2]-dmin) - fwd[2] + w
		h3 := g*(dj[3]-dmin) - fwd[3] + w
		hl := g*(dj[l&3]-dmin) - fwd[l&3]
		best := min(min(min(h0, h1), min(h2, h3)), hl)
		val := g*(dj[lj&3]-dmin) - fwd[lj&3] + w
		if val-best > ConsistencyTolerance*max(1, abs32(val)) {
			s.consLabel[i], s.consLabel[j] = -1, -1
		}
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
